// The servers of the steady-state figures (2, 4 and 5), started once and prepared: ours with 64 sessions
// whose sandboxes exist, R1 with 64 sessions, R2 stateless, and the bare HTTP floor.
import { callTool, openSession, runPool } from './mcp-wire.mjs';
import { startServer } from './servers.mjs';

/** Sessions prepared on each stateful server. */
export const PREPARED_SESSIONS = 64;

/**
 * Starts and prepares the servers. Resolves with `{ targets, bare, ours, isolation, stopAll() }`, where
 * each target is `{ name, origin, url, tool, sessionIds }`.
 */
export async function startSteadyServers() {
  const [ours, r1, r2, bare] = await Promise.all(['ours', 'r1', 'r2', 'bare'].map((name) => startServer(name)));
  const stopAll = () => Promise.all([ours, r1, r2, bare].map((s) => s.stop()));
  try {
    // "Once the sandbox exists": one run_command per session creates it; sandbox_status never does.
    const oursIds = await runPool(PREPARED_SESSIONS, 8, async () => {
      const id = await openSession(ours.url);
      await callTool(ours.url, id, 'run_command', { command: 'true' });
      return id;
    });
    const status = await callTool(ours.url, oursIds[0], 'sandbox_status');
    if (status.structuredContent?.state !== 'running') throw new Error(`sandbox_status says ${status.structuredContent?.state}, expected running`);
    const r1Ids = await runPool(PREPARED_SESSIONS, 8, () => openSession(r1.url));
    const targets = [
      { name: 'ours', origin: ours.origin, url: ours.url, tool: 'sandbox_status', sessionIds: oursIds },
      { name: 'r1', origin: r1.origin, url: r1.url, tool: 'status', sessionIds: r1Ids },
      { name: 'r2', origin: r2.origin, url: r2.url, tool: 'status', sessionIds: [] },
    ];
    return { targets, bare, ours, isolation: String(status.structuredContent.isolation), stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
