/**
 * Sessions survive instance loss (the session map is a cache; the signed id and the tagged sandbox are the
 * truth), in-process: instances are harnesses that share one stub "E2B" (which outlives them, as E2B does)
 * and one fake clock. A client's requests go to whichever instance the test routes them to, as FC does without
 * affinity, after a restart, or after eviction.
 */
import { rmSync } from 'node:fs';

import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import { connectClient, type TestClient, textOf } from '../support/clients';
import { createHarness, type Harness, type HarnessOptions, HARNESS_TOKEN, HARNESS_URL } from '../support/harness';
import { settle } from '../support/held-commands';
import { messagesOf, rpc } from '../support/raw-session';
import { makeSandboxRoot, uidClaimsIn, workspacesIn } from '../support/server';

const logsOf = (h: Harness, msg: string) => h.logs().filter((line) => line.msg === msg);

/** Instances of one deployment: one E2B, one clock, one secret. */
function deployment(options: HarnessOptions = {}) {
  const first = createHarness(options);
  const { clock, sdk } = first;
  const instance = (): Harness => createHarness({ ...options, clock, sdk });
  let current = first;
  /** A client whose requests go to the instance `route` names at the time. */
  const connect = (kind: 'v1' | 'v2' = 'v2'): Promise<TestClient> =>
    connectClient(kind, HARNESS_URL, { token: HARNESS_TOKEN, fetch: (input, init) => current.fetch(input, init) });
  return {
    clock,
    sdk,
    instance,
    connect,
    get current() {
      return current;
    },
    /** Routes later requests to `to`. */
    route(to: Harness) {
      current = to;
    },
  };
}

it.each(['v2', 'v1'] as const)(
  're-attaches the same sandbox, state included, when a %s session lands on a new instance',
  async (kind) => {
    const d = deployment();
    const state = new Map<string, string>();
    d.sdk.onSandbox = (sandbox) => {
      // A stand-in for the kernel: it lives in the sandbox, not in the server.
      sandbox.code = async (code) => {
        const assign = /^(\w+) = (\d+)$/.exec(code);
        if (assign?.[1] !== undefined && assign[2] !== undefined)
          state.set(`${sandbox.sandboxId}:${assign[1]}`, assign[2]);
        const value = state.get(`${sandbox.sandboxId}:${code}`);
        return { results: value === undefined ? [] : [{ text: value }] };
      };
    };
    const client = await d.connect(kind);
    await client.callTool('write_file', { path: 'data.csv', content: 'a,b\n' });
    await client.callTool('run_code', { code: 'total = 42' });

    // The first instance is gone without a word (SIGKILL, or FC reclaimed it); a new one takes the next request.
    const second = d.instance();
    d.route(second);
    expect((await client.callTool('read_file', { path: 'data.csv' })).structuredContent).toMatchObject({
      content: 'a,b\n',
    });
    expect((await client.callTool('run_code', { code: 'total' })).structuredContent).toMatchObject({
      results: [{ text: '42' }],
      state_lost: false,
    });
    // Found by its tags, re-attached, not re-created.
    expect(d.sdk.created).toHaveLength(1);
    expect(d.sdk.connects).toEqual(['sbx-1']);
    expect(d.sdk.lookups.find((lookup) => 'mcp_session' in lookup)).toEqual({
      mcp_session: d.sdk.sandboxes[0]?.metadata.mcp_session,
      mcp_owner: d.sdk.sandboxes[0]?.metadata.mcp_owner,
    });
    expect(logsOf(second, 'session recovered')).toEqual([expect.objectContaining({ protocol_version: '2025-11-25' })]);
    await client.terminate();
    expect(d.sdk.sandboxes[0]?.killed).toBe(true);
  },
);

it('goes on with a fresh sandbox, and says so once, when the old one is gone', async () => {
  const d = deployment();
  const client = await d.connect();
  await client.callTool('write_file', { path: 'lost.txt', content: 'x' });
  const old = d.sdk.sandboxes[0];
  if (old !== undefined) old.killed = true; // its lease ran out meanwhile
  d.route(d.instance());

  const result = await client.callTool('write_file', { path: 'new.txt', content: 'y' });
  expect(result.isError).toBeFalsy();
  expect(textOf(result)).toMatch(
    /^Note: no earlier sandbox of this session was found.*files and state from before are gone/s,
  );
  expect(d.sdk.created).toHaveLength(2);
  expect(textOf(await client.callTool('read_file', { path: 'new.txt' }))).not.toContain('Note:');
  await client.terminate();
});

