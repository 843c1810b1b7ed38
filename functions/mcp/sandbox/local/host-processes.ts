/** Looking at the host's processes and ports on behalf of a local sandbox. */
import { open, readdir } from 'node:fs/promises';
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

/**
 * The head of a process's status, which holds its state and uids (`Uid:` is the ninth line; a name is at most 64
 * bytes): read into a buffer of this size, not Node's 64 KiB per file, since a sweep reads every process's.
 */
const STATUS_HEAD_BYTES = 1024;
/** Status files read at once. */
const STATUS_READS_AT_ONCE = 64;

/** The start of `/proc/<pid>/status`, or '' when the process is gone. */
async function statusHead(pid: string): Promise<string> {
  const handle = await open(`/proc/${pid}/status`, 'r').catch(() => undefined);
  if (handle === undefined) return '';
  try {
    const buffer = Buffer.alloc(STATUS_HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, STATUS_HEAD_BYTES, 0);
    return buffer.toString('utf8', 0, bytesRead);
  } catch {
    return '';
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** How long killUserProcesses waits, at most, for killed processes to be gone, and how often it looks. */
const KILL_WAIT_MS = 3_000;
const KILL_WAIT_STEP_MS = 50;

/**
 * Kills every process running as `uid` (a sandbox's own user), wherever it is in the process tree. The uid is
 * read from each process's status, never from its /proc directory's owner, which a process can make root's
 * (PR_SET_DUMPABLE 0).
 */
export async function killUserProcesses(uid: number): Promise<void> {
  // A fork bomb keeps making new processes, and a killed process writing to a busy disk takes a while to exit (it
  // holds its files, and so the workspace's mount, until then): sweep until a pass finds none, at once ten times,
  // then every KILL_WAIT_STEP_MS for up to KILL_WAIT_MS.
  for (let pass = 0; pass < 10 + KILL_WAIT_MS / KILL_WAIT_STEP_MS; pass += 1) {
    if (pass >= 10) await new Promise((resolve) => setTimeout(resolve, KILL_WAIT_STEP_MS));
    const pids = (await readdir('/proc').catch(() => [] as string[])).filter((pid) => /^\d+$/.test(pid));
    let found = false;
    for (let at = 0; at < pids.length; at += STATUS_READS_AT_ONCE) {
      const batch = pids.slice(at, at + STATUS_READS_AT_ONCE);
      const statuses = await Promise.all(batch.map(statusHead));
      batch.forEach((pid, i) => {
        const status = statuses[i] ?? '';
        if (/^Uid:\s+(\d+)/m.exec(status)?.[1] !== String(uid)) return;
        // A zombie is already dead; only its parent can reap it.
        if (/^State:\s+Z/m.test(status)) return;
        found = true;
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      });
    }
    if (!found) return;
  }
}
