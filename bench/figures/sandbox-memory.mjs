// Figure 6: server memory with 200 live sessions, each with a local sandbox that has run `echo hi`:
// the RSS of the server process (`ps -o rss`), one fresh server per run, median of runs.
import { median } from '../harness/load.mjs';
import { callTool, openSession, runPool } from '../harness/mcp-wire.mjs';
import { MANY_SESSIONS_ENV, readRssKiB, startServer } from '../harness/servers.mjs';

/** Resolves with `{ rssMiB, runs: [...] }`. */
export async function measureSandboxMemory({ sessions = 200, runs = 1, concurrency = 8 } = {}) {
  const list = [];
  for (let run = 0; run < runs; run += 1) {
    const server = await startServer('ours', { maxSessions: sessions * 10, env: MANY_SESSIONS_ENV });
    try {
      const startedMs = Date.now();
      await runPool(sessions, concurrency, async () => {
        const sessionId = await openSession(server.url);
        await callTool(server.url, sessionId, 'run_command', { command: 'echo hi' });
      });
      const setupMs = Date.now() - startedMs;
      await new Promise((r) => setTimeout(r, 1000));
      list.push({ rssMiB: readRssKiB(server.pid) / 1024, setupMs });
    } finally {
      await server.stop();
    }
  }
  return { rssMiB: median(list.map((r) => r.rssMiB)), runs: list };
}
