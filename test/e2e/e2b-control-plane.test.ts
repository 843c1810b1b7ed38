/**
 * The E2B backend, from the built bundle through the real E2B SDK, against a loopback fake of E2B's control
 * plane: what the SDK sends on create and kill, how E2B's answers (401, 429, 503, 500) reach the caller,
 * the creation throttle, and that the API key never leaks. Envd calls are pointed at the fake (E2B_SANDBOX_URL),
 * which answers them with a plain 404, so every tool that reaches into the sandbox fails fast.
 */
import { randomBytes } from 'node:crypto';

import { connectClient, textOf, type TestClient, type ToolResult } from '../support/clients';
import { apiError, created, type FakeE2B, type RecordedRequest, startFakeE2B } from '../support/fake-e2b';
import { startServer, type StartedServer } from '../support/server';

const KEY = `e2b_${randomBytes(20).toString('hex')}`;
const TOKEN = 'e2b-e2e-token-0123456789abcdef';

/** Every 8-character slice of the key's secret part: none may appear anywhere. */
const KEY_PARTS = Array.from({ length: KEY.length - 4 - 7 }, (_, i) => KEY.slice(4 + i, 12 + i));
function keyPartsIn(text: string): string[] {
  return KEY_PARTS.filter((part) => text.includes(part));
}

function e2bEnv(fake: FakeE2B, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SANDBOX_BACKEND: 'e2b',
    E2B_API_KEY: KEY,
    E2B_API_URL: fake.url,
    E2B_SANDBOX_URL: fake.url,
    MCP_SESSION_IDLE_TTL_S: '900',
    MCP_AUTH_TOKENS: TOKEN,
    E2B_MAX_CREATES_PER_S: '50',
    ...extra,
  };
}

interface CreateBody {
  templateID: string;
  timeout: number;
  metadata: Record<string, string>;
}
const bodyOf = (r: RecordedRequest | undefined): CreateBody => r?.body as CreateBody;

/** A tool failure the caller can act on: isError, one line of our text, no stack, no key. */
function expectCleanError(result: ToolResult): string {
  const text = textOf(result);
  expect(result.isError).toBe(true);
  expect(text).not.toMatch(/\n\s+at |\.js:\d+/);
  expect(keyPartsIn(JSON.stringify(result))).toEqual([]);
  return text;
}

