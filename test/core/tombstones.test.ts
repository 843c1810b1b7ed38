/**
 * Ended means ended everywhere (sandbox/tombstones.ts): a session DELETEd on one instance with a sandbox (or whose
 * sandbox a backend that cannot sleep destroyed when idle) is refused by every instance that shares the directory
 * (LOCAL_SANDBOX_ROOT, E2B_STATE_DIR) and after a restart, for as long as its id could be valid; the records are small
 * and few files hold them; a session that never had a sandbox leaves none, and one whose sandbox sleeps leaves none.
 * In-process, instances on one fake clock: the real local backend, or the real E2B provider over the SDK stub with a
 * state directory.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import { createTombstoneStore, sweepTombstones } from '../../functions/mcp/sandbox/tombstones';
import { toIssuedAtMs } from '../../functions/mcp/sessions/session-id';
import { StubSdk } from '../support/e2b-stub';
import { createFakeClock, type FakeClock } from '../support/fake-clock';
import { createHarness, type Harness, type HarnessOptions } from '../support/harness';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { errorOf, rpc } from '../support/raw-session';
import { makeSandboxRoot, workspacesIn } from '../support/server';

type SandboxDeps = Parameters<NonNullable<HarnessOptions['sandboxes']>>[0];

const TTL_S = 60;
const START_MS = Date.parse('2030-01-01T00:00:00Z');
const HOUR_MS = 3_600_000;
/** `<32 hex> <13 digits>\n` */
const RECORD_BYTES = 47;
let root: string;
beforeEach(() => {
  root = makeSandboxRoot();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const endedDir = (): string => join(root, '.ended');
const endedFiles = (): string[] => (existsSync(endedDir()) ? readdirSync(endedDir()).sort() : []);
const endedBytes = (): number => endedFiles().reduce((sum, name) => sum + statSync(join(endedDir(), name)).size, 0);

/** Instances of one deployment on the real local backend, sharing LOCAL_SANDBOX_ROOT; `another()` starts one more. */
const localInstances = (): [Harness, Harness, () => Harness] => {
  const clock = createFakeClock(START_MS);
  const options = {
    clock,
    env: {
      SANDBOX_BACKEND: 'local',
      LOCAL_SANDBOX_ROOT: root,
      LOCAL_SANDBOX_ISOLATION: 'none',
      LOCAL_SANDBOX_DISK_MB: '0',
      MCP_SESSION_IDLE_TTL_S: String(TTL_S),
    },
    sandboxes: ({ config, logger, clock: c }: SandboxDeps) => createSandboxProvider(config, logger, c),
  };
  return [createHarness(options), createHarness(options), () => createHarness(options)];
};

/** An instance on the E2B backend (the SDK stub, shared by the deployment) with `root` as E2B_STATE_DIR. */
const e2bInstance = (shared: { sdk: StubSdk; clock: FakeClock }, env: Record<string, string> = {}): Harness =>
  createHarness({ ...shared, env: { E2B_STATE_DIR: root, MCP_SESSION_IDLE_TTL_S: String(TTL_S), ...env } });
const deployment = (): { sdk: StubSdk; clock: FakeClock } => {
  const clock = createFakeClock(START_MS);
  return { clock, sdk: new StubSdk(clock) };
};

const writeFile = (h: Harness, headers: Record<string, string>) =>
  h.post(rpc('tools/call', 5, { name: 'write_file', arguments: { path: 'a.txt', content: 'a' } }), headers);
const del = (h: Harness, headers: Record<string, string>) => h.fetch(h.url, { method: 'DELETE', headers });
/** Waits for what a sweep set off (a session closed, its workspace deleted: real processes and disks) to be done. */
const turns = async (done: () => boolean): Promise<void> => {
  await pollUntil(done, (yes) => yes, SETTLE_MS, 5);
};

describe('the local backend (LOCAL_SANDBOX_ROOT)', () => {
  it(
    'refuses a DELETEd id on another instance (404, nothing rebuilt), keeps refusing for the id’s max age, in one ' +
      '47-byte record',
    async () => {
      const [a, b, another] = localInstances();
      const { headers } = await a.openSession();
      expect((await writeFile(a, headers)).status).toBe(200);
      expect((await del(a, headers)).status).toBe(200);
      const replay = await b.post(rpc('tools/list', 2), headers);
      expect({ status: replay.status, code: errorOf(replay)?.code }).toEqual({ status: 404, code: -32001 });
      expect(b.logs().filter((line) => line.msg === 'session recovered')).toEqual([]);
      expect(workspacesIn(root)).toEqual([]);
      expect(endedFiles()).toHaveLength(1);
      expect(endedBytes()).toBe(RECORD_BYTES);
      // Still refused at the last moment the id is valid (MCP_SESSION_MAX_AGE_S, 6 h by default, from its issue).
      const lastValidMs = (toIssuedAtMs(headers['mcp-session-id'] ?? '') ?? 0) + 6 * HOUR_MS;
      b.clock.advance(lastValidMs - 60_000 - b.clock.now());
      expect((await b.post(rpc('tools/list', 3), headers)).status).toBe(404);
      // (An instance that never saw the id: b remembers the ids it refused.)
      b.clock.advance(lastValidMs - b.clock.now());
      const fresh = another();
      expect((await fresh.post(rpc('tools/list', 4), headers)).status).toBe(404);
      expect(fresh.logs().filter((line) => line.msg === 'session recovered')).toEqual([]);
    },
  );

  it(
    'writes no tombstone for a session that went idle: its workspace sleeps, and another instance serves the id ' +
      'and wakes it',
    async () => {
      const [a, b] = localInstances();
      const { headers } = await a.openSession();
      expect((await writeFile(a, headers)).status).toBe(200);
      a.clock.advance(TTL_S * 1000 + 1);
      await a.openSession(); // any request sweeps: the idle session's sandbox falls asleep
      const asleep = () => a.logs().filter((line) => line.msg === 'session asleep');
      await turns(() => asleep().length > 0);
      expect(workspacesIn(root)).toHaveLength(1);
      expect(endedFiles()).toEqual([]);
      const read = await b.post(rpc('tools/call', 2, { name: 'read_file', arguments: { path: 'a.txt' } }), headers);
      expect(read.status).toBe(200);
      expect(read.text).toContain('was asleep');
    },
  );
});

describe('the E2B backend (E2B_STATE_DIR)', () => {
  it(
    'an initialize + DELETE loop of sessions that never ran a tool leaves no tombstone; the instance that ended ' +
      'them still refuses them',
    async () => {
      const h = e2bInstance(deployment());
      const ended: Array<Record<string, string>> = [];
      for (let i = 0; i < 40; i += 1) {
        const { headers } = await h.openSession();
        await h.post(rpc('tools/list', 2), headers);
        expect((await del(h, headers)).status).toBe(200);
        ended.push(headers);
      }
      // Nor does one that went idle unused.
      await h.openSession();
      h.clock.advance(TTL_S * 1000 + 1);
      await h.openSession();
      await turns(() => h.logs().some((line) => line.msg === 'session asleep' && line.reason === 'idle_asleep'));
      expect(endedFiles()).toEqual([]);
      for (const headers of ended.slice(-3)) expect((await h.post(rpc('tools/list', 3), headers)).status).toBe(404);
      expect(h.sdk.created).toEqual([]);
    },
  );

  it(
    'with a sandbox, each ended session adds one 47-byte record, all in a handful of files; every instance refuses ' +
      'them, and after a restart',
    async () => {
      const shared = deployment();
      const a = e2bInstance(shared);
      const ended: Array<Record<string, string>> = [];
      const SESSIONS = 30;
      for (let i = 0; i < SESSIONS; i += 1) {
        const { headers } = await a.openSession();
        expect((await writeFile(a, headers)).status).toBe(200);
        expect((await del(a, headers)).status).toBe(200);
        ended.push(headers);
        // Sessions end over a whole id lifetime, so their tombstones spread over its hours.
        a.clock.advance((6 * HOUR_MS) / SESSIONS);
      }
      expect(endedBytes()).toBe(SESSIONS * RECORD_BYTES);
      expect(endedFiles().length).toBeLessThanOrEqual(8);
      for (const line of readFileSync(join(endedDir(), endedFiles()[0] ?? ''), 'latin1')
        .split('\n')
        .slice(0, -1))
        expect(line).toMatch(/^[0-9a-f]{32} \d{13}$/);

      // Another instance of the deployment, which never saw the DELETEs, and then one started afresh after it.
      const b = e2bInstance(shared);
      const restarted = e2bInstance(shared);
      const stillValid = ended.slice(-5); // issued within the last 6 h: their ids verify
      for (const headers of stillValid) expect((await b.post(rpc('tools/list', 2), headers)).status).toBe(404);
      for (const headers of stillValid) expect((await restarted.post(rpc('tools/list', 2), headers)).status).toBe(404);
      expect([...b.logs(), ...restarted.logs()].filter((line) => line.msg === 'session recovered')).toEqual([]);
      // A session that is still live elsewhere is not refused.
      const live = await a.openSession();
      expect((await b.post(rpc('tools/list', 4), live.headers)).status).toBe(200);
    },
  );

  it(
    'a session DELETEd on an instance that never touched its sandbox (it moved there) ' + 'still leaves a tombstone',
    async () => {
      const shared = deployment();
      const a = e2bInstance(shared);
      const b = e2bInstance(shared);
      const { headers } = await a.openSession();
      expect((await writeFile(a, headers)).status).toBe(200);
      // The session moves to B (recovered there), whose DELETE ends the sandbox A made.
      expect((await b.post(rpc('tools/list', 2), headers)).status).toBe(200);
      expect((await del(b, headers)).status).toBe(200);
      expect(shared.sdk.sandboxes.map((s) => s.killed)).toEqual([true]);
      expect(endedBytes()).toBe(RECORD_BYTES);
      // A, once it no longer holds the session (here: after a restart), refuses it rather than rebuild it.
      await a.close();
      expect((await a.post(rpc('tools/list', 3), headers)).status).toBe(404);
      expect((await e2bInstance(shared).post(rpc('tools/list', 3), headers)).status).toBe(404);
    },
  );
});

describe('the tombstone store', () => {
  const NOW = START_MS;

  it('holds a record until its time, for a store that reads it later or afresh', async () => {
    const writer = createTombstoneStore(root, { now: () => NOW });
    const reader = createTombstoneStore(root, { now: () => NOW });
    expect(await reader.has('mcp-sandbox-a', NOW)).toBe(false);
    await writer.record('mcp-sandbox-a', NOW + 2 * HOUR_MS);
    // The reader looked before: it reads what the file gained since.
    expect(await reader.has('mcp-sandbox-a', NOW)).toBe(true);
    expect(await reader.has('mcp-sandbox-a', NOW + 2 * HOUR_MS - 1)).toBe(true);
    expect(await reader.has('mcp-sandbox-a', NOW + 2 * HOUR_MS)).toBe(false);
    expect(await reader.has('mcp-sandbox-b', NOW)).toBe(false);
    // … and what the same file gained after that.
    await writer.record('mcp-sandbox-b', NOW + 2 * HOUR_MS + 1);
    expect(endedFiles()).toHaveLength(1);
    expect(await reader.has('mcp-sandbox-b', NOW)).toBe(true);
    expect(await writer.has('mcp-sandbox-a', NOW)).toBe(true);
    expect(await createTombstoneStore(root).has('mcp-sandbox-a', NOW + HOUR_MS)).toBe(true);
  });

  it('finds nothing ended under a root that is no directory (nothing can have been recorded there)', async () => {
    const file = join(root, 'not-a-directory');
    writeFileSync(file, 'x');
    expect(await createTombstoneStore(file).has('mcp-sandbox-a', NOW)).toBe(false);
  });

  it(
    'puts records of long lifetimes in longer spans, so a writer keeps ' +
      'few files (MCP_SESSION_MAX_AGE_S of 30 days)',
    async () => {
      const writer = createTombstoneStore(root, { now: () => NOW });
      for (let i = 0; i < 300; i += 1) await writer.record(`mcp-sandbox-${i}`, NOW + (i + 1) * 2.4 * HOUR_MS);
      expect(endedFiles().length).toBeLessThanOrEqual(24);
      const reader = createTombstoneStore(root);
      for (const i of [0, 150, 299]) expect(await reader.has(`mcp-sandbox-${i}`, NOW)).toBe(true);
    },
  );

  it(
    'skips a record still being written and reads it once whole; a record whose time cannot be read holds to the ' +
      'end of its file',
    async () => {
      const writer = createTombstoneStore(root, { now: () => NOW });
      await writer.record('mcp-sandbox-a', NOW + HOUR_MS / 2);
      const [file = ''] = endedFiles();
      const reader = createTombstoneStore(root);
      const { createHash } = await import('node:crypto');
      const hashOf = (name: string) => createHash('sha256').update(name).digest('hex').slice(0, 32);
      appendFileSync(join(endedDir(), file), `${hashOf('mcp-sandbox-b')} 00`);
      expect(await reader.has('mcp-sandbox-b', NOW)).toBe(false);
      appendFileSync(
        join(endedDir(), file),
        `garbage\nnot a record at all\n${hashOf('mcp-sandbox-c')} ?????????????\n`,
      );
      expect(await reader.has('mcp-sandbox-b', NOW)).toBe(true);
      expect(await reader.has('mcp-sandbox-c', NOW + HOUR_MS / 2)).toBe(true);
      expect(await reader.has('mcp-sandbox-a', NOW)).toBe(true);
    },
  );

  it('answers a lookup it cannot make with an error, never "not ended" (reviving is the unsafe mistake)', async () => {
    const writer = createTombstoneStore(root, { now: () => NOW });
    await writer.record('mcp-sandbox-a', NOW + HOUR_MS);
    // A record file that cannot be read (here: a directory by that name).
    mkdirSync(join(endedDir(), endedFiles()[0]?.replace(/-[0-9a-f]{16}\.rec$/, '-0123456789abcdef.rec') ?? ''));
    await expect(createTombstoneStore(root).has('mcp-sandbox-other', NOW)).rejects.toThrow(/EISDIR/);
  });

  it('deletes files whose span has passed, by their names alone', async () => {
    const writer = createTombstoneStore(root, { now: () => NOW });
    await writer.record('mcp-sandbox-a', NOW + HOUR_MS / 2);
    await writer.record('mcp-sandbox-b', NOW + 5 * HOUR_MS);
    expect(endedFiles()).toHaveLength(2);
    expect(await sweepTombstones(root, NOW + HOUR_MS)).toBe(1);
    expect(endedFiles()).toHaveLength(1);
    expect(await createTombstoneStore(root).has('mcp-sandbox-b', NOW + HOUR_MS)).toBe(true);
  });

  it(
    'honours per-session files of earlier versions, and a sweep turns those that hold into records (an unreadable ' +
      'one is kept and holds)',
    async () => {
      mkdirSync(endedDir(), { recursive: true });
      writeFileSync(join(endedDir(), 'mcp-sandbox-old'), `${NOW - 1}\n`);
      writeFileSync(join(endedDir(), 'mcp-sandbox-live'), `${NOW + 3 * HOUR_MS}\n`);
      writeFileSync(join(endedDir(), 'mcp-sandbox-garbage'), 'garbage');
      const reader = createTombstoneStore(root, { now: () => NOW });
      expect(await reader.has('mcp-sandbox-old', NOW)).toBe(false);
      expect(await reader.has('mcp-sandbox-live', NOW)).toBe(true);
      expect(await reader.has('mcp-sandbox-garbage', NOW + 1000 * HOUR_MS)).toBe(true);
      // The reader's first lookup started a sweep (at most one an hour).
      await reader.settled();
      expect(await sweepTombstones(root, NOW)).toBe(0);
      expect(endedFiles().filter((name) => name.startsWith('mcp-sandbox-'))).toEqual(['mcp-sandbox-garbage']);
      expect(endedBytes()).toBe(RECORD_BYTES + 'garbage'.length);
      expect(await reader.has('mcp-sandbox-live', NOW + 3 * HOUR_MS - 1)).toBe(true);
      expect(await createTombstoneStore(root).has('mcp-sandbox-live', NOW)).toBe(true);
      expect(await reader.has('mcp-sandbox-live', NOW + 3 * HOUR_MS)).toBe(false);
    },
  );

  it('keeps its own records when the directory it writes to is removed under it', async () => {
    const other = mkdtempSync(join(tmpdir(), 'mcp-tombstones-'));
    try {
      const store = createTombstoneStore(other, { now: () => NOW });
      await store.record('mcp-sandbox-a', NOW + HOUR_MS);
      rmSync(join(other, '.ended'), { recursive: true });
      await store.record('mcp-sandbox-b', NOW + HOUR_MS);
      expect(await createTombstoneStore(other).has('mcp-sandbox-b', NOW)).toBe(true);
      expect(await store.has('mcp-sandbox-a', NOW)).toBe(true);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
