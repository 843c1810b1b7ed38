/**
 * The rate of new sessions holds across the two paths that mint a session id in the real process: a cold
 * instance's early answer (functions/mcp/early-initialize.ts) takes from the same bucket as the core's `initialize`
 * (sessions/initialize-rate.ts, shared through entry-deps.ts), so a cold start gives no extra session.
 */
import { initializeBody, postMcp } from '../support/http';
import { errorOf, waitForLogs } from '../support/raw-session';
import { startServer, stopAllServers } from '../support/server';

afterAll(stopAllServers);

it(
  'counts the session a cold instance answered early: the next initialize, served by the core, gets 429 with ' +
    'Retry-After',
  async () => {
    const server = await startServer({ env: { MCP_INITIALIZE_BURST: '1', MCP_INITIALIZE_PER_MIN: '1' } });
    const early = await postMcp(server.url, initializeBody());
    expect(early.status).toBe(200);
    const logs = await waitForLogs(server, (lines) => lines.some((line) => line.msg === 'core loaded'));
    // Answered before the core was loaded.
    expect(logs.findIndex((line) => line.msg === 'request' && line.mcp_method === 'initialize')).toBeLessThan(
      logs.findIndex((line) => line.msg === 'core loaded'),
    );
    const next = await postMcp(server.url, initializeBody('2025-11-25', 2));
    expect(next.status).toBe(429);
    // A minute for one session, less the moments since the early answer took the only one.
    expect(Number(next.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(next.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(next.headers.get('mcp-session-id')).toBeNull();
    expect(errorOf(next)?.message).toContain('MCP_INITIALIZE_BURST=1, MCP_INITIALIZE_PER_MIN=1');
    // The session answered early works: the limit is on new sessions only.
    const id = early.headers.get('mcp-session-id') ?? '';
    const listed = await postMcp(
      server.url,
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
    );
    expect(listed.status).toBe(200);
  },
);
