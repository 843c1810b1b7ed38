/**
 * Runs one process of a sandbox to completion with bounded output, a deadline and cancellation; its whole
 * process group is stopped on timeout and on abort (and goes with the sandbox).
 */
import { OutputCapture } from '../output-capture';
import type { CallControls, RunCommandResult } from '../types';
import { toSpawnError } from './process-group';
import type { SandboxProcess } from './supervisor';

export interface RunProcessOptions extends CallControls {
  /** Starts the process (with a stdin to write to when asked). */
  start: (withStdin: boolean) => SandboxProcess;
  timeoutMs: number;
  stdin?: string;
  /** Bytes kept per stream (head and tail). */
  maxOutputBytes: number;
}

/** Runs a process to completion (or deadline, or abort) and reports its exit and output. */
export function runProcess(options: RunProcessOptions): Promise<RunCommandResult> {
  const { start, timeoutMs, stdin, maxOutputBytes, signal, onOutput } = options;
  const started = performance.now();
  const stdout = new OutputCapture(maxOutputBytes);
  const stderr = new OutputCapture(maxOutputBytes);
  return new Promise((resolve, reject) => {
    const child = start(stdin !== undefined);
    let timedOut = false;
    let cancelled = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.stop();
    }, timeoutMs);
    const onAbort = (): void => {
      cancelled = true;
      child.stop();
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      onOutput?.('stdout', chunk.toString('utf8'));
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr.push(chunk);
      onOutput?.('stderr', chunk.toString('utf8'));
    });
    if (stdin !== undefined) child.stdin?.end(stdin);
    const settle = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    child.once('error', (err: Error) => {
      settle();
      reject(toSpawnError(err));
    });
    child.once('close', (code: number | null, sig: NodeJS.Signals | null) => {
      settle();
      resolve({
        exitCode: code,
        signal: sig,
        stdout: stdout.result(),
        stderr: stderr.result(),
        timedOut,
        cancelled,
        durationMs: Math.round(performance.now() - started),
      });
    });
  });
}
