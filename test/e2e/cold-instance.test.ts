/**
 * A cold instance answers its first `initialize` before the core (SDK, tools, sandboxes) is loaded
 * (functions/mcp/early-initialize.ts), keeps nothing for it, and loads the core right after; the core opens the
 * session on its next request as a new one. Every test starts a fresh server, so its first request meets that path:
 * the answer must be the core's, and the session a normal, new one.
 */
import { connectClient, textOf } from '../support/clients';
import { initializeBody, postMcp, type RawResponse } from '../support/http';
import { authed, messagesOf, nodeHttp, openSession, rawHttpStatus, rpc, waitForLogs } from '../support/raw-session';
import { HTTP_PROTOCOL_VERSIONS } from '../../functions/mcp/protocol/versions';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

afterAll(stopAllServers);

const TOKEN_A = 'token-a-0123456789abcdef';
const TOKEN_B = 'token-b-0123456789abcdef';

/** Index of the first log line matching `predicate`, or -1. */
function logIndex(server: StartedServer, predicate: (line: Record<string, unknown>) => boolean): number {
  return server.logs().findIndex(predicate);
}

const isInitializeLine = (line: Record<string, unknown>): boolean =>
  line.msg === 'request' && line.mcp_method === 'initialize';
const isCoreLoaded = (line: Record<string, unknown>): boolean => line.msg === 'core loaded';

/** The answer's headers that matter to a client, without the per-session and per-moment values. */
function stableHeaders(res: RawResponse): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== 'date' && name !== 'mcp-session-id') out[name] = value;
  });
  return out;
}

async function healthOf(server: StartedServer): Promise<Record<string, unknown>> {
  return (await (await fetch(`${server.origin}/health`)).json()) as Record<string, unknown>;
}

describe.each(['v1', 'v2'] as const)('the official %s client on a cold instance', (kind) => {
  it(
    'connects with an initialize answered before the core is loaded, and its new session works with no note about ' +
      'an earlier sandbox',
    async () => {
      const server = await startServer();
      const client = await connectClient(kind, server.url);
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain('run_code');
      const logs = server.logs();
      const loadedAt = logs.findIndex(isCoreLoaded);
      expect(logs.findIndex(isInitializeLine)).toBeGreaterThanOrEqual(0);
      expect(logs.findIndex(isInitializeLine)).toBeLessThan(loadedAt);
      // Everything after the initialize is the core's.
      const afterwards = logs.flatMap((l, i) => (l.msg === 'request' && l.mcp_method !== 'initialize' ? [i] : []));
      expect(afterwards.length).toBeGreaterThanOrEqual(2);
      for (const at of afterwards) expect(at).toBeGreaterThan(loadedAt);

      const written = await client.callTool('write_file', { path: 'a.txt', content: 'early' });
      expect(textOf(written)).not.toMatch(/no earlier sandbox/);
      const run = await client.callTool('run_code', { code: 'x = 41\nx + 1' });
      expect(run.structuredContent).toMatchObject({ state_lost: false });
      expect(textOf(await client.callTool('read_file', { path: 'a.txt' }))).toContain('early');
      // Opened as a new session, not as one recovered.
      expect(server.logs().filter((l) => l.msg === 'session recovered')).toEqual([]);
      expect(server.logs().filter((l) => l.msg === 'session opened')).toHaveLength(1);
      await client.terminate();
      await server.stop();
    },
  );
});

