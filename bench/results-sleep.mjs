// The sleep figures' part of bench/RESULTS.md (8: waking a sleeping sandbox, 9: the server's memory per sleeping
// sandbox): how each is measured, and every run's numbers. results-file.mjs puts them in their sections.
import { WARM_UP } from './figures/sleeping-memory.mjs';
import { WAKE_CALL, WARM_CALLS } from './figures/wake.mjs';
import { IDLE_TTL_S, IDLE_WAIT_MS } from './harness/sleep.mjs';
import { SLEEPING_DATA_TARGET } from './report-sleep.mjs';

/** Items 8 and 9 of "How each figure is measured". */
export function describeSleepFigures(settings) {
  const call = `\`${WAKE_CALL.name} ${WAKE_CALL.args.command}\``;
  const counts = settings.sleepCounts.join(', ');
  return `8. **Waking a sleeping sandbox** (bench/figures/wake.mjs): per backend, a fresh server of ours (as above, with
   \`MCP_SESSION_IDLE_TTL_S=${IDLE_TTL_S}\`), one keep-alive connection, calls one at a time, send → answer read in \
full.
   Local: \`LOCAL_SANDBOX_DISK_MB=1024\`, its default (the other figures turn it off), so each workspace is an ext4
   image loop-mounted at its directory where the host allows it (root, loop devices, mkfs.ext4); the table names the
   isolation and the disk limit that \`sandbox_status\` reported. E2B: \`SANDBOX_BACKEND=e2b\`
   against the local E2B service (test/support/e2b-local/: its TypeScript bundled by esbuild as \`npm run e2b:local\`
   does, started in the bench process; sandboxes paused with their memory, as E2B does), \
\`E2B_MAX_CREATES_PER_S=50\`.
   Each run: a new session; its first ${call}, which creates the sandbox ("fresh"); ${WARM_CALLS} more ("warm",
   their median); then ${IDLE_WAIT_MS / 1000} s without a call, one \`initialize\` on another connection (idle \
sandboxes
   fall asleep in the sweep of the next request; nothing runs on a timer) and a wait until the sleep is over: the
   session's \`session asleep\` log line and, locally, no process left under the server and nothing mounted under its
   root, on E2B the service listing the sandbox paused with its memory; then the same call ("wake"; its result must
   begin with the wake notice). The session is then deleted (\`DELETE\`), its sandbox with it. One uncounted run
   first (the server's first sandbox also probes the host), then ${settings.wakeRuns}; median and p90 of each, and
   the ratios of the medians (and of the p90s). A local wake mounts the image again and starts the sandbox's
   supervisor (bubblewrap, its init, Python), as a fresh sandbox does after making its image; an E2B wake is
   \`Sandbox.connect\` resuming the paused sandbox (the local service sends its processes SIGCONT): its create and
   resume cost far less than E2B's cloud, so these E2B ratios are the server's share, not E2B's.
9. **Memory per sleeping sandbox** (bench/figures/sleeping-memory.mjs): fresh servers of ours (as above, started as
   for figure 3) with \`MCP_SESSION_IDLE_TTL_S=${IDLE_TTL_S}\` ("sleeping") and with the default 30 min ("running", \
whose
   sandboxes stay up), \`MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL\` raised so that none is deleted for room. On
   each, ${WARM_UP} named sandboxes made as below (on a sleeping server, put to sleep) and deleted with
   \`delete_sandbox\`, so that K = 0 holds none and every step's code has run; then named sandboxes up to K =
   ${counts}, each made by a session of its own (8 at a time): \`open_sandbox {name}\`, one \`write_file\`, one
   \`run_command cat\` of it (so that each has processes to stop). After each K, on a sleeping server: \
${IDLE_WAIT_MS / 1000} s
   idle, one \`initialize\`, and a wait until all of them logged \`sandbox asleep\` and no process is left under
   the server; then full GCs 250 ms apart until two agree within 32 KiB (right after a sweep, buffers it let go of
   are still counted until a later GC). Bytes per sandbox: the least-squares slope over K of (a) the RSS and (b)
   \`heapUsed\` less V8's code spaces plus \`external\`; and (c), on a second server of each kind per run that writes
   a heap snapshot after each reading (and one before K = 0, so that the snapshotter's own memory is in all of them),
   the server's data in the JS heap: the snapshot's objects, arrays, closures, strings and native buffers, without
   the engine's compiled code, its metadata and object shapes, which grow as V8 compiles more of the server whatever
   it holds (bench/harness/heap-snapshot.mjs). ${settings.sleepRuns} run(s) of the four servers; medians. Target: a
   sleeping sandbox's (c) at most ${SLEEPING_DATA_TARGET}× a running one's (with its session), i.e. nothing beside
   what a sandbox costs while it runs (docs/sandboxes.md: "a sleeping sandbox costs the server no memory"). The RSS
   has no target: see "Where ours is behind" for what it holds.`;
}

/** The sleep figures' lines of "Every run". */
export function sleepRuns({ wake, sleepingMemory }) {
  const lines = Object.entries(wake).map(([backend, r]) => {
    if (r.skipped !== undefined) return `- Wake, ${backend}: not measured (${r.skipped})`;
    const of = (key, digits = 1) =>
      list(
        r.runs.map((s) => s[key]),
        digits,
      );
    return (
      `- Wake ms, ${backend} (${r.label}): fresh ${of('freshMs')}; warm ${of('warmMs')}; wake ${of('wakeMs')}; ` +
      `asleep after the sweep's request ${of('sleepMs', 0)}`
    );
  });
  for (const mode of ['sleeping', 'running']) lines.push(...memoryRuns(mode, sleepingMemory));
  return lines.join('\n');
}

function memoryRuns(mode, { counts, [mode]: { runs, snapshotRuns } }) {
  const point = (p) =>
    `K=${p.count}: RSS ${mib(p.rssBytes)} MiB (peak ${mib(p.peakRssBytes)}), heap ${kib(p.heapBytes)} KiB, code ` +
    `${kib(p.codeBytes)} KiB${p.sleepMs === undefined ? '' : `, asleep in ${p.sleepMs.toFixed(0)} ms`}`;
  const perSandbox = (list_, key, scale = 1) =>
    list(
      list_.map((r) => r[key] / scale),
      0,
    );
  const data = snapshotRuns.map((r) =>
    list(
      r.points.map((p) => p.dataBytes / 1024),
      0,
    ),
  );
  return [
    `- Memory, ${mode}: ${runs.map((r) => `[${r.points.map(point).join('; ')}]`).join(' ')}; per sandbox RSS ` +
      `${perSandbox(runs, 'rssBytesPerSandbox', 1024)} KiB, heap ${perSandbox(runs, 'heapBytesPerSandbox')} B`,
    `- Memory, ${mode}, with heap snapshots: JS data KiB at K = ${counts.join(', ')} ${data.join(' ')}; per ` +
      `sandbox ${perSandbox(snapshotRuns, 'dataBytesPerSandbox')} B`,
  ];
}

const list = (values, digits = 1) => `[${values.map((v) => v.toFixed(digits)).join(', ')}]`;
const kib = (bytes) => (bytes / 1024).toFixed(0);
const mib = (bytes) => (bytes / 2 ** 20).toFixed(1);
