// `npm run bench`: every figure of issue 7 in one go, ours against the reference servers in the same run.
// Prints the table on stdout (progress on stderr) and writes bench/RESULTS.md. `--quick` runs each figure
// briefly to check the harness and writes nothing.
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { buildReferences } from './build.mjs';
import { measureColdStart, summarizeColdStart } from './figures/cold-start.mjs';
import { measureLiveOutput } from './figures/live-output.mjs';
import { measureOverhead } from './figures/overhead.mjs';
import { measureSandboxMemory } from './figures/sandbox-memory.mjs';
import { measureSessionMemory } from './figures/session-memory.mjs';
import { measureThroughput } from './figures/throughput.mjs';
import { PROTOCOL_VERSION, SETUP_AGENT } from './harness/mcp-wire.mjs';
import { BUNDLES } from './harness/servers.mjs';
import { startSteadyServers } from './harness/targets.mjs';
import { describeMachine, renderTable, toRows } from './report.mjs';
import { renderResults } from './results-file.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');

const settings = quick
  ? { coldRuns: 3, connections: 32, durationS: 1, warmupS: 0.2, tpRuns: 1, memRuns: 1, overheadS: 0.5, overheadRuns: 1, liveRuns: 1, sandboxRuns: 1 }
  : { coldRuns: 15, connections: 32, durationS: 5, warmupS: 0.5, tpRuns: 3, memRuns: 3, overheadS: 1.5, overheadRuns: 3, liveRuns: 3, sandboxRuns: 3 };
settings.maxSessions = 2000;
settings.protocolVersion = PROTOCOL_VERSION;

const progress = (text) => process.stderr.write(`[bench] ${text}\n`);

async function main() {
  const started = Date.now();
  if (!existsSync(BUNDLES.ours)) throw new Error('dist/index.js is missing: run `node build.mjs` (or `npm run bench`) first');
  await buildReferences();

  progress(`1 cold start: ${settings.coldRuns} rounds`);
  const samples = await measureColdStart({ runs: settings.coldRuns });
  const coldStart = { ...summarizeColdStart(samples), samples };

  progress('2, 4, 5: starting ours, R1, R2 and the bare floor; preparing 64 sessions each');
  const steady = await startSteadyServers();
  let throughput;
  let overhead;
  let liveOutput;
  try {
    progress(`2 throughput: ${settings.tpRuns} × ${settings.durationS} s per server, 1 and 64 sessions`);
    throughput = await measureThroughput(steady.targets, {
      connections: settings.connections,
      runs: settings.tpRuns,
      durationMs: settings.durationS * 1000,
      warmupMs: settings.warmupS * 1000,
    });
    progress('4 server overhead');
    overhead = await measureOverhead(steady.bare, steady.targets, { runs: settings.overheadRuns, durationMs: settings.overheadS * 1000 });
    progress('5 live output');
    liveOutput = await measureLiveOutput(steady.ours.url, { runs: settings.liveRuns });
  } finally {
    await steady.stopAll();
  }

  progress(`3 memory per idle session: ${settings.memRuns} fresh servers each, 1,000 sessions`);
  const sessionMemory = await measureSessionMemory({ runs: settings.memRuns });
  progress(`6 memory with 200 sandboxes: ${settings.sandboxRuns} fresh server(s)`);
  const sandboxMemory = await measureSandboxMemory({ runs: settings.sandboxRuns });

  const results = { coldStart, throughput, sessionMemory, overhead, liveOutput, sandboxMemory };
  const rows = toRows(results);
  process.stdout.write(`${renderTable(rows)}\n`);
  const durationS = Math.round((Date.now() - started) / 1000);
  if (quick) {
    progress(`quick run done in ${durationS} s; RESULTS.md not written`);
    return;
  }
  const text = renderResults({ date: new Date().toISOString(), machine: describeMachine(), isolation: steady.isolation, settings, rows, results, durationS });
  writeFileSync(join(BENCH_DIR, 'RESULTS.md'), text);
  progress(`done in ${durationS} s; wrote bench/RESULTS.md`);
}

try {
  await main();
} catch (err) {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await SETUP_AGENT.close();
}