it.each(HTTP_PROTOCOL_VERSIONS)(
  'answers initialize at %s with the same bytes, headers and log line as the core does',
  async (version) => {
    const server = await startServer();
    const early = await postMcp(server.url, initializeBody(version, 'first'));
    await waitForLogs(server, (logs) => logs.some(isCoreLoaded));
    const core = await postMcp(server.url, initializeBody(version, 'first'));
    expect([early.status, core.status]).toEqual([200, 200]);
    expect(early.text).toBe(core.text);
    expect(stableHeaders(early)).toEqual(stableHeaders(core));
    expect(early.headers.get('mcp-session-id')).toMatch(/^[A-Za-z0-9_-]{22}\.[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
    const logs = server.logs();
    const lines = logs.filter(isInitializeLine);
    expect(lines).toHaveLength(2);
    expect(logs.indexOf(lines[0] ?? {})).toBeLessThan(logs.findIndex(isCoreLoaded));
    expect(logs.indexOf(lines[1] ?? {})).toBeGreaterThan(logs.findIndex(isCoreLoaded));
    const fields = (line: Record<string, unknown>): string[] =>
      Object.keys(line).filter((k) => k !== 'duration_ms' && k !== 'time' && k !== 'request_id');
    const values = (line: Record<string, unknown>): unknown[] =>
      fields(line).map((k) => (k === 'session' ? typeof line[k] : line[k]));
    expect(fields(lines[0] ?? {})).toEqual(fields(lines[1] ?? {}));
    expect(values(lines[0] ?? {})).toEqual(values(lines[1] ?? {}));
    await server.stop();
  },
);

it('keeps nothing for a session answered early: it is held once the core opens it on its next request', async () => {
  const server = await startServer();
  const init = await postMcp(server.url, initializeBody());
  const sessionId = init.headers.get('mcp-session-id') ?? '';
  await waitForLogs(server, (logs) => logs.some(isCoreLoaded));
  expect(await healthOf(server)).toMatchObject({ sessions: 0 });
  const initialized = await postMcp(
    server.url,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    authed(undefined, sessionId),
  );
  expect(initialized.status).toBe(202);
  expect(await healthOf(server)).toMatchObject({ sessions: 1 });
  await server.stop();
});

it('answers a second initialize through the core once it is loaded', async () => {
  const server = await startServer();
  await postMcp(server.url, initializeBody());
  await waitForLogs(server, (logs) => logs.some(isCoreLoaded));
  const second = await postMcp(server.url, initializeBody());
  expect(second.status).toBe(200);
  // The core's session is held at once; the early one is not.
  expect(await healthOf(server)).toMatchObject({ sessions: 1 });
  await server.stop();
});

it('binds a session answered early to its credential, and DELETE ends it', async () => {
  const server = await startServer({ env: { MCP_AUTH_TOKENS: `${TOKEN_A},${TOKEN_B}` } });
  const session = await openSession(server.url, TOKEN_A);
  const foreign = await postMcp(server.url, rpc('tools/list', 2), authed(TOKEN_B, session.sessionId));
  expect(foreign.status).toBe(404);
  const own = await postMcp(server.url, rpc('tools/list', 3), session.headers);
  expect(own.status).toBe(200);
  const deleted = await fetch(server.url, { method: 'DELETE', headers: session.headers });
  expect(deleted.status).toBe(200);
  expect((await postMcp(server.url, rpc('tools/list', 4), session.headers)).status).toBe(404);
  await server.stop();
});

it('binds an id answered early to its credential even before the core opened it', async () => {
  const server = await startServer({ env: { MCP_AUTH_TOKENS: `${TOKEN_A},${TOKEN_B}` } });
  const init = await postMcp(server.url, initializeBody(), { authorization: `Bearer ${TOKEN_A}` });
  const sessionId = init.headers.get('mcp-session-id') ?? '';
  const foreign = await postMcp(
    server.url,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    authed(TOKEN_B, sessionId),
  );
  expect(foreign.status).toBe(404);
  const own = await postMcp(server.url, rpc('tools/list', 2), authed(TOKEN_A, sessionId));
  expect(own.status).toBe(200);
  await server.stop();
});

it('serves many sessions initialized at once on a cold instance', async () => {
  const server = await startServer();
  const sessions = await Promise.all(Array.from({ length: 24 }, () => openSession(server.url, undefined)));
  expect(new Set(sessions.map((s) => s.sessionId)).size).toBe(24);
  const answers = await Promise.all(
    sessions.map((s, i) =>
      postMcp(server.url, rpc('tools/call', i, { name: 'sandbox_status', arguments: {} }), s.headers),
    ),
  );
  for (const answer of answers) {
    expect(answer.status).toBe(200);
    expect(messagesOf(answer)[0]).toMatchObject({ result: { structuredContent: { backend: 'local' } } });
  }
  await server.stop();
});

/** First requests that the early path leaves to the core, and what the core answers. */
const FIRST_REQUESTS: Array<{
  name: string;
  body: unknown;
  headers?: Record<string, string>;
  status: number;
  check?: (res: RawResponse) => void;
}> = [
  {
    name: 'a browser origin (CORS headers)',
    body: initializeBody(),
    headers: { origin: 'http://localhost:3000' },
    status: 200,
    check: (res) => expect(res.headers.get('access-control-expose-headers')).toContain('Mcp-Session-Id'),
  },
  { name: 'a foreign origin', body: initializeBody(), headers: { origin: 'https://evil.example' }, status: 403 },
  { name: 'no Accept for SSE', body: initializeBody(), headers: { accept: 'application/json' }, status: 406 },
  { name: 'a text body', body: initializeBody(), headers: { 'content-type': 'text/plain' }, status: 415 },
  { name: 'invalid JSON', body: '{"jsonrpc":', status: 400 },
  { name: 'a batch', body: [initializeBody()], status: 400 },
  { name: 'initialize without params', body: { jsonrpc: '2.0', id: 1, method: 'initialize' }, status: 400 },
  { name: 'tools/list without a session', body: rpc('tools/list'), status: 400 },
  {
    name: 'a session id nobody issued',
    body: rpc('tools/list'),
    headers: { 'mcp-session-id': 'nope', 'mcp-protocol-version': '2025-11-25' },
    status: 404,
  },
  {
    name: 'initialize with _meta',
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'c', version: '1' },
        _meta: { x: 1 },
      },
    },
    status: 200,
    check: (res) => expect(res.json).toMatchObject({ result: { protocolVersion: '2025-06-18' } }),
  },
];

