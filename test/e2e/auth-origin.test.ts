/** Bearer auth, start-up refusals, Origin/Host checks and CORS, and what the server must never write to its logs. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { initializeBody, postMcp, request } from '../support/http';
import { authed, messagesOf, nodeHttp, openSession, rpc, waitForLogs } from '../support/raw-session';
import { runServerToExit, startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN_A = 'auth-token-a-0123456789abcdef0123';
const TOKEN_B = 'auth-token-b-fedcba9876543210fedc';
const SAME_LENGTH_WRONG = 'auth-token-a-0123456789abcdef0124';

afterAll(stopAllServers);

/** An initialize POST with these headers; resolves with the answer. */
const initialize = (url: string, headers: Record<string, string>) => postMcp(url, initializeBody(), headers);

describe('bearer tokens from MCP_AUTH_TOKENS', () => {
  let server: StartedServer;
  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: `${TOKEN_A}, ${TOKEN_B}` } });
  });

  it('answers 401 with a WWW-Authenticate Bearer challenge when the token is missing', async () => {
    const res = await initialize(server.url, {});
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    expect(res.headers.get('mcp-session-id')).toBeNull();
  });

  it.each([
    ['a wrong token of the same length', `Bearer ${SAME_LENGTH_WRONG}`],
    ['a token of a different length', `Bearer ${TOKEN_A}0`],
    ['a prefix of a real token', `Bearer ${TOKEN_A.slice(0, 10)}`],
    ['a real token under another scheme', `Basic ${TOKEN_A}`],
  ])('answers 401 to %s', async (_label, authorization) => {
    const res = await initialize(server.url, { authorization });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
  });

  it('accepts each of the two configured tokens', async () => {
    for (const token of [TOKEN_A, TOKEN_B]) {
      const { headers } = await openSession(server.url, token);
      const res = await postMcp(server.url, rpc('tools/list'), headers);
      expect(res.status).toBe(200);
    }
  });

  it("binds a session to its credential: token B presenting token A's session gets 404, and A keeps it", async () => {
    const { sessionId, headers } = await openSession(server.url, TOKEN_A);
    const asB = await postMcp(server.url, rpc('tools/list'), authed(TOKEN_B, sessionId));
    expect(asB.status).toBe(404);
    expect(asB.json).toMatchObject({ error: { code: -32001 } });
    const deleteAsB = await request(server.url, { method: 'DELETE', headers: authed(TOKEN_B, sessionId) });
    expect(deleteAsB.status).toBe(404);
    expect((await postMcp(server.url, rpc('ping', 2), headers)).status).toBe(200);
  });
});

describe('bearer tokens from MCP_AUTH_TOKEN_FILE', () => {
  const FILE_TOKENS = ['file-token-one-0123456789abcdef', 'file-token-two-0123456789abcdef'];
  let server: StartedServer;
  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'mcp-tokens-')), 'tokens');
    writeFileSync(file, `# tokens for the e2e suite\n${FILE_TOKENS[0]}\n\n   ${FILE_TOKENS[1]}   # the second one\n`, {
      mode: 0o600,
    });
    server = await startServer({ env: { MCP_AUTH_TOKEN_FILE: file } });
  });

  it('accepts every token listed in the file and ignores comments and blank lines', async () => {
    for (const token of FILE_TOKENS) expect((await initialize(server.url, authed(token))).status).toBe(200);
    for (const notToken of ['#', 'tokens', 'the'])
      expect((await initialize(server.url, authed(notToken))).status).toBe(401);
  });
});

describe('a configured but empty token list', () => {
  let server: StartedServer;
  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: '' } });
  });

  it('refuses every /mcp request with 401 while /health still answers', async () => {
    for (const headers of [{}, authed('anything-at-all-0123456789'), { authorization: 'Bearer ' }]) {
      expect((await initialize(server.url, headers)).status).toBe(401);
    }
    expect((await postMcp(server.url, rpc('tools/list'), authed('x', 'some-session-id-0123456789abcdef'))).status).toBe(
      401,
    );
    const health = await request(`${server.origin}/health`);
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: expect.any(String) });
  });
});

