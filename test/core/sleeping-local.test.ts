/**
 * Work that lasts days on the local backend: named sandboxes that belong to their credential, sleep when idle (no
 * process left, files kept) and wake for the next call, across a server restart; retention, the caps, forks,
 * naming and deletion. In-process instances of one deployment sharing LOCAL_SANDBOX_ROOT on one fake clock, with
 * the real local backend (bubblewrap, and disk images where the host has them) and the official v2 client.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import type { TestClient, ToolResult } from '../support/clients';
import { removeRootWithDisks } from '../support/disks';
import { createFakeClock, type FakeClock } from '../support/fake-clock';
import { createHarness, type Harness, HARNESS_OTHER_TOKEN, type HarnessOptions } from '../support/harness';
import { needs } from '../support/needs';
import { markedSleep, pollUntil, processesWithCmdline, SETTLE_MS } from '../support/processes';
import { makeSandboxRoot, workspacesIn } from '../support/server';

type SandboxDeps = Parameters<NonNullable<HarnessOptions['sandboxes']>>[0];

const TTL_S = 60;
const DAY_MS = 86_400_000;
let root: string;
const open: Harness[] = [];
beforeEach(() => {
  root = makeSandboxRoot();
});
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  removeRootWithDisks(root);
});

/** Instances of one deployment: `instance()` starts one more (a restart is a new instance on the same root). */
function deployment(env: Record<string, string> = {}): { clock: FakeClock; instance: () => Harness } {
  const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const options: HarnessOptions = {
    clock,
    env: { SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_ROOT: root, MCP_SESSION_IDLE_TTL_S: String(TTL_S), ...env },
    sandboxes: ({ config, logger, clock: c }: SandboxDeps) => createSandboxProvider(config, logger, c),
  };
  return {
    clock,
    instance() {
      const h = createHarness(options);
      open.push(h);
      return h;
    },
  };
}

const out = <T>(result: ToolResult): T => {
  if (result.isError === true) throw new Error(`tool failed: ${result.content[0]?.text ?? ''}`);
  return result.structuredContent as T;
};
const textOf = (result: ToolResult): string => result.content.map((c) => c.text ?? '').join('\n');
interface Listed {
  name: string | null;
  sandbox_id: string | null;
  state: string;
  last_used_at: string;
  delete_at: string;
  current: boolean;
}
const listOf = async (client: TestClient): Promise<Listed[]> =>
  out<{ sandboxes: Listed[] }>(await client.callTool('list_sandboxes')).sandboxes;
const asleepIn = (h: Harness): number => h.logs().filter((l) => l.msg === 'sandbox asleep').length;
/**
 * Moves the clock past the idle TTL and sends a request that touches no sandbox: the sweep puts idle ones to sleep
 * (`sandboxes` of them, named: the wait ends once they are asleep).
 */
const idle = async (h: Harness, clock: FakeClock, sandboxes = 0): Promise<void> => {
  const before = asleepIn(h);
  clock.advance(TTL_S * 1000 + 1);
  await h.openSession();
  await pollUntil(
    () => asleepIn(h) - before,
    (slept) => slept >= sandboxes,
    SETTLE_MS,
  );
};

