/**
 * The Streamable HTTP status table (docs/platform-facts.md), row by row, over raw HTTP against the built bundle with
 * bearer auth on; plus the FC routes.
 */
import { ACCEPT_BOTH, initializeBody, postMcp, request } from '../support/http';
import { authed, errorCodeOf, messagesOf, nodeHttp, openSession, rpc } from '../support/raw-session';
import { markedSleep } from '../support/processes';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'status-table-token-0123456789abcdef';
const WRONG = 'status-table-token-0123456789abcdeX';
const UNKNOWN_SESSION = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
});
afterAll(stopAllServers);

describe('POST /mcp', () => {
  it.each(['text/html', 'application/json', 'text/event-stream'])(
    'answers 406 when Accept is "%s" instead of listing both application/json and text/event-stream',
    async (accept) => {
      const res = await postMcp(server.url, initializeBody(), { ...authed(TOKEN), accept });
      expect(res.status).toBe(406);
      expect(res.headers.get('mcp-session-id')).toBeNull();
    },
  );

  it('answers 202 with an empty body when the POST carries only a notification', async () => {
    const { headers } = await openSession(server.url, TOKEN);
    const res = await postMcp(server.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
    expect(res.status).toBe(202);
    expect(res.text).toBe('');
  });

  it('answers a request with 200 and one JSON object or an SSE stream that ends after the response', async () => {
    const { headers } = await openSession(server.url, TOKEN);
    const res = await postMcp(server.url, rpc('ping', 'p-1'), headers);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^(application\/json|text\/event-stream)/);
    expect(messagesOf(res)).toEqual([{ jsonrpc: '2.0', id: 'p-1', result: {} }]);
  });

  it('answers both requests of a JSON-RPC batch when the session negotiated 2025-03-26', async () => {
    const { headers, version } = await openSession(server.url, TOKEN, '2025-03-26');
    expect(version).toBe('2025-03-26');
    const res = await postMcp(server.url, [rpc('ping', 11), rpc('ping', 12)], headers);
    expect(res.status).toBe(200);
    const answers = messagesOf(res);
    expect(answers.map((m) => m.id).sort()).toEqual([11, 12]);
    for (const answer of answers) expect(answer).toMatchObject({ jsonrpc: '2.0', result: {} });
  });

  it.each(['2025-11-25', '2025-06-18'])(
    'refuses a JSON-RPC batch with 400 when the session negotiated %s',
    async (asked) => {
      const { headers, version } = await openSession(server.url, TOKEN, asked);
      expect(version).toBe(asked);
      const res = await postMcp(server.url, [rpc('ping', 21), rpc('ping', 22)], headers);
      expect(res.status).toBe(400);
      expect(errorCodeOf(res)).toBe(-32600);
    },
  );

  it('answers 400 to a non-initialize request that carries no Mcp-Session-Id', async () => {
    const res = await postMcp(server.url, rpc('tools/list'), authed(TOKEN));
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringContaining('Mcp-Session-Id') } });
  });

  it('answers 404 with JSON-RPC error -32001 to a session id it never issued', async () => {
    const res = await postMcp(server.url, rpc('tools/list'), authed(TOKEN, UNKNOWN_SESSION));
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 } });
  });

  it(
    'checks the token before the session: ' + 'an unknown session with a wrong or missing token is 401, never 404',
    async () => {
      const wrong = await postMcp(server.url, rpc('tools/list'), authed(WRONG, UNKNOWN_SESSION));
      expect(wrong.status).toBe(401);
      const missing = await postMcp(server.url, rpc('tools/list'), authed(undefined, UNKNOWN_SESSION));
      expect(missing.status).toBe(401);
      const { sessionId } = await openSession(server.url, TOKEN);
      const live = await postMcp(server.url, rpc('tools/list'), authed(WRONG, sessionId));
      expect(live.status).toBe(401);
      const deleted = await request(server.url, { method: 'DELETE', headers: authed(WRONG, UNKNOWN_SESSION) });
      expect(deleted.status).toBe(401);
    },
  );

  it('answers 400 when the MCP-Protocol-Version header names a version it does not support', async () => {
    const { headers } = await openSession(server.url, TOKEN);
    for (const unsupported of ['1999-01-01', 'banana']) {
      const res = await postMcp(server.url, rpc('ping', 31), { ...headers, 'mcp-protocol-version': unsupported });
      expect(res.status).toBe(400);
    }
  });

  it('accepts a request inside a session that sends no MCP-Protocol-Version header', async () => {
    const { sessionId } = await openSession(server.url, TOKEN);
    const res = await postMcp(server.url, rpc('ping', 32), { ...authed(TOKEN), 'mcp-session-id': sessionId });
    expect(res.status).toBe(200);
    expect(messagesOf(res)).toEqual([{ jsonrpc: '2.0', id: 32, result: {} }]);
  });

  it('answers 403 when an Origin is present and not allowed, even with a valid token and session', async () => {
    const { headers } = await openSession(server.url, TOKEN);
    const res = await postMcp(server.url, rpc('ping', 41), { ...headers, origin: 'http://evil.example.com' });
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('other methods on /mcp', () => {
  it('answers GET /mcp with 405 and an Allow header instead of opening a stream', async () => {
    const { headers } = await openSession(server.url, TOKEN);
    const res = await request(server.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/POST/);
    expect(res.headers.get('content-type')).not.toMatch(/event-stream/);
  });

  it('terminates a session on DELETE with 2xx, and the id is unknown (404) from then on', async () => {
    const { headers } = await openSession(server.url, TOKEN);
    const deleted = await request(server.url, { method: 'DELETE', headers });
    expect(deleted.status).toBe(200);
    const after = await postMcp(server.url, rpc('ping', 51), headers);
    expect(after.status).toBe(404);
    expect(after.json).toMatchObject({ error: { code: -32001 } });
    const again = await request(server.url, { method: 'DELETE', headers });
    expect(again.status).toBe(404);
  });

  it.each(['PUT', 'PATCH'])('answers %s /mcp with 405 and an Allow header listing POST and DELETE', async (method) => {
    const { headers } = await openSession(server.url, TOKEN);
    const res = await request(server.url, {
      method,
      headers: { ...headers, 'content-type': 'application/json', accept: ACCEPT_BOTH },
      body: JSON.stringify(rpc('ping', 61)),
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/POST/);
    expect(res.headers.get('allow')).toMatch(/DELETE/);
  });

  it(
    'answers DELETE without a session id with 400 and a JSON-RPC ' +
      'error saying the Mcp-Session-Id header is missing',
    async () => {
      const res = await request(server.url, { method: 'DELETE', headers: authed(TOKEN) });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.json).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: expect.stringContaining('the Mcp-Session-Id header is missing') },
      });
    },
  );

  it('lists every method /mcp serves, OPTIONS included, in each Allow header it sends for /mcp', async () => {
    const answers: Record<string, { status: number; allow: unknown }> = {};
    for (const method of ['GET', 'HEAD', 'PUT', 'PATCH', 'TRACE', 'OPTIONS']) {
      const res = await nodeHttp(server.url, { method, headers: authed(TOKEN) });
      answers[method] = { status: res.status, allow: res.headers.allow };
    }
    const allow = 'POST, DELETE, OPTIONS';
    expect(answers).toEqual({
      GET: { status: 405, allow },
      HEAD: { status: 405, allow },
      PUT: { status: 405, allow },
      PATCH: { status: 405, allow },
      TRACE: { status: 405, allow },
      OPTIONS: { status: 204, allow },
    });
  });

  it('answers an OPTIONS preflight from an allowed Origin with 204 and CORS headers, without a token', async () => {
    const res = await request(server.url, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:5173',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-session-id',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect(res.headers.get('access-control-allow-methods')).toMatch(/DELETE/);
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toEqual(
      expect.stringContaining('mcp-session-id'),
    );
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toEqual(
      expect.stringContaining('authorization'),
    );
    expect(res.headers.get('access-control-expose-headers')?.toLowerCase()).toEqual(
      expect.stringContaining('mcp-session-id'),
    );
  });
});

