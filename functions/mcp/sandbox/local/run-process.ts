/**
 * Runs one process of a sandbox to completion with bounded output, a deadline and cancellation; its whole
 * process group is stopped on timeout and on abort (and goes with the sandbox).
 */
import { AppError } from '../../errors';
import { RunToCompletion } from '../run-to-completion';
import type { CallControls, OutputStream, RunCommandResult } from '../types';
import { toSpawnError } from './process-group';
import type { SandboxProcess } from './supervised-process';

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
  const run = new RunToCompletion({ maxOutputBytes, onOutput });
  return new Promise((resolve, reject) => {
    const child = start(stdin !== undefined);
    run.arm({ timeoutMs, signal, stop: () => child.stop() });
    // A listener that throws (the server's own fault) stops the process and fails the call: it is answered.
    let failed = false;
    const take = (stream: OutputStream) => (chunk: Buffer) => {
      if (failed) return;
      try {
        run.takeBytes(stream, chunk);
      } catch (err: unknown) {
        failed = true;
        run.disarm();
        child.stop();
        const message = "The server failed while taking the command's output, so the command was stopped.";
        reject(new AppError('sandbox_error', message, { cause: err }));
      }
    };
    child.stdout.on('data', take('stdout'));
    child.stderr.on('data', take('stderr'));
    if (stdin !== undefined) child.stdin?.end(stdin);
    child.once('error', (err: Error) => {
      run.disarm();
      reject(toSpawnError(err));
    });
    child.once('close', (code: number | null, sig: NodeJS.Signals | null) => {
      run.disarm();
      if (failed) return;
      const { timedOut, cancelled } = run;
      resolve({ exitCode: code, signal: sig, ...run.output(), timedOut, cancelled, durationMs: run.elapsedMs() });
    });
  });
}
