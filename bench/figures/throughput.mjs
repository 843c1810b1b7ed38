// Figure 2: `tools/call` on a cheap tool under a closed loop of 32 connections, over one session and over
// 64 sessions (round-robin per request). Ours calls `sandbox_status` in sessions whose sandbox exists;
// R1 and R2 call their trivial `status` tool (R2 is stateless: every request stands alone).
import { median, runClosedLoop } from '../harness/load.mjs';
import { mcpHeaders, toolCallBody } from '../harness/mcp-wire.mjs';

/** Options of `measureThroughput`. */
const DEFAULTS = { connections: 32, sessionCounts: [1, 64], runs: 3, durationMs: 5000, warmupMs: 500 };

/**
 * `targets` are prepared servers: `{ name, origin, tool, sessionIds }` (`sessionIds` empty when stateless).
 * Resolves with `{ [sessions]: { [name]: { rps, p50Ms, p99Ms, errors, runs: [...] } } }`, medians over runs.
 */
export async function measureThroughput(targets, options = {}) {
  const { connections, sessionCounts, runs, durationMs, warmupMs } = { ...DEFAULTS, ...options };
  for (const target of targets) {
    await runClosedLoop({ origin: target.origin, connections, durationMs: 1000, warmupMs: 0, makeRequest: requestMaker(target, 64) });
  }
  const results = {};
  for (const sessions of sessionCounts) {
    const perServer = Object.fromEntries(targets.map((t) => [t.name, []]));
    for (let run = 0; run < runs; run += 1) {
      // Rotate the order so that no server always runs first (or last) in a round.
      const order = targets.map((_, i) => targets[(i + run) % targets.length]);
      for (const target of order) {
        perServer[target.name].push(
          await runClosedLoop({ origin: target.origin, connections, durationMs, warmupMs, makeRequest: requestMaker(target, sessions) }),
        );
      }
    }
    results[sessions] = Object.fromEntries(
      Object.entries(perServer).map(([name, list]) => [
        name,
        {
          rps: median(list.map((r) => r.rps)),
          p50Ms: median(list.map((r) => r.p50Ms)),
          p99Ms: median(list.map((r) => r.p99Ms)),
          errors: list.reduce((sum, r) => sum + r.errors, 0),
          runs: list,
        },
      ]),
    );
  }
  return results;
}

/** Request i goes to session i mod `sessions` (or without a session to a stateless server). */
export function requestMaker(target, sessions) {
  const headers = target.sessionIds.length === 0 ? [mcpHeaders(undefined)] : target.sessionIds.slice(0, sessions).map((id) => mcpHeaders(id));
  return (i) => ({ headers: headers[i % headers.length], body: toolCallBody(i + 1, target.tool) });
}
