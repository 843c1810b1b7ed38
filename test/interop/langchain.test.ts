/**
 * LangChain's MCP adapters (`@langchain/mcp-adapters`, `MultiServerMCPClient` over Streamable HTTP) against the
 * built bundle, used as a LangChain app does: `getTools()`, then each tool's `.invoke()`. The adapters run the v1
 * SDK client, so they speak 2025-11-25 with a session: one session, one sandbox, no handle to carry. `.invoke()`
 * with arguments gives the result's one text block with the structuredContent beside it; invoked with a tool call
 * (as an agent's tool node does) it gives a ToolMessage whose artifact holds the structuredContent. A tool error
 * is thrown, as a ToolException carrying the server's text.
 */
import type { DynamicStructuredTool } from '@langchain/core/tools';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  INTEROP_TOKEN,
  loggedRequests,
  loggedToolCalls,
  MISSING_FILE,
  protocolsOf,
  SERVER_TOOLS,
  startInteropServer,
} from '../support/interop';
import { stopAllServers, type StartedServer } from '../support/server';

/** What `.invoke(arguments)` resolves to for a result of one text block and structuredContent. */
interface TextWithStructure {
  type: 'text';
  text: string;
  structuredContent: Record<string, unknown>;
}

let server: StartedServer;
let client: MultiServerMCPClient;
let tools: DynamicStructuredTool[];
beforeAll(async () => {
  server = await startInteropServer();
  client = new MultiServerMCPClient({
    mcpServers: {
      sandbox: { transport: 'http', url: server.url, headers: { Authorization: `Bearer ${INTEROP_TOKEN}` } },
    },
  });
  tools = await client.getTools();
});
afterAll(async () => {
  await client?.close();
  await stopAllServers();
});

function tool(name: string): DynamicStructuredTool {
  const found = tools.find((t) => t.name === name);
  if (found === undefined) throw new Error(`no tool ${name}`);
  return found;
}

const invoke = async (name: string, args: Record<string, unknown>): Promise<TextWithStructure> =>
  (await tool(name).invoke(args)) as TextWithStructure;

it('negotiates 2025-11-25 with a session and lists the fifteen tools', async () => {
  expect(tools.map((t) => t.name)).toEqual(SERVER_TOOLS);
  const sdkClient = await client.getClient('sandbox');
  expect(sdkClient?.getServerVersion()).toMatchObject({ name: 'sandbox-mcp-fc' });
  const transport = sdkClient?.transport;
  expect(transport).toBeInstanceOf(StreamableHTTPClientTransport);
  expect((transport as StreamableHTTPClientTransport).protocolVersion).toBe('2025-11-25');
  expect((transport as StreamableHTTPClientTransport).sessionId).toEqual(expect.any(String));
});

it(
  'runs run_command: .invoke() gives the text with the structuredContent, ' + 'a tool call gives it as the artifact',
  async () => {
    const result = await invoke('run_command', { command: 'echo hi' });
    expect(result).toMatchObject({
      type: 'text',
      text: expect.stringContaining('Exit code 0.'),
      structuredContent: { stdout: 'hi\n', exit_code: 0 },
    });
    expect(result.structuredContent).not.toHaveProperty('sandbox');

    const message = await tool('run_command').invoke({
      id: 'call-1',
      name: 'run_command',
      args: { command: 'echo hi' },
      type: 'tool_call',
    });
    expect(message).toMatchObject({
      tool_call_id: 'call-1',
      status: 'success',
      artifact: [{ type: 'mcp_structured_content', data: { stdout: 'hi\n', exit_code: 0 } }],
    });
    // The model is given that same block as a JSON string (the adapters return one object, not a list of blocks, and
    // LangChain's tool output stringifies what is neither): the text and the structuredContent both reach it.
    expect(JSON.parse(String(message.content))).toMatchObject({
      type: 'text',
      text: expect.stringContaining('hi'),
      structuredContent: { stdout: 'hi\n' },
    });

    await loggedToolCalls(server, 2);
    // Everything it sent, from its first request on: initialize, then the session's requests.
    const requests = loggedRequests(server);
    expect(requests[0]?.mcp_method).toBe('initialize');
    expect(protocolsOf(requests)).toEqual(['2025-11-25 (legacy)']);
    expect(new Set(requests.map((r) => r.session))).toEqual(new Set([expect.any(String)]));
  },
);

it('writes and reads back a file in the session’s sandbox', async () => {
  // A result that links a file is two blocks to LangChain: the text, and the link as a file block by URL (the
  // structuredContent then rides only in the artifact).
  const written = await tool('write_file').invoke({
    id: 'call-w',
    name: 'write_file',
    args: { path: 'notes/hello.txt', content: 'hello from LangChain\n' },
    type: 'tool_call',
  });
  expect(written).toMatchObject({
    status: 'success',
    content: [
      { type: 'text', text: expect.stringContaining('Created /home/user/notes/hello.txt') },
      { type: 'file', source_type: 'url', url: 'sandbox://session/home/user/notes/hello.txt', mime_type: 'text/plain' },
    ],
    artifact: [{ type: 'mcp_structured_content', data: { bytes_written: 21, created: true } }],
  });
  const read = await invoke('read_file', { path: 'notes/hello.txt' });
  expect(read.structuredContent).toMatchObject({ content: 'hello from LangChain\n', total_lines: 1 });
  // Every call went over the one session (the log line of each names it).
  expect(new Set((await loggedToolCalls(server, 4)).map((call) => call.session))).toEqual(
    new Set([expect.any(String)]),
  );
});

it('throws a tool error as a ToolException with the server’s message', async () => {
  const failure = tool('read_file').invoke({ path: 'missing.txt' });
  await expect(failure).rejects.toMatchObject({
    name: 'ToolException',
    message: expect.stringMatching(
      /^MCP tool 'read_file' on server 'sandbox' returned an error: No such file or directory: \S*\/missing\.txt$/,
    ),
  });
  await expect(failure).rejects.toMatchObject({ message: expect.stringMatching(MISSING_FILE) });
});
