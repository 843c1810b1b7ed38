// `npm run bench`: every figure of issue 7, issue 31's egress figure and issue 32's file transfers, in one go, ours
// against the reference servers in the same run. Prints the table on stdout (progress on stderr) and writes
// bench/RESULTS.md. `--quick` runs each figure briefly to check the harness and writes nothing. `--only
// <figure>[,<figure>...]` (names in FIGURES below, e.g. `--only tool-latency`) runs just those figures, prints their
// rows and writes nothing either.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { buildReferences } from './build.mjs';
import { measureColdStart, summarizeColdStart } from './figures/cold-start.mjs';
import { measureEgress } from './figures/egress.mjs';
import { measureFileTransfer } from './figures/file-transfer.mjs';
import { measureLiveOutput } from './figures/live-output.mjs';
import { measureOverhead } from './figures/overhead.mjs';
import { measureSandboxMemory } from './figures/sandbox-memory.mjs';
import { measureSessionMemory } from './figures/session-memory.mjs';
import { measureSleepingMemory } from './figures/sleeping-memory.mjs';
import { measureTelemetry } from './figures/telemetry.mjs';
import { measureThroughput } from './figures/throughput.mjs';
import { measureToolLatency } from './figures/tool-latency.mjs';
import { measureWake } from './figures/wake.mjs';
import { PROTOCOL_VERSION, SETUP_AGENT } from './harness/mcp-wire.mjs';
import { BUNDLES } from './harness/servers.mjs';
import { startSteadyServers } from './harness/targets.mjs';
import { describeMachine, renderTable, toRows } from './report.mjs';
import { renderResults } from './results-file.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');

/** The figures, by the name `--only` takes: whether each needs the reference bundles, and the steady servers. */
const FIGURES = {
  'cold-start': { references: true },
  throughput: { references: true, steady: true },
  overhead: { references: true, steady: true },
  'live-output': { steady: true },
  'session-memory': { references: true },
  'sandbox-memory': {},
  'tool-latency': {},
  wake: {},
  'sleeping-memory': {},
  egress: {},
  'file-transfer': {},
  telemetry: {},
};

const settings = quick
  ? {
      coldRuns: 3,
      connections: 32,
      durationS: 1,
      warmupS: 0.2,
      tpRuns: 1,
      memRuns: 1,
      overheadS: 0.5,
      overheadRuns: 1,
      liveRuns: 1,
      sandboxRuns: 1,
      toolReps: 10,
      toolWarmup: 3,
      toolWarmupS: 0.5,
      wakeRuns: 3,
      sleepCounts: [0, 3, 10],
      sleepRuns: 1,
      egressRuns: 2,
      egressConnections: 50,
      transferRuns: 1,
    }
  : {
      coldRuns: 15,
      connections: 32,
      durationS: 5,
      warmupS: 0.5,
      tpRuns: 3,
      memRuns: 3,
      overheadS: 1.5,
      overheadRuns: 3,
      liveRuns: 3,
      sandboxRuns: 3,
      toolReps: 60,
      toolWarmup: 10,
      toolWarmupS: 3,
      wakeRuns: 20,
      sleepCounts: [0, 10, 100],
      sleepRuns: 3,
      egressRuns: 10,
      egressConnections: 200,
      transferRuns: 3,
    };
settings.maxSessions = 2000;
settings.autocannonVersion = JSON.parse(
  readFileSync(join(BENCH_DIR, 'node_modules/autocannon/package.json'), 'utf8'),
).version;
settings.protocolVersion = PROTOCOL_VERSION;

const progress = (text) => process.stderr.write(`[bench] ${text}\n`);