describe('refusals that say when to retry', () => {
  it(
    'answers a batch of more tool calls than MCP_MAX_CALLS_PER_CREDENTIAL with 429 and Retry-After, running none ' +
      'of them',
    async () => {
      const capped = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_CALLS_PER_CREDENTIAL: '1' } });
      const call = (id: number) => rpc('tools/call', id, { name: 'sandbox_status', arguments: {} });
      const res = await postMcp(capped.url, [call(71), call(72)], authed(TOKEN));
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.json).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: expect.stringContaining('MCP_MAX_CALLS_PER_CREDENTIAL=1') },
      });
      await capped.stop();
    },
  );
});

describe('calls in flight per credential, behind the Node shell (MCP_MAX_CALLS_PER_CREDENTIAL=1)', () => {
  const call = (
    url: string,
    headers: Record<string, string>,
    command: string,
    id: number,
    signal?: AbortSignal,
  ): Promise<string> => {
    const body = JSON.stringify(rpc('tools/call', id, { name: 'run_command', arguments: { command } }));
    return fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers },
      body,
      signal,
    }).then((res) => res.text());
  };
  const status = (url: string, headers: Record<string, string>, id: number): Promise<number> =>
    postMcp(url, rpc('tools/call', id, { name: 'sandbox_status', arguments: {} }), headers).then((res) => res.status);
  /** Tries a cheap call until it is answered `wanted` (a bound on a hang, not a timing); the last status. */
  const until = async (url: string, headers: Record<string, string>, wanted: number): Promise<number> => {
    let answered = 0;
    for (let tries = 0; tries < 400 && answered !== wanted; tries += 1)
      answered = await status(url, headers, 100 + tries);
    return answered;
  };

  it('holds the slot while the answer is on its way and frees it once it has been sent', async () => {
    const capped = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_CALLS_PER_CREDENTIAL: '1' } });
    const session = await openSession(capped.url, TOKEN);
    // Long enough for the refusal to be seen while it runs; the test then waits for it to end.
    const running = call(capped.url, session.headers, markedSleep(5), 81);
    expect(await until(capped.url, session.headers, 429)).toBe(429);
    expect(await running).toContain('"exit_code":0');
    expect(await status(capped.url, session.headers, 82)).toBe(200);
    await capped.stop();
  });

  it('frees the slot of a call whose client hung up', async () => {
    const capped = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_CALLS_PER_CREDENTIAL: '1' } });
    const session = await openSession(capped.url, TOKEN);
    const abort = new AbortController();
    const running = call(capped.url, session.headers, markedSleep(60), 83, abort.signal).catch(() => 'aborted');
    expect(await until(capped.url, session.headers, 429)).toBe(429);
    abort.abort();
    expect(await running).toBe('aborted');
    // The hang-up ends the answer, which gives the slot back.
    expect(await until(capped.url, session.headers, 200)).toBe(200);
    await capped.stop();
  });
});

