/**
 * Runs one process of a sandbox to completion with bounded output, a deadline and cancellation; its whole
 * process group is stopped on timeout and on abort (and goes with the sandbox).
 */
import { StringDecoder } from 'node:string_decoder';

import { AppError } from '../../errors';
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
    const settle = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    // A listener that throws (the server's own fault) stops the process and fails the call: it is answered.
    let failed = false;
    const take = (capture: OutputCapture, stream: 'stdout' | 'stderr') => {
      // Live output as text: a character split between two chunks is held until its end arrives.
      const decoder = new StringDecoder('utf8');
      return (chunk: Buffer): void => {
        if (failed) return;
        try {
          capture.push(chunk);
          if (onOutput !== undefined) onOutput(stream, decoder.write(chunk));
        } catch (err: unknown) {
          failed = true;
          settle();
          child.stop();
          reject(
            new AppError(
              'sandbox_error',
              "The server failed while taking the command's output, so the command was stopped.",
              { cause: err },
            ),
          );
        }
      };
    };
    child.stdout.on('data', take(stdout, 'stdout'));
    child.stderr.on('data', take(stderr, 'stderr'));
    if (stdin !== undefined) child.stdin?.end(stdin);
    child.once('error', (err: Error) => {
      settle();
      reject(toSpawnError(err));
    });
    child.once('close', (code: number | null, sig: NodeJS.Signals | null) => {
      settle();
      if (failed) return;
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
