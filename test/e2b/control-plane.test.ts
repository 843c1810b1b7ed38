/**
 * E2B's control plane as the built bundle uses it through the real E2B SDK, against the local E2B service, on
 * each Node: what the SDK sends on create and kill, how E2B's answers (401, 429, 503, 500) reach the caller,
 * the creation throttle and template, and that the API key never leaks. The service takes this file's own key,
 * so that every slice of it can be looked for in what the server says. (The schedule of 429 retries and gate
 * waits is asserted on a fake clock in test/core/e2b-create-schedule.test.ts; a sandbox lost mid-session, in
 * test/e2b/lifecycle.test.ts.)
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { connectClient, textOf, type TestClient, type ToolResult } from '../support/clients';
import { type LocalE2B, type RecordedRequest, startLocalE2B } from '../support/e2b-local';
import { NODES, ok, serviceDescribe, WIRE_TOKEN } from '../support/e2b-wire';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { startServer, type StartedServer } from '../support/server';

const KEY = `e2b_${randomBytes(20).toString('hex')}`;

/** Every 8-character slice of the key's secret part: none may appear anywhere. */
const KEY_PARTS = Array.from({ length: KEY.length - 4 - 7 }, (_, i) => KEY.slice(4 + i, 12 + i));
function keyPartsIn(text: string): string[] {
  return KEY_PARTS.filter((part) => text.includes(part));
}

/** A tool failure the caller can act on: isError, one line of our text, no stack, no key. */
function expectCleanError(result: ToolResult): string {
  const text = textOf(result);
  expect(result.isError).toBe(true);
  expect(text).not.toMatch(/\n\s+at |\.js:\d+/);
  expect(keyPartsIn(JSON.stringify(result))).toEqual([]);
  return text;
}

/** An E2B-style error answer. */
const apiError = (status: number, message: string, headers?: Record<string, string>) => ({
  status,
  headers,
  body: { code: status, message },
});

interface CreateBody {
  templateID: string;
  timeout: number;
  metadata: Record<string, string>;
}
const bodyOf = (r: RecordedRequest | undefined): CreateBody => r?.body as CreateBody;

/** The local service with this file's key, and a server on `node` pointed at it. */
interface Deployment {
  readonly e2b: LocalE2B;
  readonly server: StartedServer;
  /** What the service saw since `mark` (a count of `requests()`), on `route`. */
  since(mark: number, route: RecordedRequest['route']): RecordedRequest[];
  stop(): Promise<void>;
}

async function deploy(node: string, env: Record<string, string> = {}): Promise<Deployment> {
  const e2b = await startLocalE2B({ apiKey: KEY });
  try {
    const server = await startServer({
      node,
      env: {
        SANDBOX_BACKEND: 'e2b',
        ...e2b.env(),
        MCP_AUTH_TOKENS: WIRE_TOKEN,
        MCP_SESSION_IDLE_TTL_S: '900',
        E2B_MAX_CREATES_PER_S: '50',
        ...env,
      },
    });
    return {
      e2b,
      server,
      since: (mark, route) =>
        e2b
          .requests()
          .slice(mark)
          .filter((r) => r.route === route),
      async stop() {
        await server.stop();
        await e2b.stop();
      },
    };
  } catch (err: unknown) {
    await e2b.stop();
    throw err;
  }
}

