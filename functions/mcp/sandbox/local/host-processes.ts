/** Looking at the host's processes and ports on behalf of a local sandbox. */
import { readdir, readFile } from 'node:fs/promises';
import { connect } from 'node:net';

/** True when something accepts TCP connections on 127.0.0.1:`port` within a second. */
export function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: 1000 });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** Kills every process running as `uid` (a sandbox's own user), wherever it is in the process tree. */
export async function killUserProcesses(uid: number): Promise<void> {
  // A fork bomb keeps making new processes: sweep until a pass finds none (bounded).
  for (let pass = 0; pass < 10; pass += 1) {
    const pids = await readdir('/proc').catch(() => [] as string[]);
    const found = await Promise.all(
      pids
        .filter((pid) => /^\d+$/.test(pid))
        .map(async (pid) => {
          const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
          if (/^Uid:\s+(\d+)/m.exec(status)?.[1] !== String(uid)) return false;
          // A zombie is already dead; only its parent can reap it.
          if (/^State:\s+Z/m.test(status)) return false;
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // already gone
          }
          return true;
        }),
    );
    if (!found.includes(true)) return;
  }
}