describe('an E2B-backed server against a fake E2B control plane', () => {
  let fake: FakeE2B;
  let server: StartedServer;
  let requestsAtStart = -1;
  beforeAll(async () => {
    fake = await startFakeE2B();
    server = await startServer({ env: e2bEnv(fake, { LOG_LEVEL: 'debug' }) });
    requestsAtStart = fake.requests.length;
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.stop();
  });
  let client: TestClient | undefined;
  beforeEach(() => fake.reset());
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });
  const connect = async (): Promise<TestClient> => (client = await connectClient('v2', server.url, { token: TOKEN }));

  it('reports backend e2b and ready on /health, with no part of the API key, and calls E2B on start-up not at all', async () => {
    const res = await fetch(`${server.origin}/health`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ status: 'ok', backend: { name: 'e2b', ready: true, isolation: 'e2b-microvm' } });
    expect(keyPartsIn(text)).toEqual([]);
    expect(requestsAtStart).toBe(0);
  });

  it('calls E2B for neither initialize, tools/list nor sandbox_status', async () => {
    const c = await connect();
    expect((await c.listTools()).tools).toHaveLength(10);
    const status = await c.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({ backend: 'e2b', state: 'not_started', sandbox_id: null });
    expect(fake.requests).toEqual([]);
  });

  it('creates exactly one sandbox on the first tool that needs one: template, lease, hashed tags, key header', async () => {
    const health = (await (await fetch(`${server.origin}/health`)).json()) as { name: string; version: string };
    fake.script('create', created('sbx-first'));
    const c = await connect();
    const sessionId = c.sessionId ?? '';
    const result = await c.callTool('write_file', { path: 'notes.txt', content: 'hello' });

    const creates = fake.of('create');
    expect(creates).toHaveLength(1);
    expect(creates[0]?.headers['x-api-key']).toBe(KEY);
    const body = bodyOf(creates[0]);
    expect(body).toMatchObject({ templateID: 'code-interpreter-v1', timeout: 900 });
    expect(Object.keys(body.metadata).sort()).toEqual(['mcp_owner', 'mcp_server', 'mcp_session', 'mcp_version']);
    expect(body.metadata).toMatchObject({ mcp_server: health.name, mcp_version: health.version });
    for (const tag of [body.metadata.mcp_session, body.metadata.mcp_owner]) {
      expect(tag).toMatch(/^[0-9a-f]{16,64}$/);
      expect(tag).not.toBe(sessionId);
    }
    const wholeBody = JSON.stringify(creates[0]?.body);
    expect(sessionId.length).toBeGreaterThan(15);
    expect(wholeBody.includes(sessionId)).toBe(false);
    expect(wholeBody.includes(TOKEN)).toBe(false);
    expect(keyPartsIn(wholeBody)).toEqual([]);

    // The envd call went to E2B_SANDBOX_URL for this sandbox, and failed.
    expect(fake.of('envd')[0]?.headers['e2b-sandbox-id']).toBe('sbx-first');
    expect(expectCleanError(result)).toMatch(/^The E2B sandbox failed while writing \/home\/user\/notes\.txt: /);

    const status = await c.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({ backend: 'e2b', state: 'running', sandbox_id: 'sbx-first', workdir: '/home/user' });
  });

  it('creates one sandbox for three concurrent first calls of a session', async () => {
    fake.script('create', created('sbx-shared'));
    const c = await connect();
    const results = await Promise.all([
      c.callTool('write_file', { path: 'a.txt', content: 'a' }),
      c.callTool('read_file', { path: 'b.txt' }),
      c.callTool('list_files', {}),
    ]);
    expect(results.map((r) => r.isError)).toEqual([true, true, true]);
    expect(fake.of('create')).toHaveLength(1);
    expect(new Set(fake.of('envd').map((r) => r.headers['e2b-sandbox-id']))).toEqual(new Set(['sbx-shared']));
  });

  it('kills the session’s sandbox with DELETE /sandboxes/<id> when the client ends the session', async () => {
    fake.script('create', created('sbx-to-kill'));
    const c = await connect();
    await c.callTool('write_file', { path: 'x.txt', content: 'x' });
    await c.terminate();
    client = undefined;
    await fake.waitFor((reqs) => reqs.some((r) => r.route === 'kill'));
    const kills = fake.of('kill');
    expect(kills.map((r) => `${r.method} ${r.path}`)).toEqual(['DELETE /sandboxes/sbx-to-kill']);
    expect(kills[0]?.headers['x-api-key']).toBe(KEY);
  });

  it('reports a sandbox whose envd answers 502 as gone, and the next call starts a fresh one', async () => {
    fake.setDefault('envd', { status: 502, body: 'bad gateway' });
    fake.script('create', created('sbx-lost'), created('sbx-fresh'));
    const c = await connect();
    const text = expectCleanError(await c.callTool('write_file', { path: 'a.txt', content: 'a' }));
    expect(text).toMatch(/^The sandbox has expired or was shut down outside this server/);
    expect((await c.callTool('sandbox_status')).structuredContent).toMatchObject({ state: 'not_started', sandbox_id: null });
    await c.callTool('write_file', { path: 'a.txt', content: 'a' });
    expect(fake.of('envd').map((r) => r.headers['e2b-sandbox-id'])).toEqual(['sbx-lost', 'sbx-fresh']);
    // A 502 may only mean the path to the microVM failed: the replaced one is killed, not left billing.
    await fake.waitFor(() => fake.of('kill').some((r) => r.path === '/sandboxes/sbx-lost'), 5_000);
  });

  it('tells the caller to check E2B_API_KEY when E2B answers 401, without retrying', async () => {
    fake.script('create', apiError(401, 'Invalid API key'));
    const c = await connect();
    const text = expectCleanError(await c.callTool('write_file', { path: 'a.txt', content: 'a' }));
    expect(text).toContain('check E2B_API_KEY');
    expect(fake.of('create')).toHaveLength(1);
  });

  it('says E2B is temporarily unavailable when E2B answers 503', async () => {
    fake.setDefault('create', apiError(503, `overloaded (key ${KEY})`));
    const c = await connect();
    const text = expectCleanError(await c.callTool('run_command', { command: 'true' }));
    expect(text).toMatch(/E2B is temporarily unavailable/);
  });

  it('redacts the key from an unexpected E2B error that quotes it', async () => {
    fake.script('create', apiError(500, `internal failure for X-API-KEY: ${KEY}`));
    const c = await connect();
    const text = expectCleanError(await c.callTool('write_file', { path: 'a.txt', content: 'a' }));
    expect(text).toContain('creating the sandbox');
  });

  it('retries a create that got 429 (with Retry-After) and then creates the sandbox', async () => {
    fake.script('create', apiError(429, 'rate limited', { 'retry-after': '1' }), created('sbx-after-429'));
    const c = await connect();
    await c.callTool('write_file', { path: 'a.txt', content: 'a' });
    const creates = fake.of('create');
    // Retried once (the backoff's schedule is asserted on a fake clock in test/core/e2b-wire.test.ts).
    expect(creates).toHaveLength(2);
    const status = await c.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({ state: 'running', sandbox_id: 'sbx-after-429' });
  });

  it('never writes the API key (or any part of it) to stdout or stderr', () => {
    expect(server.logs().some((l) => l.msg === 'sandbox created')).toBe(true);
    expect(keyPartsIn(server.stdout())).toEqual([]);
    expect(keyPartsIn(server.stderr())).toEqual([]);
  });
});

