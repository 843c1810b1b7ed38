// Figure 4: what the MCP stack adds over bare HTTP. p50 of a `tools/call` over HTTP on one connection,
// minus p50 of the same client's round trip to a bare node:http server answering a fixed small JSON,
// measured back to back in each run.
import { median, runClosedLoop } from '../harness/load.mjs';
import { requestMaker } from './throughput.mjs';

/**
 * `bare` is `{ origin }`, `targets` as for figure 2. Resolves with
 * `{ bareP50Ms, [name]: { p50Ms, overheadMs } }`, medians over `runs`.
 */
export async function measureOverhead(bare, targets, { runs = 3, durationMs = 2000, warmupMs = 300 } = {}) {
  const bareRequest = () => ({
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  const bareP50 = [];
  const perServer = Object.fromEntries(targets.map((t) => [t.name, { p50: [], overhead: [] }]));
  for (let run = 0; run < runs; run += 1) {
    const floor = await runClosedLoop({
      origin: bare.origin,
      connections: 1,
      durationMs,
      warmupMs,
      makeRequest: bareRequest,
    });
    bareP50.push(floor.p50Ms);
    for (const target of targets) {
      const r = await runClosedLoop({
        origin: target.origin,
        connections: 1,
        durationMs,
        warmupMs,
        makeRequest: requestMaker(target, 1),
      });
      perServer[target.name].p50.push(r.p50Ms);
      perServer[target.name].overhead.push(r.p50Ms - floor.p50Ms);
    }
  }
  const result = { bareP50Ms: median(bareP50) };
  for (const [name, { p50, overhead }] of Object.entries(perServer))
    result[name] = { p50Ms: median(p50), overheadMs: median(overhead) };
  return result;
}