serviceDescribe.each(NODES)('the E2B control plane as the server uses it, server on %s', (_name, node) => {
  let d: Deployment;
  let requestsAtStart = -1;
  beforeAll(async () => {
    d = await deploy(node, { LOG_LEVEL: 'debug' });
    requestsAtStart = d.e2b.requests().length;
  });
  afterAll(() => d?.stop());
  let client: TestClient | undefined;
  let mark = 0;
  beforeEach(() => {
    mark = d.e2b.requests().length;
  });
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });
  const connect = async (): Promise<TestClient> =>
    (client = await connectClient('v2', d.server.url, { token: WIRE_TOKEN }));
  const status = async (c: TestClient) =>
    ok<{ state: string; sandbox_id: string | null }>(await c.callTool('sandbox_status'));

  it(
    'reports backend e2b and ready on /health, ' + 'with no part of the API key, and calls E2B on start-up not at all',
    async () => {
      const res = await fetch(`${d.server.origin}/health`);
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(JSON.parse(text)).toMatchObject({
        status: 'ok',
        backend: { name: 'e2b', ready: true, isolation: 'e2b-microvm' },
      });
      expect(keyPartsIn(text)).toEqual([]);
      expect(requestsAtStart).toBe(0);
    },
  );

  it('calls E2B for neither initialize, tools/list nor sandbox_status', async () => {
    const c = await connect();
    expect((await c.listTools()).tools).toHaveLength(15);
    expect(await status(c)).toMatchObject({ state: 'not_started', sandbox_id: null });
    expect(d.e2b.requests().slice(mark)).toEqual([]);
  });

  it(
    'creates exactly one sandbox on the first tool that needs one: ' + 'template, lease, hashed tags, key header',
    async () => {
      const health = (await (await fetch(`${d.server.origin}/health`)).json()) as { name: string; version: string };
      const c = await connect();
      const sessionId = c.sessionId ?? '';
      ok(await c.callTool('write_file', { path: 'notes.txt', content: 'hello' }));

      const creates = d.since(mark, 'create');
      expect(creates).toHaveLength(1);
      expect(creates[0]?.headers['x-api-key']).toBe(KEY);
      const body = bodyOf(creates[0]);
      // The lease: the idle TTL (900 s) and the renewal interval (30 s) after it.
      // It pauses itself, with its memory, when its lease runs out with no instance left to do it; only this server
      // wakes it.
      expect(body).toMatchObject({
        templateID: 'code-interpreter-v1',
        timeout: 930,
        autoPause: true,
        autoPauseMemory: true,
        autoResume: { enabled: false },
      });
      expect(Object.keys(body.metadata).sort()).toEqual([
        'mcp_created',
        'mcp_owner',
        'mcp_server',
        'mcp_session',
        'mcp_sleep',
        'mcp_template',
        'mcp_until',
        'mcp_version',
      ]);
      expect(body.metadata).toMatchObject({
        mcp_server: health.name,
        mcp_version: health.version,
        mcp_sleep: 'memory',
        mcp_template: 'code-interpreter-v1',
        mcp_created: expect.stringMatching(/^\d{13}$/),
        // Until when its session id can name it: its issue time plus MCP_SESSION_MAX_AGE_S (and a second).
        mcp_until: expect.stringMatching(/^\d{13}$/),
      });
      for (const tag of [body.metadata.mcp_session, body.metadata.mcp_owner]) {
        expect(tag).toMatch(/^[0-9a-f]{16,64}$/);
        expect(tag).not.toBe(sessionId);
      }
      const wholeBody = JSON.stringify(creates[0]?.body);
      expect(sessionId.length).toBeGreaterThan(15);
      expect(wholeBody.includes(sessionId)).toBe(false);
      expect(wholeBody.includes(WIRE_TOKEN)).toBe(false);
      expect(keyPartsIn(wholeBody)).toEqual([]);

      // The sandbox the service made, with those tags, is the session's; the write went to its envd.
      const made = d.e2b.sandboxes().filter((s) => s.metadata.mcp_session === body.metadata.mcp_session);
      expect(made.map((s) => ({ templateId: s.templateId, metadata: s.metadata }))).toEqual([
        { templateId: 'code-interpreter-v1', metadata: body.metadata },
      ]);
      const id = made[0]!.sandboxId;
      expect(new Set(d.since(mark, 'envd').map((r) => r.sandboxId))).toEqual(new Set([id]));
      expect(readFileSync(d.e2b.hostPath(id, '/home/user/notes.txt'), 'utf8')).toBe('hello');
      expect(await status(c)).toMatchObject({ state: 'running', sandbox_id: id });
    },
  );

  it('creates one sandbox for three concurrent first calls of a session', async () => {
    const c = await connect();
    const results = await Promise.all([
      c.callTool('write_file', { path: 'a.txt', content: 'a' }),
      c.callTool('read_file', { path: 'never-written.txt' }),
      c.callTool('list_files', {}),
    ]);
    expect(results.map((r) => r.isError === true)).toEqual([false, true, false]);
    expect(d.since(mark, 'create')).toHaveLength(1);
    const { sandbox_id: id } = await status(c);
    expect(new Set(d.since(mark, 'envd').map((r) => r.sandboxId))).toEqual(new Set([id]));
  });

  it(
    'kills the session’s sandbox with DELETE /sandboxes/<id>, ' + 'with the key, when the client ends the session',
    async () => {
      const c = await connect();
      ok(await c.callTool('write_file', { path: 'x.txt', content: 'x' }));
      const { sandbox_id: id } = await status(c);
      await c.terminate();
      client = undefined;
      const kills = await pollUntil(
        () => d.since(mark, 'kill'),
        (k) => k.length > 0,
        SETTLE_MS,
      );
      expect(kills.map((r) => `${r.method} ${r.path}`)).toEqual([`DELETE /sandboxes/${id}`]);
      expect(kills[0]?.headers['x-api-key']).toBe(KEY);
      expect(d.e2b.sandboxes().map((s) => s.sandboxId)).not.toContain(id);
    },
  );

  it('tells the caller to check E2B_API_KEY when E2B answers 401, without retrying', async () => {
    d.e2b.fault('create', apiError(401, 'Invalid API key'));
    const c = await connect();
    const text = expectCleanError(await c.callTool('write_file', { path: 'a.txt', content: 'a' }));
    expect(text).toContain('check E2B_API_KEY');
    expect(d.since(mark, 'create')).toHaveLength(1);
  });

  it('says E2B is temporarily unavailable when E2B answers 503, without the key it quotes', async () => {
    d.e2b.fault('create', apiError(503, `overloaded (key ${KEY})`));
    const c = await connect();
    const text = expectCleanError(await c.callTool('run_command', { command: 'true' }));
    expect(text).toMatch(/E2B is temporarily unavailable/);
  });

  it('redacts the key from an unexpected E2B error that quotes it', async () => {
    d.e2b.fault('create', apiError(500, `internal failure for X-API-KEY: ${KEY}`));
    const c = await connect();
    const text = expectCleanError(await c.callTool('write_file', { path: 'a.txt', content: 'a' }));
    expect(text).toContain('creating the sandbox');
  });

  it('retries a create that got 429 (with Retry-After) and then creates the sandbox', async () => {
    d.e2b.fault('create', apiError(429, 'rate limited', { 'retry-after': '1' }));
    const c = await connect();
    ok(await c.callTool('write_file', { path: 'a.txt', content: 'a' }));
    // Retried once (the backoff's schedule is asserted on a fake clock in test/core/e2b-create-schedule.test.ts).
    expect(d.since(mark, 'create')).toHaveLength(2);
    const { state, sandbox_id: id } = await status(c);
    expect(state).toBe('running');
    expect(d.e2b.sandboxes().map((s) => s.sandboxId)).toContain(id);
  });

  it('never writes the API key (or any part of it) to stdout or stderr', () => {
    expect(d.server.logs().some((l) => l.msg === 'sandbox created')).toBe(true);
    expect(keyPartsIn(d.server.stdout())).toEqual([]);
    expect(keyPartsIn(d.server.stderr())).toEqual([]);
  });
});

