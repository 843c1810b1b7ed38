/** Killing every process of a sandbox's user (sandbox/local/host-processes.ts), as root. */
import { spawn } from 'node:child_process';

import { killUserProcesses } from '../../../../functions/mcp/sandbox/local/host-processes';
import { needs } from '../../../support/needs';
import { markedSleep, pollUntil, processesOfUid, SETTLE_MS } from '../../../support/processes';

/** A uid no account and no sandbox of another test uses. */
const UID = 99_000 + (process.pid % 900);

needs('root').it(
  'kills every process of the uid, one that made itself non-dumpable too (its /proc entry is then root’s), and ' +
    'no other',
  async () => {
    const run = (script: string) =>
      spawn('setpriv', [`--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', '--', 'sh', '-c', script], {
        stdio: 'ignore',
        detached: true,
      });
    const plain = run(`${markedSleep(600)} & ${markedSleep(601)} & wait`);
    const hidden = run(
      `exec python3 -c 'import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); time.sleep(600)'`,
    );
    const mine = spawn('sh', ['-c', markedSleep(602)], { stdio: 'ignore', detached: true });
    try {
      // sh and its two sleeps, and the non-dumpable python.
      const seen = await pollUntil(
        () => processesOfUid(UID),
        (all) => all.length >= 4,
        SETTLE_MS,
      );
      expect(seen).toHaveLength(4);
      await killUserProcesses(UID);
      const left = await pollUntil(
        () => processesOfUid(UID),
        (all) => all.length === 0,
        SETTLE_MS,
      );
      expect(left).toEqual([]);
      expect(mine.exitCode).toBeNull();
    } finally {
      for (const child of [plain, hidden, mine]) {
        try {
          process.kill(-(child.pid ?? 0), 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  },
);
