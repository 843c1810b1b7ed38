/**
 * Disk follows what can be reached (sandbox/local/workspace-sweep.ts, sandbox/record-catalog.ts): workspaces no
 * session, handle or name can come back for are deleted, on the sweep and at start-up, and never one a live session
 * uses. In-process on a fake clock, the real local backend.
 */
import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import { toWorkspaceName } from '../../functions/mcp/sandbox/local/workspace';
import { createFakeClock } from '../support/fake-clock';
import { createHarness, type Harness, type HarnessOptions } from '../support/harness';
import { messagesOf, rpc } from '../support/raw-session';
import { makeSandboxRoot, uidClaimsIn, workspacesIn } from '../support/server';

type SandboxDeps = Parameters<NonNullable<HarnessOptions['sandboxes']>>[0];
const TTL_S = 60;
const TOOL_MAX_S = 30;
/** The idle TTL, the longest call and the margin (create-provider.ts): past this a workspace is abandoned. */
const STALE_MS = (TTL_S + TOOL_MAX_S) * 1000 + 60_000;

let root: string;
beforeEach(() => {
  root = makeSandboxRoot();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const instance = (
  clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z')),
  env: Record<string, string> = {},
): Harness =>
  createHarness({
    clock,
    env: {
      SANDBOX_BACKEND: 'local',
      LOCAL_SANDBOX_ROOT: root,
      LOCAL_SANDBOX_ISOLATION: 'none',
      LOCAL_SANDBOX_DISK_MB: '0',
      MCP_SESSION_IDLE_TTL_S: String(TTL_S),
      MCP_TOOL_TIMEOUT_MAX_S: String(TOOL_MAX_S),
      ...env,
    },
    sandboxes: ({ config, logger, clock: c }: SandboxDeps) => createSandboxProvider(config, logger, c),
  });
const write = (h: Harness, headers: Record<string, string>, id = 5) =>
  h.post(rpc('tools/call', id, { name: 'write_file', arguments: { path: 'a.txt', content: 'a' } }), headers);
const turns = async (done: () => boolean): Promise<void> => {
  for (let turn = 0; turn < 20_000 && !done(); turn += 1) await new Promise((resolve) => setImmediate(resolve));
};

it(
  'keeps the workspaces of sessions let go or asleep until no id can reach them (MCP_SESSION_MAX_AGE_S), deletes ' +
    'those of handle-less sandboxes whose handles never came back, and keeps the live one',
  async () => {
    const h = instance(undefined, { MCP_MAX_SESSIONS: '3', MCP_MAX_SESSIONS_PER_CREDENTIAL: '3' });
    const modern = await h.connectModern();
    for (let i = 0; i < 6; i += 1) {
      const { headers } = await h.openSession();
      expect((await write(h, headers)).status).toBe(200);
      h.clock.advance(1); // each step later than the last: least recently used is then defined
      await modern.callTool({ name: 'write_file', arguments: { path: 'b.txt', content: 'b' } });
      h.clock.advance(1);
    }
    // Evicted sessions keep their files: they may come back. The handle-less sandboxes let go (their handles never
    // came back) were destroyed: at three running sandboxes a credential lets its least recently used go, so of the
    // handles only the last two still have theirs. 6 sessions' workspaces and 2 sandboxes.
    expect(workspacesIn(root)).toHaveLength(8);
    h.clock.advance(STALE_MS + 1);
    await modern.callTool({ name: 'sandbox_status', arguments: {} }); // the 2026 lane sweeps its idle sandboxes
    await turns(() => workspacesIn(root).length <= 6);
    // Asleep, the sessions' workspaces stay for their ids.
    expect(workspacesIn(root)).toHaveLength(6);
    // Past the ids' max age nothing can reach them: the sweep a new sandbox starts deletes them.
    h.clock.advance(6 * 3_600_000);
    const live = await h.openSession();
    expect((await write(h, live.headers, 6)).status).toBe(200);
    await turns(() => workspacesIn(root).length <= 1 && uidClaimsIn(root).length <= 1);
    expect(workspacesIn(root)).toHaveLength(1);
    expect(uidClaimsIn(root)).toHaveLength(1);
    const swept = () => h.logs().filter((line) => line.msg === 'sandboxes past their retention deleted');
    await turns(() => swept().length > 0);
    expect(Number(swept()[0]?.count)).toBe(6);
    await h.close();
  },
);

it('at start-up deletes leftovers past their time, and keeps a workspace another instance used lately', async () => {
  const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const old = join(root, toWorkspaceName('left-behind'));
  const recent = join(root, toWorkspaceName('used-elsewhere'));
  for (const [dir, ageMs] of [
    [old, STALE_MS + 1_000],
    [recent, STALE_MS - 10_000],
  ] as const) {
    mkdirSync(join(dir, 'home'), { recursive: true });
    writeFileSync(join(dir, 'last-used'), '');
    const at = new Date(clock.now() - ageMs);
    utimesSync(join(dir, 'last-used'), at, at);
  }
  const h = instance(clock);
  await h.core.ready();
  await turns(() => workspacesIn(root).length === 1);
  expect(workspacesIn(root)).toEqual([toWorkspaceName('used-elsewhere')]);
});

it(
  'never deletes a workspace whose sandbox is open here, ' + 'even when its marker is stale (a call still running)',
  async () => {
    const h = instance();
    const busy = await h.openSession();
    const hold = join(root, 'release-me');
    const running = h.post(
      rpc('tools/call', 5, {
        name: 'run_command',
        arguments: { command: `while [ ! -e ${hold} ]; do sleep 0.05; done; echo done > out.txt` },
      }),
      busy.headers,
    );
    await turns(() => workspacesIn(root).length === 1);
    h.clock.advance(STALE_MS + 1);
    const other = await h.openSession();
    expect((await write(h, other.headers, 6)).status).toBe(200); // sweeps (and the idle TTL passed for the busy one)
    await h.core.ready();
    await turns(() => h.logs().some((line) => line.msg === 'abandoned workspaces deleted'));
    writeFileSync(hold, '');
    const result = await running;
    expect(JSON.stringify(messagesOf(result))).toContain('"exit_code":0');
    expect(workspacesIn(root)).toHaveLength(2);
    await h.close();
  },
);
