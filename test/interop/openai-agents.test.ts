/**
 * The OpenAI Agents SDK's `MCPServerStreamableHttp` (`@openai/agents-core`; no model, no API key) against the built
 * bundle: `connect()`, `listTools()`, `callTool()`. It runs the v2 SDK client with version negotiation on `auto`,
 * which speaks 2026-07-28 to this server by default (`server/discover`, no session), so the round trip carries the
 * `sandbox` handle the first result returns. `callTool()` gives the result's content list with `structuredContent`
 * and `isError` set on it; a tool error comes back that way too, not thrown.
 */
import { type CallToolResultContent, MCPServerStreamableHttp } from '@openai/agents-core';

import { NEW_SANDBOX_NOTE } from '../../functions/mcp/protocol/sandbox-argument';
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

let server: StartedServer;
let mcp: MCPServerStreamableHttp;
beforeAll(async () => {
  server = await startInteropServer();
  mcp = new MCPServerStreamableHttp({
    url: server.url,
    name: 'sandbox',
    requestInit: { headers: { Authorization: `Bearer ${INTEROP_TOKEN}` } },
  });
  await mcp.connect();
});
afterAll(async () => {
  await mcp?.close();
  await stopAllServers();
});

/** The sandbox handle of a 2026-07-28 result. */
function handleOf(result: CallToolResultContent): string {
  const sandbox = result.structuredContent?.sandbox;
  if (typeof sandbox !== 'string') throw new Error(`no sandbox handle in ${JSON.stringify(result.structuredContent)}`);
  return sandbox;
}

/** The lines of the text the model is shown (the content; structuredContent only with `useStructuredContent`). */
const textLines = (result: CallToolResultContent): string[] =>
  result.flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text.split('\n') : []));

it('connects without a session and lists the fifteen tools, each taking a sandbox handle', async () => {
  expect(mcp.sessionId).toBeUndefined();
  const tools = await mcp.listTools();
  expect(tools.map((t) => t.name)).toEqual(SERVER_TOOLS);
  for (const tool of tools) expect(tool.inputSchema.properties).toHaveProperty('sandbox');
});

it('runs run_command: the content list carries structuredContent, in the 2026-07-28 era', async () => {
  const result = await mcp.callTool('run_command', { command: 'echo hi' });
  expect(result.isError).toBeFalsy();
  expect(result.structuredContent).toMatchObject({
    stdout: 'hi\n',
    exit_code: 0,
    sandbox: expect.stringMatching(SANDBOX_HANDLE),
  });
  // A first call carries no handle: its sandbox is new, and the text says so under the handle.
  expect(textLines(result)).toEqual([
    `sandbox: ${handleOf(result)}`,
    NEW_SANDBOX_NOTE,
    'Exit code 0.',
    'stdout:',
    'hi',
    '',
  ]);
  await loggedToolCalls(server, 1);
  expectModernFromTheStart(server);
});

it('writes and reads back a file in one sandbox by carrying the handle the model is shown', async () => {
  const written = await mcp.callTool('write_file', { path: 'notes/hello.txt', content: 'hello from the Agents SDK\n' });
  expect(written.structuredContent).toMatchObject({ bytes_written: 26, created: true });
  const sandbox = handleOf(written);
  expect(sandbox).toMatch(SANDBOX_HANDLE);
  expect(textLines(written)[0]).toBe(`sandbox: ${sandbox}`);

  const read = await mcp.callTool('read_file', { path: 'notes/hello.txt', sandbox });
  expect(read.isError).toBeFalsy();
  expect(read.structuredContent).toMatchObject({ content: 'hello from the Agents SDK\n', sandbox });
});

it('returns a tool error with isError and the server’s message, not as a throw', async () => {
  const sandbox = handleOf(await mcp.callTool('sandbox_status', {}));
  const result = await mcp.callTool('read_file', { path: 'missing.txt', sandbox });
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  expect(textLines(result)).toEqual([`sandbox: ${sandbox}`, expect.stringMatching(MISSING_FILE)]);
});

it('reads a file without the handle the write gave: the error says the call ran in a new, empty sandbox', async () => {
  const written = await mcp.callTool('write_file', { path: 'kept.txt', content: 'kept\n' });
  expect(written.isError).toBeFalsy();
  const read = await mcp.callTool('read_file', { path: 'kept.txt' });
  expect(read.isError).toBe(true);
  const [handleLine, note, error] = textLines(read);
  expect(handleLine).toMatch(/^sandbox: /);
  expect(handleLine).not.toBe(`sandbox: ${handleOf(written)}`);
  expect(note).toBe(NEW_SANDBOX_NOTE);
  expect(error).toMatch(/^No such file or directory: \S*\/kept\.txt$/);
});
