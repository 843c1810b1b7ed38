// The second, independent load client: autocannon (its own HTTP/1.1 client over raw sockets, not undici), driving
// the same closed loop as load.mjs: `connections` keep-alive connections, no pipelining, each sending its next
// request once the previous answer is in. Latency is autocannon's own per-response time (send → last byte).
import autocannon from 'autocannon';

import { percentile } from './load.mjs';

/**
 * Runs autocannon for `warmupMs` (not counted, a separate run) and then `durationMs` against `origin` + `path`.
 * `requests` are the `{ headers, body }` each connection sends in turn, round robin (all POST). An answer counts as
 * an error unless its status is 2xx and its body holds a JSON-RPC result. Resolves with
 * `{ requests, errors, rps, p50Ms, p99Ms }`, as `runClosedLoop` does.
 */
export async function runAutocannon({ origin, path = '/mcp', connections, durationMs, warmupMs = 500, requests }) {
  const options = {
    url: `${origin}${path}`,
    connections,
    pipelining: 1,
    method: 'POST',
    requests: requests.map(({ headers, body }) => ({ method: 'POST', path, headers, body })),
    verifyBody: (body) => body.includes('"result"'),
  };
  if (warmupMs > 0) await run({ ...options, duration: warmupMs / 1000 });
  const latencies = [];
  const result = await run({ ...options, duration: durationMs / 1000 }, (statusCode, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  latencies.sort((a, b) => a - b);
  const errors = result.errors + result.timeouts + result.non2xx + result.mismatches;
  const ok = Math.max(0, latencies.length - result.mismatches);
  return {
    requests: ok,
    errors,
    rps: ok / (durationMs / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** One autocannon run; `onResponse(statusCode, responseTimeMs)` for each answer. Resolves with its result. */
function run(options, onResponse) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
    if (onResponse !== undefined)
      instance.on('response', (_client, statusCode, _bytes, responseTime) => onResponse(statusCode, responseTime));
  });
}