async function main() {
  const started = Date.now();
  if (!existsSync(BUNDLES.ours))
    throw new Error('dist/index.js is missing: run `node build.mjs` (or `npm run bench`) first');
  const only = parseOnly(process.argv.slice(2));
  const selected = (name) => only === undefined || only.includes(name);
  const chosen = Object.keys(FIGURES).filter(selected);
  if (chosen.some((name) => FIGURES[name].references)) await buildReferences();
  const results = {};

  if (selected('cold-start')) {
    progress(`1 cold start: ${settings.coldRuns} rounds`);
    const samples = await measureColdStart({ runs: settings.coldRuns });
    results.coldStart = { ...summarizeColdStart(samples), samples };
  }

  let isolation;
  if (chosen.some((name) => FIGURES[name].steady)) {
    progress('2, 4, 5: starting ours (at info and at warn), R1, R2 and the bare floor; preparing 64 sessions each');
    const steady = await startSteadyServers();
    isolation = steady.isolation;
    try {
      if (selected('throughput')) {
        progress(
          `2 throughput: ${settings.tpRuns} × ${settings.durationS} s per server and load client (undici, ` +
            `autocannon), 1 and 64 sessions`,
        );
        results.throughput = await measureThroughput(steady.targets, {
          connections: settings.connections,
          runs: settings.tpRuns,
          durationMs: settings.durationS * 1000,
          warmupMs: settings.warmupS * 1000,
        });
      }
      if (selected('overhead')) {
        progress('4 server overhead');
        results.overhead = await measureOverhead(steady.bare, steady.targets, {
          runs: settings.overheadRuns,
          durationMs: settings.overheadS * 1000,
        });
      }
      if (selected('live-output')) {
        progress('5 live output');
        results.liveOutput = await measureLiveOutput(steady.ours.url, { runs: settings.liveRuns });
      }
    } finally {
      await steady.stopAll();
    }
  }

  if (selected('session-memory')) {
    progress(`3 memory per idle session: ${settings.memRuns} fresh servers each, 1,000 sessions`);
    results.sessionMemory = await measureSessionMemory({ runs: settings.memRuns });
  }
  if (selected('sandbox-memory')) {
    progress(`6 memory with 200 sandboxes: ${settings.sandboxRuns} fresh server(s)`);
    results.sandboxMemory = await measureSandboxMemory({ runs: settings.sandboxRuns });
  }
  if (selected('tool-latency')) {
    progress(
      `7 tool latency: ${settings.toolReps} calls per tool (after ≥ ${settings.toolWarmup} uncounted and ≥ ` +
        `${settings.toolWarmupS} s), one session`,
    );
    results.toolLatency = await measureToolLatency({
      reps: settings.toolReps,
      warmup: settings.toolWarmup,
      warmupMs: settings.toolWarmupS * 1000,
    });
    if (results.toolLatency.skipped !== undefined)
      progress(`7 tool latency not measured: ${results.toolLatency.skipped}`);
    else isolation ??= results.toolLatency.isolation;
  }

  if (selected('wake')) {
    progress(`8 wake: ${settings.wakeRuns} sleeps and wakes per backend (local, E2B on the local E2B service)`);
    results.wake = await measureWake({ runs: settings.wakeRuns });
    for (const [backend, r] of Object.entries(results.wake))
      if (r.skipped !== undefined) progress(`8 wake, ${backend}: not measured: ${r.skipped}`);
  }
  if (selected('sleeping-memory')) {
    progress(
      `9 memory per sleeping sandbox: K = ${settings.sleepCounts.join(', ')}, ${settings.sleepRuns} run(s) of four ` +
        'fresh servers (sleeping and running, each with and without heap snapshots)',
    );
    results.sleepingMemory = await measureSleepingMemory({ counts: settings.sleepCounts, runs: settings.sleepRuns });
  }
  if (selected('egress')) {
    progress(
      `10 egress: ${settings.egressRuns} run(s) per server (proxied by the allowlist, network on) of a 50 MB ` +
        `download and ${settings.egressConnections} fresh connections, inside the sandbox`,
    );
    results.egress = await measureEgress({ runs: settings.egressRuns, connections: settings.egressConnections });
    if (results.egress.skipped !== undefined) progress(`10 egress not measured: ${results.egress.skipped}`);
  }
  if (selected('telemetry')) {
    progress(
      `12 telemetry: ours off and on (exporting to a loopback OTLP sink), ${settings.tpRuns} × ${settings.durationS} ` +
        "s per server and load client, 1 and 64 sessions; then the OpenTelemetry SDK's floor alone",
    );
    results.telemetry = await measureTelemetry({
      connections: settings.connections,
      runs: settings.tpRuns,
      durationMs: settings.durationS * 1000,
      warmupMs: settings.warmupS * 1000,
      floorRequests: quick ? 20_000 : 100_000,
    });
  }
  if (selected('file-transfer')) {
    progress(
      `11 files through the server: ${settings.transferRuns} run(s) (after one uncounted) of a 200 MB download ` +
        'and upload through get_file_url URLs, and of cat to and from a socket',
    );
    results.fileTransfer = await measureFileTransfer({ runs: settings.transferRuns });
    if (results.fileTransfer.skipped !== undefined)
      progress(`11 file transfer not measured: ${results.fileTransfer.skipped}`);
  }

  const rows = toRows(results);
  process.stdout.write(`${renderTable(rows)}\n`);
  const durationS = Math.round((Date.now() - started) / 1000);
  if (quick || only !== undefined) {
    progress(`${quick ? 'quick ' : ''}run of ${chosen.join(', ')} done in ${durationS} s; RESULTS.md not written`);
    return;
  }
  const text = renderResults({
    date: new Date().toISOString(),
    machine: describeMachine(),
    isolation,
    settings,
    rows,
    results,
    durationS,
  });
  writeFileSync(join(BENCH_DIR, 'RESULTS.md'), text);
  progress(`done in ${durationS} s; wrote bench/RESULTS.md`);
}

/** The figure names of `--only a,b` (or `--only=a,b`); `undefined` without the flag. */
function parseOnly(argv) {
  const index = argv.findIndex((arg) => arg === '--only' || arg.startsWith('--only='));
  if (index < 0) return undefined;
  const value = argv[index].startsWith('--only=') ? argv[index].slice('--only='.length) : argv[index + 1];
  const names = (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(n in FIGURES));
  if (names.length === 0 || unknown.length > 0) {
    throw new Error(
      `--only takes figure names separated by ` +
        `commas${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}; known: ` +
        `${Object.keys(FIGURES).join(', ')}`,
    );
  }
  return names;
}

try {
  await main();
} catch (err) {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await SETUP_AGENT.close();
}
