/**
 * Host-side observation for the sandbox e2e suites: the processes in /proc, bounded polling, and where a
 * session's workspace lives on the host.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A mark unique to this test process among all that run at once (its pid, fixed width), for the commands a
 * test later looks for in /proc: a suite running beside this one (a second clone, say) never matches them.
 */
export const RUN_MARK = String(process.pid).padStart(7, '0');

/**
 * How long a test waits for something that should happen at once (a process gone after its kill, a log line
 * after start-up) before it gives up. Generous, because a busy machine is slow: it bounds a hang, it is not a
 * speed check.
 */
export const SETTLE_MS = 20_000;

/** `sleep <seconds>.<RUN_MARK>`: as long as `sleep <seconds>` (the mark adds under a millisecond), and this test
 * process's own. */
export function markedSleep(seconds: number): string {
  if (!Number.isInteger(seconds)) throw new Error('markedSleep takes whole seconds (the mark is the fraction)');
  return `sleep ${seconds}.${RUN_MARK}`;
}

/** A live (non-zombie) process on the host. */
export interface HostProcess {
  readonly pid: number;
  /** Real uid. */
  readonly uid: number;
  readonly argv: readonly string[];
  /** argv joined with spaces. */
  readonly cmdline: string;
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

/** Every live process this test process can see, zombies left out (they run nothing). */
export function listProcesses(): HostProcess[] {
  const found: HostProcess[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const status = readOrEmpty(`/proc/${name}/status`);
    if (status === '' || /^State:\s+Z/m.test(status)) continue;
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
    const argv = readOrEmpty(`/proc/${name}/cmdline`)
      .split('\0')
      .filter((a) => a !== '');
    found.push({ pid: Number(name), uid, argv, cmdline: argv.join(' ') });
  }
  return found;
}

/** Live processes whose command line contains `fragment` (this test process excluded). */
export function processesWithCmdline(fragment: string): HostProcess[] {
  return listProcesses().filter((p) => p.pid !== process.pid && p.cmdline.includes(fragment));
}

/** Live processes whose initial environment holds `entry` (`NAME=value`). */
export function processesWithEnv(entry: string): HostProcess[] {
  return listProcesses().filter((p) => readOrEmpty(`/proc/${p.pid}/environ`).split('\0').includes(entry));
}

/** Live processes running as `uid`. */
export function processesOfUid(uid: number): HostProcess[] {
  return listProcesses().filter((p) => p.uid === uid);
}

/**
 * Polls `probe` every `intervalMs` until `done(value)` holds or `timeoutMs` passed; resolves with the
 * last value either way, so the caller asserts on what was really seen. The bound only decides when to give
 * up on something that should happen: make it generous (a busy machine is slow), never a speed check.
 */
export async function pollUntil<T>(
  probe: () => T | Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() >= deadline) return value;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Polls until no process matches `find`; resolves with what still matched at the end (empty when all are gone). */
export function waitUntilGone(find: () => HostProcess[], timeoutMs: number): Promise<HostProcess[]> {
  return pollUntil(find, (list) => list.length === 0, timeoutMs);
}

/** The host directory (`<root>/<workspace>/home`) that holds a file named `marker`, if any. */
export function findWorkspaceHome(sandboxRoot: string, marker: string): string | undefined {
  for (const dir of readdirSync(sandboxRoot)) {
    const home = join(sandboxRoot, dir, 'home');
    try {
      if (readdirSync(home).includes(marker)) return home;
    } catch {
      // not a workspace
    }
  }
  return undefined;
}