it('rebuilds a session at the version its request names, and at 2025-03-26 when it names none', async () => {
  const d = deployment();
  const a = d.current;
  const modern = await a.openSession({ version: '2025-06-18' });
  const old = await a.openSession({ version: '2025-03-26' });
  const b = d.instance();
  expect((await b.post(rpc('ping', 1), modern.headers)).status).toBe(200);
  const { 'mcp-protocol-version': _v, ...noVersion } = old.headers;
  expect((await b.post(rpc('ping', 2), noVersion)).status).toBe(200);
  expect(logsOf(b, 'session recovered').map((l) => l.protocol_version)).toEqual(['2025-06-18', '2025-03-26']);
  // A batch is then accepted in the session rebuilt at 2025-03-26 only.
  expect(messagesOf(await b.post([rpc('ping', 3), rpc('ping', 4)], noVersion)).map((m) => m.id)).toEqual([3, 4]);
});

it('rebuilds a moved session once when its first requests on the new instance arrive together', async () => {
  const d = deployment();
  const { headers } = await d.current.openSession();
  const b = d.instance();
  const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => b.post(rpc('tools/list', 10 + i), headers)));
  expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
  expect(logsOf(b, 'session recovered')).toHaveLength(1);
});

it(
  'lets any instance end a session: DELETE on one that never held it kills the sandbox, and it answers 404 ' +
    'afterwards',
  async () => {
    const d = deployment();
    const a = d.current;
    const { headers } = await a.openSession();
    await a.post(rpc('tools/call', 2, { name: 'write_file', arguments: { path: 'x.txt', content: 'x' } }), headers);
    const b = d.instance();
    expect((await b.fetch(b.url, { method: 'DELETE', headers })).status).toBe(200);
    expect(d.sdk.sandboxes.map((s) => s.killed)).toEqual([true]);
    expect((await b.post(rpc('tools/list', 3), headers)).status).toBe(404);
  },
);

/**
 * A session written on A moves to B and is used there while A's copy goes idle past the TTL; back on A, A's
 * sweep lets its copy go (B used the sandbox lately) instead of destroying it, and the files are there.
 */
async function idleHereUsedElsewhere(
  d: ReturnType<typeof deployment>,
  ttlMs: number,
): Promise<{ a: Harness; b: Harness; client: TestClient }> {
  const a = d.current;
  const b = d.instance();
  const client = await d.connect();
  await client.callTool('write_file', { path: 'work.txt', content: 'precious' });
  d.route(b);
  for (let i = 0; i < 4; i += 1) {
    d.clock.advance(ttlMs / 2);
    await client.callTool('list_files');
  }
  d.route(a);
  expect((await client.callTool('read_file', { path: 'work.txt' })).structuredContent).toMatchObject({
    content: 'precious',
  });
  expect(logsOf(a, 'session released')).toEqual([expect.objectContaining({ reason: 'idle_here_used_elsewhere' })]);
  return { a, b, client };
}

it(
  'does not pause, on idle expiry, a sandbox that another instance still serves; pauses it once nobody has, and ' +
    'any instance wakes it for the session',
  async () => {
    const ttlMs = 60_000;
    const d = deployment({ env: { MCP_SESSION_IDLE_TTL_S: String(ttlMs / 1000) } });
    const { b, client } = await idleHereUsedElsewhere(d, ttlMs);
    expect(d.sdk.sandboxes.map((s) => s.state)).toEqual(['running']);

    // Nobody uses it for longer than the TTL: the next sweep on B puts it to sleep; the session is let go.
    d.clock.advance(ttlMs + 1);
    await b.openSession(); // any request sweeps
    await settle(() => logsOf(b, 'session asleep').length > 0);
    expect(logsOf(b, 'session asleep')).toEqual([expect.objectContaining({ reason: 'idle_asleep' })]);
    expect(d.sdk.sandboxes.map((s) => [s.state, s.killed])).toEqual([['paused', false]]);
    d.route(b);
    expect((await client.callTool('read_file', { path: 'work.txt' })).structuredContent).toMatchObject({
      content: 'precious',
    });
    expect(d.sdk.sandboxes.map((s) => s.state)).toEqual(['running']);
  },
);

it(
  'on the local backend too: a workspace another instance used within the TTL is let go, not deleted (its ' +
    'last-used marker)',
  async () => {
    const ttlMs = 60_000;
    const root = makeSandboxRoot();
    try {
      const d = deployment({
        env: { SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_ROOT: root, MCP_SESSION_IDLE_TTL_S: String(ttlMs / 1000) },
        sandboxes: ({ config, logger, clock }) => createSandboxProvider(config, logger, clock),
      });
      const { client } = await idleHereUsedElsewhere(d, ttlMs);
      await client.terminate();
      expect({ workspaces: workspacesIn(root), uids: uidClaimsIn(root) }).toEqual({ workspaces: [], uids: [] });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
);
