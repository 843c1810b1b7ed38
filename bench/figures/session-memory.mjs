// Figure 3: memory per idle session (initialize + notifications/initialized, no tool called). A fresh
// server opens 10 warm-up sessions (one lists the tools), then 1,000 sessions, then 1,000 more; memory is read after a
// forced full GC at each step. The figure is the RSS the second 1,000 sessions add, per session: the first 1,000 also
// grow V8's young generation and the allocator's arenas by a fixed ~30 MB that no session holds, which would
// otherwise count as ~30 KiB "per session". Reported beside it: RSS over the first 1,000 (that fixed part
// included) and the JS heap + external memory the second 1,000 retain.
import { median } from '../harness/load.mjs';
import { openSession, postRpc, runPool } from '../harness/mcp-wire.mjs';
import { collectGarbage, MANY_SESSIONS_ENV, readRssKiB, startServer } from '../harness/servers.mjs';

const WARMUP_SESSIONS = 10;
const SETTLE_MS = 500;

/**
 * Resolves with `{ [name]: { kibPerSession, firstKibPerSession, heapKibPerSession, runs: [...] } }`,
 * medians over `runs` fresh servers each.
 */
export async function measureSessionMemory({ servers = ['ours', 'r1'], sessions = 1000, runs = 3 } = {}) {
  const perServer = Object.fromEntries(servers.map((name) => [name, []]));
  for (let run = 0; run < runs; run += 1) {
    for (const name of servers) {
      const server = await startServer(name, { maxSessions: sessions * 4, gcHook: true, env: MANY_SESSIONS_ENV });
      try {
        const open = (count) => runPool(count, 16, () => openSession(server.url));
        const read = async () => {
          await sleep(SETTLE_MS);
          const usage = await collectGarbage(server);
          return { rssKiB: readRssKiB(server.pid), heapKiB: (usage.heapUsed + usage.external) / 1024 };
        };
        // Warm-up: a few sessions, one of which lists the tools as clients do (ours loads its core then, a
        // one-time cost that is no session's).
        const warm = await open(WARMUP_SESSIONS);
        await postRpc(server.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), warm[0]);
        const start = await read();
        await open(sessions);
        const first = await read();
        await open(sessions);
        const second = await read();
        perServer[name].push({
          rssKiB: [start.rssKiB, first.rssKiB, second.rssKiB],
          kibPerSession: (second.rssKiB - first.rssKiB) / sessions,
          firstKibPerSession: (first.rssKiB - start.rssKiB) / sessions,
          heapKibPerSession: (second.heapKiB - first.heapKiB) / sessions,
        });
      } finally {
        await server.stop();
      }
    }
  }
  const med = (list, key) => median(list.map((r) => r[key]));
  return Object.fromEntries(
    Object.entries(perServer).map(([name, list]) => [
      name,
      {
        kibPerSession: med(list, 'kibPerSession'),
        firstKibPerSession: med(list, 'firstKibPerSession'),
        heapKibPerSession: med(list, 'heapKibPerSession'),
        runs: list,
      },
    ]),
  );
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
