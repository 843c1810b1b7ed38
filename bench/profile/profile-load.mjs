// Profiles one server under figure 2's load: starts it with extra Node flags (`--cpu-prof` and the like), prepares
// sessions as bench/harness/targets.mjs does, drives the undici closed loop for a while, then stops it (SIGTERM, so
// that Node writes its profile). Used to write bench/PROFILE.md; not part of `npm run bench`.
//
//   node bench/profile/profile-load.mjs --server ours|r1 --bundle <file.js> [--seconds 10] [--sessions 1]
//     [--connections 32] [--node-flag=--cpu-prof --node-flag=--cpu-prof-dir=/tmp/prof] [--log <file>]
//     [--stdout <file>] [--log-level warn]
//
// Prints req/s, p50/p99 and the server's CPU per call (in all and by thread) as JSON; the server's stderr goes to
// `--log` and its stdout (ours: its log; `--trace-gc`) to `--stdout` when given.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { requestMaker } from '../figures/throughput.mjs';
import { runClosedLoop } from '../harness/load.mjs';
import { startOtlpSink } from '../harness/otlp-sink.mjs';
import { callTool, openSession, runPool } from '../harness/mcp-wire.mjs';
import { createSandboxRoot, findFreePort, readCpuMs, serverEnv, stopChild } from '../harness/servers.mjs';
import { removeRootWithDisks } from '../harness/sandbox-host.mjs';

const { values } = parseArgs({
  options: {
    server: { type: 'string', default: 'ours' },
    bundle: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    sessions: { type: 'string', default: '1' },
    connections: { type: 'string', default: '32' },
    'node-flag': { type: 'string', multiple: true, default: [] },
    'log-level': { type: 'string' },
    log: { type: 'string' },
    stdout: { type: 'string' },
    // KEY=VALUE for the server's environment, repeatable; `--otlp-sink` points OTEL_EXPORTER_OTLP_ENDPOINT at a
    // loopback sink (bench/harness/otlp-sink.mjs), to profile telemetry on.
    env: { type: 'string', multiple: true, default: [] },
    'otlp-sink': { type: 'boolean', default: false },
  },
});
const ours = values.server === 'ours';
if (values.bundle === undefined) throw new Error('--bundle is required');

const port = await findFreePort();
const sandboxRoot = ours ? createSandboxRoot() : undefined;
const sink = values['otlp-sink'] ? await startOtlpSink() : undefined;
const extraEnv = Object.fromEntries(
  values.env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
const env = serverEnv(ours ? 'ours' : values.server, port, {
  sandboxRoot,
  env: {
    ...(values['log-level'] !== undefined && { LOG_LEVEL: values['log-level'] }),
    ...(sink !== undefined && { OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin }),
    ...extraEnv,
  },
});
const logFd = openSync(values.stdout ?? '/dev/null', 'w');
const errFd = values.log === undefined ? 'inherit' : openSync(values.log, 'w');
const child = spawn(process.execPath, [...values['node-flag'], values.bundle], {
  env,
  stdio: ['ignore', logFd, errFd],
});
closeSync(logFd);
const origin = `http://127.0.0.1:${port}`;
const url = `${origin}/mcp`;
for (let i = 0; ; i += 1) {
  try {
    await fetch(`${origin}/health`);
    break;
  } catch {
    if (i > 500) throw new Error('the server did not listen');
    await new Promise((r) => setTimeout(r, 20));
  }
}
const sessions = Number(values.sessions);
const ids = await runPool(Math.max(sessions, 1), 8, async () => {
  const id = await openSession(url);
  if (ours) await callTool(url, id, 'run_command', { command: 'true' });
  return id;
});
const target = { sessionIds: ids, tool: ours ? 'sandbox_status' : 'status' };
const durationMs = Number(values.seconds) * 1000;
const threadsBefore = threadCpuMs(child.pid);
const cpuBefore = readCpuMs(child.pid);
const result = await runClosedLoop({
  origin,
  connections: Number(values.connections),
  durationMs,
  warmupMs: 500,
  makeRequest: requestMaker(target, sessions),
});
const cpuMs = readCpuMs(child.pid) - cpuBefore;
const calls = result.requests * ((durationMs + 500) / durationMs);
// CPU per call by thread: main (JavaScript), the others by name (V8's workers: GC and compilers; libuv's pool).
const threads = {};
for (const [name, ms] of Object.entries(threadCpuMs(child.pid))) {
  const us = Math.round(((ms - (threadsBefore[name] ?? 0)) * 1000) / calls);
  if (us > 0) threads[name] = us;
}
await stopChild(child, 30_000);
if (sandboxRoot !== undefined) await removeRootWithDisks(sandboxRoot);
if (sink !== undefined) console.error(`[profile] the sink got ${JSON.stringify(sink.stats())}`);
console.log(JSON.stringify({ ...result, cpuUsPerCall: Math.round((cpuMs * 1000) / calls), threads }));
process.exit(0);

/** CPU time so far of each thread of `pid`, summed by thread name, in ms (10 ms ticks). */
function threadCpuMs(pid) {
  const byName = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+$/, '#');
      const name = tid === String(pid) ? 'main' : comm;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byName[name] = (byName[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // The thread ended meanwhile.
    }
  }
  return byName;
}