describe('an E2B-backed server with E2B_TEMPLATE=my-template', () => {
  let fake: FakeE2B;
  let server: StartedServer;
  beforeAll(async () => {
    fake = await startFakeE2B();
    server = await startServer({ env: e2bEnv(fake, { E2B_TEMPLATE: 'my-template' }) });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.stop();
  });

  it('creates sandboxes from that template', async () => {
    const client = await connectClient('v2', server.url, { token: TOKEN });
    expect((await client.callTool('write_file', { path: 'a.txt', content: 'a' })).isError).toBe(true);
    expect(fake.of('create').map((r) => bodyOf(r).templateID)).toEqual(['my-template']);
    await client.close();
  });
});

describe('an E2B-backed server with E2B_MAX_CREATES_PER_S=1', () => {
  let fake: FakeE2B;
  let server: StartedServer;
  beforeAll(async () => {
    fake = await startFakeE2B();
    server = await startServer({ env: e2bEnv(fake, { E2B_MAX_CREATES_PER_S: '1' }) });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.stop();
  });

  it('tags the creates of two sessions starting at once per session, and with one owner', async () => {
    const [a, b] = await Promise.all([connectClient('v2', server.url, { token: TOKEN }), connectClient('v2', server.url, { token: TOKEN })]);
    await Promise.all([a.callTool('write_file', { path: 'a.txt', content: 'a' }), b.callTool('write_file', { path: 'b.txt', content: 'b' })]);
    const creates = fake.of('create');
    // Both are created; the gate's spacing (1 s apart) is asserted on a fake clock in test/core/e2b-wire.test.ts.
    expect(creates).toHaveLength(2);
    const [ma, mb] = creates.map((r) => bodyOf(r).metadata);
    expect(ma?.mcp_session).not.toBe(mb?.mcp_session);
    expect(ma?.mcp_owner).toBe(mb?.mcp_owner);
    await Promise.all([a.close(), b.close()]);
  });
});
