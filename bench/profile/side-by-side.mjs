// Runs figure 2's closed loop against several servers at once, each with its own load, so that whatever else
// the machine does hits them alike: their CPU per call and req/s are compared within each round. For A/B checks
// of one change (bench/PROFILE.md), not a figure of its own.
//
//   node bench/profile/side-by-side.mjs [--rounds 3] [--seconds 5] [--sessions 1] [--connections 16]
//     [--env <name>:KEY=VALUE ...] <name>=<ours|r1>:<bundle> ...
//
// `--env` adds to one server's environment; a value `{sink}` is the origin of a loopback OTLP sink
// (bench/harness/otlp-sink.mjs), to compare telemetry settings: `--env on:OTEL_EXPORTER_OTLP_ENDPOINT={sink}`.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { requestMaker } from '../figures/throughput.mjs';
import { median, runClosedLoop } from '../harness/load.mjs';
import { startOtlpSink } from '../harness/otlp-sink.mjs';
import { callTool, openSession, runPool } from '../harness/mcp-wire.mjs';
import { removeRootWithDisks } from '../harness/sandbox-host.mjs';
import { createSandboxRoot, findFreePort, readCpuMs, serverEnv, stopChild } from '../harness/servers.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    sessions: { type: 'string', default: '1' },
    connections: { type: 'string', default: '16' },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const sink = values.env.some((pair) => pair.includes('{sink}')) ? await startOtlpSink() : undefined;

/** The `--env` additions for the server called `name`. */
function envOf(name) {
  const env = {};
  for (const spec of values.env) {
    const [server, pair] = [spec.slice(0, spec.indexOf(':')), spec.slice(spec.indexOf(':') + 1)];
    if (server !== name) continue;
    env[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1).replace('{sink}', sink?.origin);
  }
  return env;
}

async function start(spec) {
  const [name, rest] = spec.split('=');
  const [kind, bundle] = [rest.slice(0, rest.indexOf(':')), rest.slice(rest.indexOf(':') + 1)];
  const ours = kind === 'ours';
  const port = await findFreePort();
  const sandboxRoot = ours ? createSandboxRoot() : undefined;
  const out = openSync('/dev/null', 'w');
  const child = spawn(process.execPath, [bundle], {
    env: serverEnv(ours ? 'ours' : kind, port, { sandboxRoot, env: envOf(name) }),
    stdio: ['ignore', out, 'ignore'],
  });
  closeSync(out);
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i += 1) {
    try {
      await fetch(`${origin}/health`);
      break;
    } catch {
      if (i > 500) throw new Error(`${name} did not listen`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const sessions = Number(values.sessions);
  const ids = await runPool(sessions, 8, async () => {
    const id = await openSession(`${origin}/mcp`);
    if (ours) await callTool(`${origin}/mcp`, id, 'run_command', { command: 'true' });
    return id;
  });
  const target = { sessionIds: ids, tool: ours ? 'sandbox_status' : 'status' };
  return { name, child, origin, sandboxRoot, makeRequest: requestMaker(target, sessions), rows: [] };
}

const servers = await Promise.all(positionals.map(start));
const durationMs = Number(values.seconds) * 1000;
// Round 0 warms the servers up (JIT) and is not counted.
for (let round = -1; round < Number(values.rounds); round += 1) {
  await Promise.all(
    servers.map(async (server) => {
      const before = readCpuMs(server.child.pid);
      const result = await runClosedLoop({
        origin: server.origin,
        connections: Number(values.connections),
        durationMs,
        warmupMs: 500,
        makeRequest: server.makeRequest,
      });
      const calls = result.requests * ((durationMs + 500) / durationMs);
      const cpuUsPerCall = ((readCpuMs(server.child.pid) - before) * 1000) / calls;
      if (round >= 0) server.rows.push({ ...result, cpuUsPerCall });
    }),
  );
  if (round >= 0)
    console.log(servers.map((s) => `${s.name} ${s.rows.at(-1).cpuUsPerCall.toFixed(0)} µs/call`).join('  '));
}
// Each server's CPU per call over the first's, round by round: the median of these is the steadiest comparison.
for (const server of servers.slice(1)) {
  const ratios = server.rows.map((row, i) => row.cpuUsPerCall / servers[0].rows[i].cpuUsPerCall);
  console.log(`${server.name} / ${servers[0].name}: median ${median(ratios).toFixed(3)} of CPU per call, by round`);
}
for (const server of servers) {
  const of = (key) => median(server.rows.map((row) => row[key]));
  console.log(
    `${server.name}: median ${of('cpuUsPerCall').toFixed(0)} µs/call, ${of('rps').toFixed(0)} req/s, ` +
      `p50 ${of('p50Ms').toFixed(1)} ms, p99 ${of('p99Ms').toFixed(1)} ms`,
  );
  await stopChild(server.child, 30_000);
  if (server.sandboxRoot !== undefined) await removeRootWithDisks(server.sandboxRoot);
}
if (sink !== undefined) console.log(`the sink got ${JSON.stringify(sink.stats())}`);
process.exit(0);
