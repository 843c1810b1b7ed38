// Figure 9: the server's memory per sleeping sandbox, beside its memory per running one. Fresh servers of ours
// (local backend, started as for figure 3: `--expose-gc` and the SIGUSR2 hook that runs a full GC and reports
// `process.memoryUsage()`): "sleeping" ones with MCP_SESSION_IDLE_TTL_S=1, "running" ones with the default TTL, so
// that their sandboxes stay up. On each: WARM_UP named sandboxes made as below (on a sleeping server, put to sleep),
// then deleted with delete_sandbox, so that every step's code has run once and K = 0 holds no sandbox; then named
// sandboxes up to each K of `counts`. Each: a session of its own, `open_sandbox {name}`, one `write_file`, and one
// `run_command cat` of the file (its supervisor started: a sandbox with processes to stop). After each K: on a
// sleeping server, idle past the TTL, one `initialize` for the sweep, and a wait until all of them logged `sandbox
// asleep` and no process of the server's is left; then full GCs until two in a row agree (`settledUsage`). Bytes per
// sandbox: least-squares slopes over K of the RSS, of `heapUsed` less compiled code plus `external`, and, on a second
// server of each kind per run that takes a heap snapshot at each K (the snapshotter's own memory would be in the
// first server's RSS), of the server's own data in the JS heap (bench/harness/heap-snapshot.mjs). Median of runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { readHeapDataBytes } from '../harness/heap-snapshot.mjs';
import { median } from '../harness/load.mjs';
import { callTool, openSession, runPool } from '../harness/mcp-wire.mjs';
import { descendantsOf } from '../harness/sandbox-host.mjs';
import { collectGarbage, MANY_SESSIONS_ENV, readPeakRssKiB, startServer } from '../harness/servers.mjs';
import { countLogLines, IDLE_TTL_S, sleepIdle } from '../harness/sleep.mjs';

/** Named sandboxes made and deleted before K = 0. */
export const WARM_UP = 5;
/** The file each sandbox is given. */
const FILE = { path: 'bench-note.txt', content: 'kept while the sandbox sleeps\n' };

/** The servers of a run: MCP_SESSION_IDLE_TTL_S of each (the running ones': the default, 30 min). */
const MODES = { sleeping: String(IDLE_TTL_S), running: undefined };

/**
 * Resolves with `{ counts, sleeping, running }`, each `{ dataBytesPerSandbox, heapBytesPerSandbox, rssBytesPerSandbox,
 * runs, snapshotRuns }` (medians of the runs' slopes: data from `snapshotRuns`, the rest from `runs`); a run is `{
 * points: [{ count, dataBytes?, heapBytes, codeBytes, rssBytes, peakRssBytes, sleepMs }], <slopes>, setupMs }`.
 */
export async function measureSleepingMemory({ counts = [0, 10, 100], runs = 3, concurrency = 8 } = {}) {
  const result = { counts };
  for (const mode of Object.keys(MODES)) result[mode] = { runs: [], snapshotRuns: [] };
  for (let run = 0; run < runs; run += 1) {
    // Alternated, so that neither always runs on a machine the other has just warmed or loaded.
    const order = run % 2 === 0 ? Object.keys(MODES) : Object.keys(MODES).reverse();
    for (const mode of order) {
      result[mode].runs.push(await measureOne(mode, counts, { concurrency, snapshots: false }));
      result[mode].snapshotRuns.push(await measureOne(mode, counts, { concurrency, snapshots: true }));
    }
  }
  for (const mode of Object.keys(MODES)) {
    const { runs: plain, snapshotRuns } = result[mode];
    result[mode].dataBytesPerSandbox = median(snapshotRuns.map((r) => r.dataBytesPerSandbox));
    result[mode].heapBytesPerSandbox = median(plain.map((r) => r.heapBytesPerSandbox));
    result[mode].rssBytesPerSandbox = median(plain.map((r) => r.rssBytesPerSandbox));
  }
  return result;
}

