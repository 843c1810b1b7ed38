// A closed-loop load generator: `connections` keep-alive connections (undici Pool, no pipelining), each
// sending its next request as soon as the previous answer has been read in full. Latency is per request,
// from send to the last byte of the answer.
import { performance } from 'node:perf_hooks';

import { Pool } from 'undici';

/**
 * Runs load for `warmupMs` (not counted) and then `durationMs`. `makeRequest(i)` gives the i-th request's
 * `{ headers, body }`; an answer counts as an error unless its status is 200 and its body holds a result.
 * Resolves with `{ requests, errors, rps, p50Ms, p99Ms }`.
 */
export async function runClosedLoop({ origin, path = '/mcp', connections, durationMs, warmupMs = 500, makeRequest }) {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const latencies = [];
  let errors = 0;
  let counter = 0;
  let measuring = false;
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const stopAt = measureFrom + durationMs;
  const worker = async () => {
    while (performance.now() < stopAt) {
      const { headers, body } = makeRequest(counter++);
      const sent = performance.now();
      let ok = false;
      try {
        const res = await pool.request({ path, method: 'POST', headers, body });
        const text = await res.body.text();
        ok = res.statusCode === 200 && text.includes('"result"');
      } catch {
        ok = false;
      }
      const done = performance.now();
      if (done < measureFrom || done > stopAt) continue;
      measuring = true;
      if (ok) latencies.push(done - sent);
      else errors += 1;
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  await pool.close();
  if (!measuring) throw new Error('no request completed inside the measuring window');
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    rps: latencies.length / (durationMs / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** The p-th percentile (nearest rank) of ascending `sorted`. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** The median of `values` (any order). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