describe('start-up', () => {
  it('refuses to listen on 0.0.0.0 without a token, naming MCP_AUTH_TOKENS', async () => {
    const run = await runServerToExit({ HOST: '0.0.0.0' });
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
    expect(run.stderr).toContain('MCP_AUTH_TOKENS');
    expect(run.stdout).not.toContain('"msg":"listening"');
  });

  it('listens on 0.0.0.0 without a token when MCP_AUTH=none says so on purpose', async () => {
    const server = await startServer({ env: { HOST: '0.0.0.0', MCP_AUTH: 'none' } });
    expect(server.logs().find((l) => l.msg === 'listening')).toMatchObject({ host: '0.0.0.0' });
    const health = await request(`${server.origin}/health`);
    expect(health.status).toBe(200);
    expect((await initialize(server.url, {})).status).toBe(200);
  });

  it('refuses an invalid MCP_SESSION_IDLE_TTL_S with a message naming it and no stack trace', async () => {
    const run = await runServerToExit({ MCP_SESSION_IDLE_TTL_S: 'abc' });
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
    expect(run.stderr).toContain('MCP_SESSION_IDLE_TTL_S');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('names every bad setting in one start-up message', async () => {
    const run = await runServerToExit({
      MCP_SESSION_IDLE_TTL_S: 'abc',
      MCP_MAX_SESSIONS: '-1',
      MCP_MAX_BODY_BYTES: 'lots',
      LOG_LEVEL: 'chatty',
    });
    expect(run.code).not.toBe(0);
    expect(run.code).not.toBeNull();
    for (const name of ['MCP_SESSION_IDLE_TTL_S', 'MCP_MAX_SESSIONS', 'MCP_MAX_BODY_BYTES', 'LOG_LEVEL'])
      expect(run.stderr).toContain(name);
  });
});

describe('Origin and Host checks with the default (loopback) policy', () => {
  let server: StartedServer;
  const init = JSON.stringify(initializeBody());
  const post = (headers: Record<string, string>) =>
    nodeHttp(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...authed(TOKEN_A),
        ...headers,
      },
      body: init,
    });
  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN_A } });
  });

  it('answers 403 to a foreign Host header (DNS rebinding) and serves a loopback one', async () => {
    expect((await post({ host: 'evil.example.com' })).status).toBe(403);
    expect((await post({ host: `evil.example.com:${server.port}` })).status).toBe(403);
    expect((await post({ host: `localhost:${server.port}` })).status).toBe(200);
  });

  it.each(['http://evil.example.com', 'null', 'http://localhost.evil.example.com'])(
    'answers 403 to the Origin %s',
    async (origin) => {
      const res = await initialize(server.url, { ...authed(TOKEN_A), origin });
      expect(res.status).toBe(403);
      expect(res.headers.get('mcp-session-id')).toBeNull();
    },
  );

  it('serves a loopback Origin, echoing it and exposing Mcp-Session-Id to the page', async () => {
    const res = await initialize(server.url, { ...authed(TOKEN_A), origin: 'http://localhost:3000' });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:3000');
    expect(res.headers.get('access-control-expose-headers')?.toLowerCase()).toContain('mcp-session-id');
    const unauthorized = await initialize(server.url, { origin: 'http://localhost:3000' });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe('http://localhost:3000');
  });
});

describe('MCP_ALLOWED_ORIGINS and MCP_ALLOWED_HOSTS', () => {
  let origins: StartedServer;
  let hosts: StartedServer;
  beforeAll(async () => {
    [origins, hosts] = await Promise.all([
      startServer({ env: { MCP_AUTH_TOKENS: TOKEN_A, MCP_ALLOWED_ORIGINS: 'https://app.example.com' } }),
      startServer({ env: { MCP_AUTH_TOKENS: TOKEN_A, MCP_ALLOWED_HOSTS: 'mcp.example.com' } }),
    ]);
  });

  it('serves exactly the listed Origin and refuses every other one with 403', async () => {
    const ok = await initialize(origins.url, { ...authed(TOKEN_A), origin: 'https://app.example.com' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    for (const origin of [
      'http://app.example.com',
      'https://app.example.com.evil.example',
      'https://evil.example.com',
      'http://localhost:3000',
    ]) {
      expect((await initialize(origins.url, { ...authed(TOKEN_A), origin })).status).toBe(403);
    }
  });

  it('serves a listed Host and refuses an unlisted one with 403', async () => {
    const post = (host: string) =>
      nodeHttp(hosts.url, {
        method: 'POST',
        headers: {
          host,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...authed(TOKEN_A),
        },
        body: JSON.stringify(initializeBody()),
      });
    expect((await post('mcp.example.com')).status).toBe(200);
    expect((await post('MCP.example.com:443')).status).toBe(200);
    expect((await post('evil.example.com')).status).toBe(403);
  });
});

describe('logs', () => {
  it(
    'write one JSON line per request with MCP fields and a session hash, ' + 'and never a token or a session id',
    async () => {
      const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN_A } });
      const forged = 'forgedSessionId0123456789abcdefABCDEF';
      const { sessionId, headers } = await openSession(server.url, TOKEN_A);
      expect((await postMcp(server.url, rpc('tools/list', 2), headers)).status).toBe(200);
      const status = await postMcp(
        server.url,
        rpc('tools/call', 3, { name: 'sandbox_status', arguments: {} }),
        headers,
      );
      expect(messagesOf(status)[0]).toMatchObject({ result: expect.any(Object) });
      expect((await postMcp(server.url, rpc('tools/list', 4), authed(SAME_LENGTH_WRONG, sessionId))).status).toBe(401);
      expect((await postMcp(server.url, rpc('tools/list', 5), authed(TOKEN_A, forged))).status).toBe(404);
      expect((await request(server.url, { method: 'DELETE', headers })).status).toBe(200);

      const sent = 7; // initialize, notifications/initialized, tools/list, tools/call, 401, 404, DELETE
      const logs = await waitForLogs(server, (lines) => lines.filter((l) => l.msg === 'request').length >= sent);
      const lines = logs.filter((l) => l.msg === 'request');
      expect(lines).toHaveLength(sent);
      for (const line of lines) {
        expect(line).toMatchObject({
          method: expect.any(String),
          path: '/mcp',
          status: expect.any(Number),
          duration_ms: expect.any(Number),
        });
      }
      const served = lines.filter((l) => l.method === 'POST' && (l.status === 200 || l.status === 202));
      expect(served.map((l) => l.mcp_method)).toEqual([
        'initialize',
        'notifications/initialized',
        'tools/list',
        'tools/call',
      ]);
      for (const line of served) {
        expect(line).toMatchObject({ era: 'legacy', session: expect.stringMatching(/^[0-9a-f]{8,16}$/) });
      }
      expect(new Set(served.map((l) => l.session)).size).toBe(1);
      expect(lines.map((l) => l.status)).toEqual([200, 202, 200, 200, 401, 404, 200]);

      const output = server.stdout() + server.stderr();
      for (const secret of [TOKEN_A, SAME_LENGTH_WRONG, sessionId, forged]) expect(output).not.toContain(secret);
    },
  );
});
