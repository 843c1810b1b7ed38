/**
 * The Vercel AI SDK's MCP client (`@ai-sdk/mcp`, `createMCPClient` with its HTTP transport) against the built
 * bundle, used as an AI SDK app does: `tools()`, then each tool's `execute`. It speaks 2026-07-28 by default
 * (`server/discover`, no initialize, no session), so every call without a `sandbox` argument gets a new sandbox:
 * the round trip carries the handle the first result returns, as a model reading the result would. `execute`
 * gives the raw CallToolResult, a tool error included (returned with isError, not thrown).
 */
import { type CallToolResult, createMCPClient, type MCPClient } from '@ai-sdk/mcp';

import {
  expectModernFromTheStart,
  INTEROP_TOKEN,
  loggedToolCalls,
  MISSING_FILE,
  SANDBOX_HANDLE,
  SERVER_TOOLS,
  startInteropServer,
} from '../support/interop';
import { stopAllServers, type StartedServer } from '../support/server';

/** A tools/call answer with content (CallToolResult also admits the 2024-era `toolResult` form). */
type Result = Extract<CallToolResult, { content: unknown }>;

let server: StartedServer;
let client: MCPClient;
let tools: Awaited<ReturnType<MCPClient['tools']>>;
beforeAll(async () => {
  server = await startInteropServer();
  client = await createMCPClient({
    transport: { type: 'http', url: server.url, headers: { Authorization: `Bearer ${INTEROP_TOKEN}` } },
  });
  tools = await client.tools();
});
afterAll(async () => {
  await client?.close();
  await stopAllServers();
});

/** Runs a tool the way the AI SDK runs it for a model: its `execute`, with a tool call id. */
async function execute(name: string, input: Record<string, unknown>): Promise<Result> {
  const tool = tools[name];
  if (tool === undefined) throw new Error(`no tool ${name}`);
  const output = await tool.execute(input, { toolCallId: `call-${name}`, messages: [], context: {} });
  if (Symbol.asyncIterator in output || !hasContent(output))
    throw new Error(`${name} gave no CallToolResult with content`);
  return output;
}

function hasContent(output: CallToolResult): output is Result {
  return Array.isArray(output.content);
}

/** The sandbox handle of a 2026-07-28 result. */
function handleOf(result: Result): string {
  const { sandbox } = (result.structuredContent ?? {}) as { sandbox?: unknown };
  if (typeof sandbox !== 'string') throw new Error(`no sandbox handle in ${JSON.stringify(result)}`);
  return sandbox;
}

/** The text the AI SDK hands the model for a result (the tool's `toModelOutput`). */
async function modelText(name: string, output: Result): Promise<string> {
  const converted = await tools[name]?.toModelOutput?.({ toolCallId: `call-${name}`, input: {}, output });
  if (converted?.type !== 'content') throw new Error(`model output of ${name} is ${converted?.type}`);
  return converted.value.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

it(
  'negotiates 2026-07-28 through server/discover and lists the ' + 'fifteen tools, each taking a sandbox handle',
  async () => {
    expect(client.initializeResult.protocolVersion).toBe('2026-07-28');
    expect(Object.keys(tools)).toEqual(SERVER_TOOLS);
    const { tools: definitions } = await client.listTools();
    for (const definition of definitions) expect(definition.inputSchema.properties).toHaveProperty('sandbox');
  },
);

it('runs run_command and returns the CallToolResult with structuredContent, in the 2026-07-28 era', async () => {
  const result = await execute('run_command', { command: 'echo hi' });
  expect(result.isError).toBe(false);
  expect(result.structuredContent).toMatchObject({
    stdout: 'hi\n',
    exit_code: 0,
    sandbox: expect.stringMatching(SANDBOX_HANDLE),
  });
  await loggedToolCalls(server, 1);
  expectModernFromTheStart(server);
});

it('writes and reads back a file in one sandbox by carrying the handle the model is shown', async () => {
  const written = await execute('write_file', { path: 'notes/hello.txt', content: 'hello from the AI SDK\n' });
  expect(written.structuredContent).toMatchObject({ bytes_written: 22, created: true });
  const sandbox = handleOf(written);
  expect(sandbox).toMatch(SANDBOX_HANDLE);
  // What reaches the model is the text, and its first line names the handle to pass on.
  expect((await modelText('write_file', written)).split('\n')[0]).toBe(`sandbox: ${sandbox}`);

  const read = await execute('read_file', { path: 'notes/hello.txt', sandbox });
  expect(read.isError).toBe(false);
  expect(read.structuredContent).toMatchObject({ content: 'hello from the AI SDK\n', sandbox });
});

it('returns a tool error as a result with isError and the server’s message, not as a throw', async () => {
  const sandbox = handleOf(await execute('sandbox_status', {}));
  const result = await execute('read_file', { path: 'missing.txt', sandbox });
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const text = await modelText('read_file', result);
  expect(text.split('\n')).toEqual([`sandbox: ${sandbox}`, expect.stringMatching(MISSING_FILE)]);
});