it.each(FIRST_REQUESTS)('leaves to the core a first request with $name', async ({ body, headers, status, check }) => {
  const server = await startServer();
  const res = await postMcp(server.url, body, headers);
  expect(res.status).toBe(status);
  check?.(res);
  // The core answered it: it was loaded for this request.
  expect(logIndex(server, isCoreLoaded)).toBeGreaterThanOrEqual(0);
  expect(logIndex(server, isCoreLoaded)).toBeLessThan(logIndex(server, (l) => l.msg === 'request'));
  await server.stop();
});

it('leaves a first request with a foreign Host to the core, which answers 403', async () => {
  const server = await startServer();
  const res = await nodeHttp(server.url, {
    method: 'POST',
    headers: {
      host: 'evil.example',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(initializeBody()),
  });
  expect(res.status).toBe(403);
  await server.stop();
});

it('leaves a first request with two Host headers to the core, which answers 400', async () => {
  const server = await startServer();
  const head = [
    'POST /mcp HTTP/1.1',
    'Host: 127.0.0.1',
    'Host: localhost',
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
  ].join('\r\n');
  expect(await rawHttpStatus(server.url, head, JSON.stringify(initializeBody()))).toBe(400);
  expect(server.logs().filter(isInitializeLine)).toEqual([]);
  await server.stop();
});

it('leaves a first request with a wrong token to the core, which answers 401', async () => {
  const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN_A } });
  const res = await postMcp(server.url, initializeBody(), { authorization: 'Bearer wrong-token-0123456789' });
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toContain('invalid_token');
  await server.stop();
});

it(
  'counts a session answered early against MCP_MAX_SESSIONS once opened: at the cap it goes first and comes back ' +
    'when used',
  async () => {
    const server = await startServer({ env: { MCP_MAX_SESSIONS: '1' } });
    const first = await openSession(server.url, undefined);
    expect(await healthOf(server)).toMatchObject({ sessions: 1 });
    // The cap is reached: the first session is let go for the second.
    const second = await openSession(server.url, undefined);
    expect(server.logs().filter((l) => l.msg === 'session evicted')).toHaveLength(1);
    const call = (headers: Record<string, string>, id: number): Promise<RawResponse> =>
      postMcp(server.url, rpc('tools/call', id, { name: 'run_command', arguments: { command: 'echo back' } }), headers);
    expect(messagesOf(await call(second.headers, 2))[0]).toMatchObject({
      result: { structuredContent: { stdout: 'back\n' } },
    });
    // Its id is still valid: it is rebuilt like any session this instance let go.
    expect(messagesOf(await call(first.headers, 3))[0]).toMatchObject({
      result: { structuredContent: { stdout: 'back\n' } },
    });
    await server.stop();
  },
);
