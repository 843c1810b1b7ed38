/**
 * Runs a launched process in its own process group with bounded output, a deadline and cancellation;
 * the whole group is killed on timeout, on abort and when the sandbox ends.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';

import { AppError, toErrnoCode } from '../../errors';
import { OutputCapture } from '../output-capture';
import type { CallControls, RunCommandResult } from '../types';
import { type LaunchSpec, SECCOMP_FD } from './launch';

/** Time between SIGTERM and SIGKILL for a process group. */
const KILL_GRACE_MS = 500;
/** How long to wait for the pipes to close once the leader exited. */
const PIPE_DRAIN_MS = 1000;

/** One entry of `spawn`'s stdio array. */
type StdioSlot = 'pipe' | 'ignore' | 'inherit' | 'overlapped';

/** Starts `spec` as the leader of a new process group (handing it its seccomp program, if any). */
export function spawnGroup(spec: LaunchSpec, stdio: StdioSlot[]): ChildProcess {
  if (spec.seccomp === undefined) return spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio, detached: true });
  const withFilter = [...stdio];
  while (withFilter.length < SECCOMP_FD) withFilter.push('ignore');
  withFilter[SECCOMP_FD] = 'pipe';
  const child = spawn(spec.file, [...spec.args], { cwd: spec.cwd, env: spec.env, stdio: withFilter, detached: true });
  const pipe = (child.stdio as unknown as Array<Writable | null>)[SECCOMP_FD];
  pipe?.on('error', () => undefined);
  pipe?.end(spec.seccomp);
  return child;
}

/**
 * Resolves once the group's leader exited and its output is all read: the rest of the group is killed at
 * the leader's exit, then the pipes are waited for (a process that left the group with setsid may hold them
 * open: after PIPE_DRAIN_MS they are closed from this side).
 */
export function whenDrained(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      // Whatever the leader left behind in its group goes with it.
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      const drain = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve({ code, signal });
      }, PIPE_DRAIN_MS);
      child.once('close', () => {
        clearTimeout(drain);
        resolve({ code, signal });
      });
    });
  });
}

/** A process that could not be started, as a message the model can act on. */
export function toSpawnError(err: unknown): AppError {
  const code = toErrnoCode(err) ?? 'error';
  const hint = code === 'E2BIG' ? ': the command or its environment is too large; write a script with write_file and run it' : '';
  return new AppError('sandbox_error', `Could not start the process (${code})${hint}.`, { cause: err });
}

/** Sends SIGTERM to the group, then SIGKILL after a grace period unless it has exited. */
export function killGroup(child: ChildProcess, graceMs = KILL_GRACE_MS): void {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  signalGroup(pid, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
  timer.unref();
  child.once('exit', () => {
    // The leader is gone; make sure no member of its group outlives it.
    signalGroup(pid, 'SIGKILL');
    clearTimeout(timer);
  });
}

/** Sends `signal` to every process of the group led by `pid`; a group already gone is fine. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

export interface RunProcessOptions extends CallControls {
  spec: LaunchSpec;
  timeoutMs: number;
  stdin?: string;
  /** Bytes kept per stream (head and tail). */
  maxOutputBytes: number;
}

/** Runs a process to completion (or deadline, or abort) and reports its exit and output. */
export function runProcess(options: RunProcessOptions): Promise<RunCommandResult> {
  const { spec, timeoutMs, stdin, maxOutputBytes, signal, onOutput } = options;
  const started = performance.now();
  const stdout = new OutputCapture(maxOutputBytes);
  const stderr = new OutputCapture(maxOutputBytes);
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawnGroup(spec, [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']);
    } catch (err: unknown) {
      reject(toSpawnError(err));
      return;
    }
    let timedOut = false;
    let cancelled = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    const onAbort = (): void => {
      cancelled = true;
      killGroup(child);
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      onOutput?.('stdout', chunk.toString('utf8'));
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr.push(chunk);
      onOutput?.('stderr', chunk.toString('utf8'));
    });
    if (stdin !== undefined && child.stdin !== null) {
      child.stdin.on('error', () => undefined); // EPIPE when the process does not read its input
      child.stdin.end(stdin);
    }
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(toSpawnError(err));
    });
    child.once('exit', () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
    void whenDrained(child).then(({ code, signal: sig }) =>
      resolve({
        exitCode: code,
        signal: sig,
        stdout: stdout.result(),
        stderr: stderr.result(),
        timedOut,
        cancelled,
        durationMs: Math.round(performance.now() - started),
      }),
    );
  });
}
