/**
 * Starting a launched host process (a sandbox's supervisor, the bubblewrap probe) as the leader of its own
 * process group, and signalling that group; how a process that could not start is reported.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';

import { AppError, toErrnoCode } from '../../errors';
import { type LaunchSpec, SECCOMP_FD } from './launch';

/** One entry of `spawn`'s stdio array. */
type StdioSlot = 'pipe' | 'ignore' | 'inherit' | 'overlapped';

/** Starts `spec` as the leader of a new process group (handing it its seccomp program, if any). */
export function spawnGroup(spec: LaunchSpec, stdio: StdioSlot[]): ChildProcess {
  if (spec.seccomp === undefined)
    return spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio, detached: true });
  const withFilter = [...stdio];
  while (withFilter.length < SECCOMP_FD) withFilter.push('ignore');
  withFilter[SECCOMP_FD] = 'pipe';
  const child = spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio: withFilter, detached: true });
  const pipe = (child.stdio as unknown as Array<Writable | null>)[SECCOMP_FD];
  pipe?.on('error', () => undefined);
  pipe?.end(spec.seccomp);
  return child;
}

/** A process that could not be started, as a message the model can act on. */
export function toSpawnError(err: unknown): AppError {
  const code = toErrnoCode(err) ?? 'error';
  // The supervisor reports a process once it started; one stopped or killed before then (by that very process,
  // say) leaves it unknown whether it ran.
  if (code === 'ESRCH') {
    return new AppError(
      'sandbox_error',
      "The sandbox's supervisor was stopped or killed before it reported the process (a process in the " +
        'sandbox can do that; this one may have run); the next call starts it again.',
      { cause: err },
    );
  }
  const hint =
    code === 'E2BIG' ? ': the command or its environment is too large; write a script with write_file and run it' : '';
  return new AppError('sandbox_error', `Could not start the process (${code})${hint}.`, { cause: err });
}

/**
 * What a process that could not start said last on stderr, as `: line | line | line` (at most 300 characters), or ''.
 */
export function startFailureDetail(stderr: string): string {
  const lines = stderr.trim().split('\n').slice(-3).join(' | ');
  return lines === '' ? '' : `: ${lines.slice(0, 300)}`;
}

/** Sends `signal` to every process of the group led by `pid`; a group already gone is fine. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}
