// The servers of the steady-state figures (2, 4 and 5), started once and prepared: ours (at its default log
// level, and a second one at warn) with 64 sessions whose sandboxes exist, R1 with 64 sessions, R2 stateless, and
// the bare HTTP floor.
import { callTool, openSession, runPool } from './mcp-wire.mjs';
import { startServer } from './servers.mjs';

/** Sessions prepared on each stateful server. */
export const PREPARED_SESSIONS = 64;

/**
 * Starts and prepares the servers. Resolves with `{ targets, bare, ours, isolation, stopAll() }`, where
 * each target is `{ name, origin, url, pid, tool, sessionIds }` (`ours`, `ours-warn`, `r1`, `r2`).
 */
export async function startSteadyServers() {
  const [ours, oursWarn, r1, r2, bare] = await Promise.all(
    ['ours', 'ours-warn', 'r1', 'r2', 'bare'].map((name) => startServer(name)),
  );
  const stopAll = () => Promise.all([ours, oursWarn, r1, r2, bare].map((s) => s.stop()));
  try {
    const oursIds = await prepareOurs(ours);
    const oursWarnIds = await prepareOurs(oursWarn);
    const status = await callTool(ours.url, oursIds[0], 'sandbox_status');
    if (status.structuredContent?.state !== 'running')
      throw new Error(`sandbox_status says ${status.structuredContent?.state}, expected running`);
    const r1Ids = await runPool(PREPARED_SESSIONS, 8, () => openSession(r1.url));
    const target = (server, tool, sessionIds) => ({
      name: server.name,
      origin: server.origin,
      url: server.url,
      pid: server.pid,
      tool,
      sessionIds,
    });
    const targets = [
      target(ours, 'sandbox_status', oursIds),
      target(oursWarn, 'sandbox_status', oursWarnIds),
      target(r1, 'status', r1Ids),
      target(r2, 'status', []),
    ];
    return { targets, bare, ours, isolation: String(status.structuredContent.isolation), stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** "Once the sandbox exists": one run_command per session creates it; sandbox_status never does. */
export function prepareOurs(server) {
  return runPool(PREPARED_SESSIONS, 8, async () => {
    const id = await openSession(server.url);
    await callTool(server.url, id, 'run_command', { command: 'true' });
    return id;
  });
}