describe('session ids', () => {
  it('mints visible-ASCII ids of at least 128 bits, different for every session', async () => {
    const a = await openSession(server.url, TOKEN);
    const b = await openSession(server.url, TOKEN);
    for (const id of [a.sessionId, b.sessionId]) {
      expect(id).toMatch(/^[\x21-\x7e]+$/);
      expect(id.length).toBeGreaterThanOrEqual(22);
    }
    expect(a.sessionId).not.toBe(b.sessionId);
  });
});

describe('the Function Compute routes', () => {
  it(
    'reports health without a token: status, version, ' + 'protocol versions, backend and sessions, and no secret',
    async () => {
      const res = await request(`${server.origin}/health`);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        status: expect.stringMatching(/^(ok|degraded)$/),
        version: expect.any(String),
        protocol: { supported: expect.arrayContaining(['2025-11-25', '2025-03-26']), preferred: '2025-11-25' },
        backend: expect.objectContaining({ name: 'local' }),
        sessions: expect.any(Number),
      });
      expect(res.text).not.toContain(TOKEN);
    },
  );

  it('answers the Initializer hook POST /initialize with 200', async () => {
    expect((await request(`${server.origin}/initialize`, { method: 'POST' })).status).toBe(200);
  });

  it('answers the PreStop hook GET /pre-stop with 200', async () => {
    expect((await request(`${server.origin}/pre-stop`)).status).toBe(200);
  });

  it('answers 404 for a path it does not serve', async () => {
    expect((await request(`${server.origin}/nope`)).status).toBe(404);
    expect((await request(`${server.origin}/mcp/extra`, { method: 'POST', headers: authed(TOKEN) })).status).toBe(404);
  });
});
