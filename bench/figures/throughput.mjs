// Figure 2: `tools/call` on a cheap tool under a closed loop of 32 connections, over one session and over
// 64 sessions (round-robin per request), driven by two independent load clients (undici, autocannon). Ours calls
// `sandbox_status` in sessions whose sandbox exists, at its default log level and at warn; R1 and R2 call their
// trivial `status` tool (R2 is stateless: every request stands alone). Beside each run: the server's CPU time
// per answered call.
import { runAutocannon } from '../harness/autocannon-load.mjs';
import { median, runClosedLoop } from '../harness/load.mjs';
import { mcpHeaders, toolCallBody } from '../harness/mcp-wire.mjs';
import { readCpuMs } from '../harness/servers.mjs';

/** Options of `measureThroughput`. */
const DEFAULTS = { connections: 32, sessionCounts: [1, 64], runs: 3, durationMs: 5000, warmupMs: 500 };

/** The load clients, by the name the results carry. */
export const LOAD_CLIENTS = {
  undici: ({ origin, connections, durationMs, warmupMs, target, sessions }) =>
    runClosedLoop({ origin, connections, durationMs, warmupMs, makeRequest: requestMaker(target, sessions) }),
  autocannon: ({ origin, connections, durationMs, warmupMs, target, sessions }) =>
    runAutocannon({ origin, connections, durationMs, warmupMs, requests: requestList(target, sessions) }),
};

/**
 * `targets` are prepared servers: `{ name, origin, pid, tool, sessionIds }` (`sessionIds` empty when stateless).
 * Resolves with `{ [client]: { [sessions]: { [name]: { rps, p50Ms, p99Ms, cpuUsPerCall, errors, runs: [...] } } } }`,
 * medians over runs. `cpuUsPerCall`: the server process's CPU time (all threads, user + system) over the whole run,
 * warm-up included, divided by the calls answered in it.
 */
export async function measureThroughput(targets, options = {}) {
  const { connections, sessionCounts, runs, durationMs, warmupMs } = { ...DEFAULTS, ...options };
  for (const target of targets) {
    await runClosedLoop({
      origin: target.origin,
      connections,
      durationMs: 1000,
      warmupMs: 0,
      makeRequest: requestMaker(target, 64),
    });
  }
  const results = {};
  for (const [client, load] of Object.entries(LOAD_CLIENTS)) {
    results[client] = {};
    for (const sessions of sessionCounts) {
      const perServer = Object.fromEntries(targets.map((t) => [t.name, []]));
      for (let run = 0; run < runs; run += 1) {
        // Rotate the order so that no server always runs first (or last) in a round.
        const order = targets.map((_, i) => targets[(i + run) % targets.length]);
        for (const target of order) {
          const cpuBefore = readCpuMs(target.pid);
          const result = await load({ origin: target.origin, connections, durationMs, warmupMs, target, sessions });
          const cpuMs = readCpuMs(target.pid) - cpuBefore;
          // The warm-up's calls are not counted in `requests`; scale them in at the measured rate.
          const calls = result.requests * ((durationMs + warmupMs) / durationMs);
          perServer[target.name].push({ ...result, cpuUsPerCall: (cpuMs * 1000) / calls });
        }
      }
      results[client][sessions] = Object.fromEntries(
        Object.entries(perServer).map(([name, list]) => [name, summarize(list)]),
      );
    }
  }
  return results;
}

function summarize(list) {
  return {
    rps: median(list.map((r) => r.rps)),
    p50Ms: median(list.map((r) => r.p50Ms)),
    p99Ms: median(list.map((r) => r.p99Ms)),
    cpuUsPerCall: median(list.map((r) => r.cpuUsPerCall)),
    errors: list.reduce((sum, r) => sum + r.errors, 0),
    runs: list,
  };
}

/** The headers of each session's requests, in order (one without a session for a stateless server). */
function sessionHeaders(target, sessions) {
  return target.sessionIds.length === 0
    ? [mcpHeaders(undefined)]
    : target.sessionIds.slice(0, sessions).map((id) => mcpHeaders(id));
}

/** Request i goes to session i mod `sessions` (or without a session to a stateless server). */
export function requestMaker(target, sessions) {
  const headers = sessionHeaders(target, sessions);
  return (i) => ({ headers: headers[i % headers.length], body: toolCallBody(i + 1, target.tool) });
}

/** The same requests as a fixed list, one per session, that each autocannon connection goes round. */
export function requestList(target, sessions) {
  return sessionHeaders(target, sessions).map((headers, i) => ({ headers, body: toolCallBody(i + 1, target.tool) }));
}
