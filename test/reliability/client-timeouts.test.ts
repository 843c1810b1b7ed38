/**
 * A command that outlasts its call, through the official SDK clients with their default settings (each gives
 * up on a request after 60 s, as LangChain's, OpenAI's and Mastra's clients built on them do): the server's own
 * timeout (the default `timeout_ms`, 50 s; functions/mcp/tools/tool.ts) answers first, so the caller
 * reads what happened and what to do instead of `Request timed out`. Real time by nature: about 50 s.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'client-timeouts-token-0123456789abcdef';
const HEADERS = { headers: { Authorization: `Bearer ${TOKEN}` } };

type Result = {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
});
afterAll(stopAllServers);

it('a 65-second run_command ends with the server’s timeout message before either SDK client gives up', async () => {
  const v1 = new ClientV1({ name: 'defaults-v1', version: '1.0.0' });
  await v1.connect(new TransportV1(new URL(server.url), { requestInit: HEADERS }));
  const v2 = new ClientV2({ name: 'defaults-v2', version: '1.0.0' });
  await v2.connect(new TransportV2(new URL(server.url), { requestInit: HEADERS }));
  const call = { name: 'run_command', arguments: { command: 'echo started; sleep 65; echo finished' } };
  // No options: each client's default request timeout (60 s) is in force.
  const results = (await Promise.all([v1.callTool(call), v2.callTool(call)])) as Result[];
  expect(results).toHaveLength(2);
  for (const result of results) {
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain(
      'Timed out after 50000 ms; the command and its child processes were killed. Pass a larger timeout_ms, or ' +
        'run it with background: true',
    );
    expect(result.structuredContent).toMatchObject({ timed_out: true, stdout: 'started\n' });
  }
  await Promise.all([v1.close(), v2.close()]);
});