needs('bubblewrap').describe('named sandboxes that sleep and wake, local backend', () => {
  it(
    'day 1 opens proj, writes files, sets Python state, starts a server; idle, it sleeps with no process left; ' +
      'after a restart day 2 lists and opens it and finds its files, told what was stopped',
    async () => {
      const { clock, instance } = deployment();
      const day1 = instance();
      const a = await day1.connect();
      const created = out<{ state: string; sandbox_id: string }>(await a.callTool('open_sandbox', { name: 'proj' }));
      expect(created.state).toBe('created');
      out(await a.callTool('write_file', { path: 'notes.txt', content: 'day one' }));
      out(await a.callTool('run_code', { code: 'x = 42' }));
      const server = markedSleep(1000);
      out(await a.callTool('run_command', { command: server, background: true }));
      // Started means spawned: the exec of `sleep` may still be on its way on a busy machine.
      expect(
        await pollUntil(
          () => processesWithCmdline(server),
          (found) => found.length > 0,
          SETTLE_MS,
        ),
      ).toHaveLength(1);
      const status = out<{ name: string; sleep: { mode: string } }>(await a.callTool('sandbox_status'));
      expect(status).toMatchObject({ name: 'proj', sleep: { mode: 'files' } });

      await idle(day1, clock, 1);
      await pollUntil(
        () => processesWithCmdline(server),
        (left) => left.length === 0,
        SETTLE_MS,
      );
      expect(processesWithCmdline(server)).toEqual([]);
      await day1.close();

      const day2 = instance();
      const b = await day2.connect();
      expect(await listOf(b)).toEqual([
        expect.objectContaining({ name: 'proj', sandbox_id: created.sandbox_id, state: 'sleeping', current: false }),
      ]);
      const woken = await b.callTool('open_sandbox', { name: 'proj' });
      expect(out(woken)).toMatchObject({
        state: 'woken',
        sandbox_id: created.sandbox_id,
        kept: ['files'],
        stopped_processes: [{ process_id: 'p1', command: server }],
      });
      expect(textOf(woken)).toContain('was asleep');
      expect(out<{ content: string }>(await b.callTool('read_file', { path: 'notes.txt' })).content).toBe('day one');
      const state = await b.callTool('run_code', { code: 'print(x)' });
      expect(out<{ state_lost: boolean }>({ ...state, isError: false }).state_lost).toBe(true);
      expect((await listOf(b)).map((s) => [s.name, s.state, s.current])).toEqual([['proj', 'running', true]]);
    },
  );

  it('keeps a sandbox from another credential: it neither lists nor opens nor deletes it', async () => {
    const { instance } = deployment();
    const h = instance();
    const mine = await h.connect();
    const made = out<{ sandbox_id: string }>(await mine.callTool('open_sandbox', { name: 'proj' }));
    out(await mine.callTool('write_file', { path: 'secret.txt', content: 'mine' }));
    const other = await h.connect({ token: HARNESS_OTHER_TOKEN });
    expect(await listOf(other)).toEqual([]);
    const deleted = await other.callTool('delete_sandbox', { name: 'proj' });
    expect(deleted.isError).toBe(true);
    expect(textOf(deleted)).toBe('You have no sandbox named "proj"; list_sandboxes shows yours.');
    // Its own "proj" is a new, empty sandbox: a name is the owner's.
    const theirs = out<{ state: string; sandbox_id: string }>(await other.callTool('open_sandbox', { name: 'proj' }));
    expect(theirs.state).toBe('created');
    expect(theirs.sandbox_id).not.toBe(made.sandbox_id);
    expect((await other.callTool('read_file', { path: 'secret.txt' })).isError).toBe(true);
    expect(out<{ content: string }>(await mine.callTool('read_file', { path: 'secret.txt' })).content).toBe('mine');
  });

  it('lists a running sandbox as last used at its last call, and its deletion date from then', async () => {
    const { clock, instance } = deployment({ MCP_SANDBOX_RETENTION_S: String(2 * 86_400) });
    const a = await instance().connect();
    out(await a.callTool('open_sandbox', { name: 'proj' }));
    clock.advance(TTL_S * 500);
    out(await a.callTool('run_command', { command: 'true' }));
    const [listed] = await listOf(a);
    const lastCall = clock.now();
    expect(listed).toMatchObject({
      state: 'running',
      last_used_at: new Date(lastCall).toISOString(),
      delete_at: new Date(lastCall + 2 * DAY_MS).toISOString(),
    });
  });

  it(
    'deletes a sleeping sandbox once MCP_SANDBOX_RETENTION_S ' + 'passes without use, and keeps one used since',
    async () => {
      const { clock, instance } = deployment({ MCP_SANDBOX_RETENTION_S: String(2 * 86_400) });
      const h = instance();
      const a = await h.connect();
      out(await a.callTool('open_sandbox', { name: 'old' }));
      out(await a.callTool('open_sandbox', { name: 'kept' }));
      await idle(h, clock, 2);
      clock.advance(DAY_MS);
      // A day later "kept" is used again: its retention starts over.
      const c = await h.connect();
      out(await c.callTool('open_sandbox', { name: 'kept' }));
      await idle(h, clock, 1);
      expect(workspacesIn(root)).toHaveLength(2);
      clock.advance(DAY_MS);
      const d = await h.connect();
      expect((await listOf(d)).map((s) => s.name)).toEqual(['kept']);
      expect(workspacesIn(root)).toHaveLength(1);
      clock.advance(DAY_MS);
      expect(await listOf(await h.connect())).toEqual([]);
      expect(workspacesIn(root)).toEqual([]);
    },
  );

  it(
    'makes room at MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL: the least recently used sleeping sandbox goes, and the ' +
      'result that made room says which',
    async () => {
      const { clock, instance } = deployment({ MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL: '2' });
      const h = instance();
      const a = await h.connect();
      out(await a.callTool('open_sandbox', { name: 'first' }));
      clock.advance(1000);
      out(await a.callTool('open_sandbox', { name: 'second' }));
      await idle(h, clock, 2);
      const b = await h.connect();
      const third = await b.callTool('open_sandbox', { name: 'third' });
      expect(out<{ deleted_to_make_room: Array<{ name: string }> }>(third).deleted_to_make_room).toEqual([
        expect.objectContaining({ name: 'first' }),
      ]);
      expect(textOf(third)).toContain('MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL');
      expect((await listOf(b)).map((s) => s.name).sort()).toEqual(['second', 'third']);
      // Another credential's sandboxes are not counted, and not touched.
      const other = await h.connect({ token: HARNESS_OTHER_TOKEN });
      expect(
        out<{ deleted_to_make_room: unknown[] }>(await other.callTool('open_sandbox', { name: 'x' }))
          .deleted_to_make_room,
      ).toEqual([]);
    },
  );

  it('forks a sandbox: the copy has the files, and the two are independent from then on', async () => {
    const { instance } = deployment();
    const h = instance();
    const a = await h.connect();
    out(await a.callTool('open_sandbox', { name: 'base' }));
    out(await a.callTool('write_file', { path: 'src/app.py', content: 'print(1)' }));
    const fork = out<{ state: string }>(await a.callTool('open_sandbox', { name: 'experiment', from: 'base' }));
    expect(fork.state).toBe('forked');
    expect(out<{ content: string }>(await a.callTool('read_file', { path: 'src/app.py' })).content).toBe('print(1)');
    out(await a.callTool('write_file', { path: 'src/app.py', content: 'print(2)' }));
    out(await a.callTool('open_sandbox', { name: 'base' }));
    expect(out<{ content: string }>(await a.callTool('read_file', { path: 'src/app.py' })).content).toBe('print(1)');
    const listed = await listOf(a);
    expect(new Set(listed.map((s) => s.sandbox_id)).size).toBe(2);
    const refused = await a.callTool('open_sandbox', { name: 'base', from: 'experiment' });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('already');
  });

  it(
    'sleeps a session’s unnamed sandbox and wakes it for its session id; names it later with name_sandbox; deletes ' +
      'the unnamed one once no id can reach it',
    async () => {
      const { clock, instance } = deployment();
      const h = instance();
      const a = await h.connect();
      out(await a.callTool('write_file', { path: 'draft.txt', content: 'unnamed work' }));
      const scratch = await h.connect();
      out(await scratch.callTool('write_file', { path: 'tmp.txt', content: 'scratch' }));
      await idle(h, clock);
      await pollUntil(
        () => h.logs().filter((l) => l.msg === 'session asleep').length,
        (n) => n >= 2,
        SETTLE_MS,
      );
      // The same session goes on: its sandbox wakes with its files.
      const woke = await a.callTool('read_file', { path: 'draft.txt' });
      expect(out<{ content: string }>(woke).content).toBe('unnamed work');
      expect(textOf(woke)).toContain('was asleep');
      const named = out<{ name: string; state: string }>(await a.callTool('name_sandbox', { name: 'draft' }));
      expect(named).toMatchObject({ name: 'draft', state: 'forked' });
      expect(out<{ content: string }>(await a.callTool('read_file', { path: 'draft.txt' })).content).toBe(
        'unnamed work',
      );
      // Past every id's max age (6 h) the scratch session's sandbox can be reached by nothing: it goes; "draft" stays.
      clock.advance(7 * 3_600_000);
      const later = await h.connect();
      expect((await listOf(later)).map((s) => s.name)).toEqual(['draft']);
    },
  );

  it('opens one sandbox for a name opened at once by sessions of two instances sharing the root', async () => {
    const { instance } = deployment();
    const [a, b] = [instance(), instance()];
    const clients = await Promise.all([a.connect(), a.connect(), b.connect(), b.connect()]);
    const opened = await Promise.all(clients.map((c) => c.callTool('open_sandbox', { name: 'proj' })));
    expect(new Set(opened.map((r) => out<{ sandbox_id: string }>(r).sandbox_id)).size).toBe(1);
    expect(workspacesIn(root)).toHaveLength(1);
    out(await clients[0]!.callTool('write_file', { path: 'shared.txt', content: 'one' }));
    expect(out<{ content: string }>(await clients[3]!.callTool('read_file', { path: 'shared.txt' })).content).toBe(
      'one',
    );
  });

  it('deletes a named sandbox for good: the session that worked in it is told, the name is free again', async () => {
    const { instance } = deployment();
    const h = instance();
    const a = await h.connect();
    out(await a.callTool('open_sandbox', { name: 'proj' }));
    out(await a.callTool('write_file', { path: 'f.txt', content: '1' }));
    const other = await h.connect();
    out(await other.callTool('open_sandbox', { name: 'proj' }));
    const deleted = out<{ was_current: boolean }>(await other.callTool('delete_sandbox', { name: 'proj' }));
    expect(deleted.was_current).toBe(true);
    const after = await a.callTool('read_file', { path: 'f.txt' });
    expect(after.isError).toBe(true);
    expect(textOf(after)).toContain('no longer exists');
    const again = out<{ state: string }>(await a.callTool('open_sandbox', { name: 'proj' }));
    expect(again.state).toBe('created');
    expect((await a.callTool('read_file', { path: 'f.txt' })).isError).toBe(true);
  });
});

needs('bubblewrap', 'disk images').describe('the disk cap of sleeping sandboxes (local disk images)', () => {
  it(
    'deletes the least recently used sleeping sandbox once their disk ' +
      'passes MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL',
    async () => {
      const { clock, instance } = deployment({
        MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL: '6',
        LOCAL_SANDBOX_DISK_MB: '64',
      });
      const h = instance();
      const a = await h.connect();
      for (const name of ['one', 'two']) {
        out(await a.callTool('open_sandbox', { name }));
        out(await a.callTool('run_command', { command: 'head -c 4000000 /dev/urandom > blob && sync' }));
        clock.advance(1000);
      }
      await idle(h, clock, 2);
      const b = await h.connect();
      expect((await listOf(b)).map((s) => s.name)).toEqual(['two']);
      expect(h.logs()).toContainEqual(
        expect.objectContaining({
          msg: 'sleeping sandboxes deleted for room',
          limit: 'MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL',
        }),
      );
      expect(readdirSync(join(root, '.disks')).filter((f) => f.endsWith('.img'))).toHaveLength(1);
      expect(existsSync(join(root, '.sandboxes'))).toBe(true);
    },
  );
});
