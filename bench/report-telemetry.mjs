// Figure 12's rows: telemetry on (exporting to a loopback sink) beside off, per load client and session count.
import { f } from './report-rows.mjs';

/** The target: tracing every request costs at most this share of req/s, p99 and CPU per call. */
export const TELEMETRY_TARGET = 0.1;

export function telemetryRows({ throughput, exported, floor }) {
  const rows = [];
  const spans = exported['/v1/traces'] ?? { requests: 0, bytes: 0 };
  for (const [client, bySessions] of Object.entries(throughput)) {
    for (const [sessions, { ours: off, 'ours-telemetry': on }] of Object.entries(bySessions)) {
      const rps = on.rps / off.rps;
      const p99 = on.p99Ms / off.p99Ms;
      const cpu = on.cpuUsPerCall / off.cpuUsPerCall;
      const misses = [];
      if (rps < 1 - TELEMETRY_TARGET) misses.push(`req/s ${f(rps, 2)}×`);
      if (p99 > 1 + TELEMETRY_TARGET) misses.push(`p99 ${f(p99, 2)}×`);
      if (cpu > 1 + TELEMETRY_TARGET) misses.push(`CPU ${f(cpu, 2)}×`);
      const label = `${sessions === '1' ? '1 session' : `${sessions} sessions`}, ${client}`;
      const figures = (r) => `${f(r.rps)} / ${f(r.p99Ms, 1)} / ${f(r.cpuUsPerCall)}`;
      rows.push({
        figure: `12 telemetry on vs off: req/s, p99 ms, CPU µs per call; ${label}`,
        ours: `${figures(on)} (off: ${figures(off)})`,
        r1: '—',
        r2: '—',
        ratio:
          `req/s ${f(rps, 2)}×, p99 ${f(p99, 2)}×, CPU ${f(cpu, 2)}× of off; exported ${spans.requests} trace ` +
          `requests, ${f(spans.bytes / 1024)} KiB` +
          (floor === undefined
            ? ''
            : `; the SDK's floor for these spans and record, no server: ${f(floor.cpuUsPerRequest, 1)} µs ` +
              `(${f((floor.cpuUsPerRequest / off.cpuUsPerCall) * 100)} % of a call off)`),
        target: `within ${TELEMETRY_TARGET * 100} % of off`,
        verdict: misses.length === 0 ? 'met' : `MISSED: ${misses.join(', ')}`,
      });
    }
  }
  return rows;
}
