// Figure 12: what telemetry costs. Ours twice, in the same run and under the same load as figure 2 (`tools/call`
// of `sandbox_status`, 32 connections, 1 and 64 sessions, both load clients): telemetry off, and on with traces
// and metrics exported over OTLP/HTTP (protobuf) to a loopback sink that takes everything. The ratio of the two is
// the cost of tracing every request; the sink's counts show that the spans did go out. Beside them, the floor: what
// the OpenTelemetry SDK alone costs for the same spans and record of one request, in a loop with no server around it
// (bench/harness/otel-floor.mjs), as a share of a call's CPU with telemetry off.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { startOtlpSink } from '../harness/otlp-sink.mjs';
import { MANY_SESSIONS_ENV, startServer } from '../harness/servers.mjs';
import { prepareOurs } from '../harness/targets.mjs';
import { measureThroughput } from './throughput.mjs';

/**
 * Resolves with `{ throughput, exported }`: figure 2's results for targets `ours` (off) and `ours-telemetry` (on),
 * what the sink received from the server (requests and bytes by path), and the SDK's floor per request
 * (`{ cpuUsPerRequest, alsUsPerRequest, exportedSpans }`).
 */
export async function measureTelemetry(options) {
  const sink = await startOtlpSink();
  const telemetryEnv = {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin,
    // The defaults of a deployment: spans in batches every 5 s, metrics every 60 s (at least once, at the end).
    OTEL_SERVICE_NAME: 'bench',
  };
  const [off, on] = await Promise.all([
    startServer('ours', { env: MANY_SESSIONS_ENV }),
    startServer('ours', { env: { ...MANY_SESSIONS_ENV, ...telemetryEnv } }),
  ]);
  try {
    const targets = [];
    for (const [server, name] of [
      [off, 'ours'],
      [on, 'ours-telemetry'],
    ]) {
      const sessionIds = await prepareOurs(server);
      targets.push({
        name,
        origin: server.origin,
        url: server.url,
        pid: server.pid,
        tool: 'sandbox_status',
        sessionIds,
      });
    }
    const throughput = await measureThroughput(targets, options);
    const exported = sink.stats();
    return { throughput, exported, floor: await measureFloor(sink.origin, options.floorRequests) };
  } finally {
    await Promise.all([off.stop(), on.stop()]);
    await sink.close();
  }
}

const FLOOR_SCRIPT = fileURLToPath(new URL('../harness/otel-floor.mjs', import.meta.url));

/** Runs the floor in a process of its own, exporting to `origin`; resolves with what it printed. */
function measureFloor(origin, requests = 100_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FLOOR_SCRIPT, origin, String(requests)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the OpenTelemetry floor exited with ${code}`)),
    );
  });
}