async function measureOne(mode, counts, { concurrency, snapshots }) {
  const ttl = MODES[mode];
  const room = Math.max(...counts) + WARM_UP;
  const snapshotDir = snapshots ? mkdtempSync(join(tmpdir(), 'mcp-bench-heap-')) : undefined;
  const server = await startServer('ours', {
    gcHook: true,
    maxSessions: room * 4,
    env: {
      ...(snapshotDir !== undefined && { BENCH_HEAP_SNAPSHOT_DIR: snapshotDir }),
      ...(ttl !== undefined && { MCP_SESSION_IDLE_TTL_S: ttl }),
      ...MANY_SESSIONS_ENV,
      // Every sandbox kept asleep (the default keeps 10 per credential, deleting the least recently used).
      MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL: String(room),
    },
  });
  try {
    const started = Date.now();
    let made = 0;
    const make = async (from, to, prefix) => {
      await runPool(to - from, concurrency, (i) => makeSandbox(server.url, `${prefix}-${from + i}`));
      made += to - from;
    };
    // On a running server there is nothing to wait for.
    const sleepAll = async () =>
      mode === 'sleeping'
        ? sleepIdle(
            server,
            () => countLogLines(server, 'sandbox asleep') >= made && descendantsOf(server.pid).length === 0,
          )
        : undefined;
    const snapshotData = async () => readHeapDataBytes((await collectGarbage(server, { snapshot: true })).snapshot);

    await make(0, WARM_UP, 'warm');
    await sleepAll();
    const cleaner = await openSession(server.url);
    for (let i = 0; i < WARM_UP; i += 1) await callTool(server.url, cleaner, 'delete_sandbox', { name: `warm-${i}` });
    await sleepAll();
    // A first snapshot, not counted: the snapshotter's own memory is then in every reading of this server.
    if (snapshots) await snapshotData();

    const points = [];
    for (const count of [...counts].sort((a, b) => a - b)) {
      let sleepMs;
      if (count > made - WARM_UP) {
        await make(made - WARM_UP, count, 'bench');
        sleepMs = await sleepAll();
      }
      const usage = await settledUsage(server);
      points.push({
        count,
        ...(snapshots && { dataBytes: await snapshotData() }),
        heapBytes: usage.heapUsed - usage.codeBytes + usage.external,
        codeBytes: usage.codeBytes,
        rssBytes: usage.rss,
        peakRssBytes: readPeakRssKiB(server.pid) * 1024,
        sleepMs,
      });
    }
    const left = descendantsOf(server.pid).length;
    if (mode === 'sleeping' && left > 0)
      throw new Error(`${left} processes of the server left with every sandbox asleep`);
    const slopeOf = (key) => slope(points.map((p) => [p.count, p[key]]));
    return {
      points,
      ...(snapshots && { dataBytesPerSandbox: slopeOf('dataBytes') }),
      heapBytesPerSandbox: slopeOf('heapBytes'),
      rssBytesPerSandbox: slopeOf('rssBytes'),
      codeBytesPerSandbox: slopeOf('codeBytes'),
      setupMs: Date.now() - started,
    };
  } finally {
    await server.stop();
    if (snapshotDir !== undefined) rmSync(snapshotDir, { recursive: true, force: true });
  }
}

/** Readings that agree this closely (bytes of heap + external) count as settled. */
const SETTLED_BYTES = 32 * 1024;
/** The time between two GCs of a settling reading. */
const SETTLE_GAP_MS = 250;

/**
 * `process.memoryUsage()` (and `codeBytes`) after a full GC, once two GCs SETTLE_GAP_MS apart agree: right after a
 * sweep, buffers it let go of are still counted (in `external`, ~150 MB with 20 sandboxes falling asleep at once)
 * until a later GC frees them.
 */
async function settledUsage(server) {
  const held = (u) => u.heapUsed - u.codeBytes + u.external;
  let last = await collectGarbage(server);
  for (let i = 0; i < 20; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_GAP_MS));
    const next = await collectGarbage(server);
    if (Math.abs(held(next) - held(last)) < SETTLED_BYTES) return next;
    last = next;
  }
  throw new Error(`the memory of ${server.name} did not settle: ${JSON.stringify(last)}`);
}

/** One named sandbox as a client makes it: a session, `open_sandbox`, a file written, a command that reads it. */
async function makeSandbox(url, name) {
  const sessionId = await openSession(url);
  const opened = await callTool(url, sessionId, 'open_sandbox', { name });
  if (opened.structuredContent?.state !== 'created')
    throw new Error(`open_sandbox ${name}: ${JSON.stringify(opened.structuredContent)}`);
  await callTool(url, sessionId, 'write_file', FILE);
  const read = await callTool(url, sessionId, 'run_command', { command: `cat ${FILE.path}` });
  if (read.structuredContent?.stdout !== FILE.content)
    throw new Error(`run_command cat in ${name}: ${JSON.stringify(read.structuredContent)}`);
}

/** The least-squares slope of y over x. */
function slope(pairs) {
  const n = pairs.length;
  const mx = pairs.reduce((s, [x]) => s + x, 0) / n;
  const my = pairs.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = pairs.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = pairs.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxy / sxx;
}