serviceDescribe.each(NODES)('E2B_TEMPLATE=my-template and E2B_MAX_CREATES_PER_S=1, server on %s', (_name, node) => {
  let d: Deployment;
  beforeAll(async () => {
    d = await deploy(node, { E2B_TEMPLATE: 'my-template', E2B_MAX_CREATES_PER_S: '1' });
  });
  afterAll(() => d?.stop());

  it(
    'creates the sandboxes of two sessions starting at once from that template, tagged per session and with one ' +
      'owner',
    async () => {
      const [a, b] = await Promise.all([
        connectClient('v2', d.server.url, { token: WIRE_TOKEN }),
        connectClient('v2', d.server.url, { token: WIRE_TOKEN }),
      ]);
      const results = await Promise.all([
        a.callTool('write_file', { path: 'a.txt', content: 'a' }),
        b.callTool('write_file', { path: 'b.txt', content: 'b' }),
      ]);
      for (const r of results) ok(r);
      const creates = d.since(0, 'create');
      // Both are created; the gate's spacing (1 s apart) is asserted on a fake clock in
      // test/core/e2b-create-schedule.test.ts.
      expect(creates.map((r) => bodyOf(r).templateID)).toEqual(['my-template', 'my-template']);
      expect(d.e2b.sandboxes().map((s) => s.templateId)).toEqual(['my-template', 'my-template']);
      const [ma, mb] = creates.map((r) => bodyOf(r).metadata);
      expect(ma?.mcp_session).not.toBe(mb?.mcp_session);
      expect(ma?.mcp_owner).toBe(mb?.mcp_owner);
      await Promise.all([a.close(), b.close()]);
    },
  );
});
