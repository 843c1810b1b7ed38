/**
 * Logging never endangers serving: with the reader of the server's stdout gone (EPIPE on every log line),
 * requests keep being answered, the failure is said once on stderr, and the process does not spin on it.
 */
import { connectClient } from '../support/clients';
import { startServer, stopAllServers } from '../support/server';

const TOKEN = 'e2e-log-sink-token-0123456789abcdef';

afterAll(() => stopAllServers());

it('keeps answering after its log reader went away, and says so once on stderr', async () => {
  const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
  server.child.stdout?.destroy();
  for (let i = 0; i < 5; i += 1) {
    const health = await fetch(`${server.origin}/health`);
    expect(health.status).toBe(200);
  }
  const client = await connectClient('v2', server.url, { token: TOKEN });
  for (let i = 0; i < 5; i += 1) {
    const result = await client.callTool('write_file', { path: `f${i}.txt`, content: 'x' });
    expect(result.isError).toBeFalsy();
  }
  await client.close();
  expect(server.child.exitCode).toBeNull();
  const stderr = server.stderr();
  expect(stderr.match(/Log output on stdout failed \(EPIPE\)/g)).toHaveLength(1);
  expect(stderr).not.toContain('uncaught');
});
