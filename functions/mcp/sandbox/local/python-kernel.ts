/**
 * A persistent Python process per session: variables and imports survive between `run_code` calls.
 * Executions run one at a time; a timeout or a cancel interrupts the code (KeyboardInterrupt) and, if
 * that does not stop it, kills the process, losing the state (the result says so).
 */
import type { Duplex } from 'node:stream';

import { AppError } from '../../errors';
import { CodeResults } from '../code-results';
import { RunToCompletion, type StopReason } from '../run-to-completion';
import type { CallControls, CodeError, OutputStream, RunCodeResult } from '../types';
import { type KernelFrame, KernelFrameReader } from './kernel-frames';
import { startFailureDetail } from './process-group';
import type { SandboxProcess } from './supervised-process';

/** Time for the interpreter to start and report ready. */
const KERNEL_START_TIMEOUT_MS = 15_000;
/** Time the code gets to stop after an interrupt before the process is killed. */
const INTERRUPT_GRACE_MS = 2_000;
/**
 * The longest control line beyond what the execution's results may still take (code-results.ts): enough for a
 * `done` frame, whose error and traceback kernel.py cuts to 16,384 characters each (at most 6 bytes each in JSON).
 */
const MAX_CONTROL_LINE_BYTES = 256 * 1024;
/** How long to wait for the output markers once the code finished. */
const PIPE_DRAIN_MS = 1_000;
/** The error of an execution whose output the server failed to take (a listener threw). */
const SERVER_FAILED: CodeError = {
  name: 'ServerError',
  value:
    "The server failed while taking this call's output, so the Python process was stopped; variables and " +
    'imports from earlier calls are gone.',
  traceback: '',
};

export interface ExecuteOptions extends CallControls {
  code: string;
  /** Variables set in the interpreter's environment before the code runs (they persist). */
  env?: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
}

/** Removes an end-of-execution marker from a stream, holding back a chunk end that may start one. */
class MarkerFilter {
  private pending = '';
  found = false;
  constructor(private readonly marker: string) {}

  feed(chunk: string): string {
    const text = this.pending + chunk;
    const at = text.indexOf(this.marker);
    if (at !== -1) {
      this.found = true;
      this.pending = '';
      return text.slice(0, at);
    }
    let keep = Math.min(this.marker.length - 1, text.length);
    while (keep > 0 && !this.marker.startsWith(text.slice(text.length - keep))) keep -= 1;
    this.pending = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }
}

/** One Python interpreter running the kernel loop. */
export class PythonKernel {
  private nextId = 1;
  private queue: Promise<unknown> = Promise.resolve();
  private frameListener: ((frame: KernelFrame) => void) | undefined;
  private outputListener: ((stream: OutputStream, chunk: string) => void) | undefined;
  /** The running execution's results (their room bounds the line the channel may hold), else none. */
  private results: CodeResults | undefined;
  private exited = false;
  private exitListeners: Array<() => void> = [];

  private constructor(
    private readonly child: SandboxProcess,
    private readonly channel: Duplex,
  ) {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => this.outputListener?.('stdout', chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => this.outputListener?.('stderr', chunk));
    channel.on('error', () => undefined);
    // The kernel's process runs the user's code, which can write to fd 3 too: a line is held only while it fits.
    const frames = new KernelFrameReader({
      limitBytes: () => MAX_CONTROL_LINE_BYTES + (this.results?.roomBytes ?? 0),
      onFrame: (frame) => this.frameListener?.(frame),
      onDropped: (bytes) => this.results?.omit(bytes),
    });
    channel.on('data', (chunk: Buffer) => frames.feed(chunk));
    child.once('exit', () => {
      this.exited = true;
      for (const listener of this.exitListeners.splice(0)) listener();
    });
  }

  /** Waits until the interpreter `child` (started with a channel on fd 3) is ready. */
  static async start(child: SandboxProcess): Promise<PythonKernel> {
    const channel = child.channel;
    if (channel === null) throw new AppError('sandbox_error', 'The Python kernel has no control channel.');
    const kernel = new PythonKernel(child, channel);
    const stderr: string[] = [];
    kernel.outputListener = (stream, chunk) => {
      if (stream === 'stderr' && stderr.length < 20) stderr.push(chunk);
    };
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('timeout')), KERNEL_START_TIMEOUT_MS);
        child.once('error', reject);
        kernel.exitListeners.push(() => reject(new Error('exited')));
        kernel.frameListener = (frame) => {
          if (frame.t !== 'ready') return;
          clearTimeout(timer);
          resolve();
        };
      });
    } catch (err: unknown) {
      kernel.kill();
      throw new AppError(
        'sandbox_error',
        `Python could not start in the sandbox (LOCAL_SANDBOX_PYTHON)${startFailureDetail(stderr.join(''))}.`,
        { cause: err },
      );
    } finally {
      kernel.outputListener = undefined;
      kernel.frameListener = undefined;
    }
    return kernel;
  }

  /** True while the interpreter process runs. */
  get alive(): boolean {
    return !this.exited;
  }

  /** Runs `code` in the kernel's namespace, after any execution already queued. */
  execute(options: ExecuteOptions): Promise<RunCodeResult> {
    const run = this.queue.then(() => this.executeNow(options));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Kills the interpreter and everything it started. */
  kill(): void {
    this.child.stop(0);
    this.channel.destroy();
  }

  private executeNow({
    code,
    env,
    timeoutMs,
    maxOutputBytes,
    signal,
    onOutput,
  }: ExecuteOptions): Promise<RunCodeResult> {
    const run = new RunToCompletion({ maxOutputBytes, onOutput });
    const id = this.nextId++;
    const marker = `\n\0end-${id}\0\n`;
    const filters = { stdout: new MarkerFilter(marker), stderr: new MarkerFilter(marker) };
    const results = new CodeResults();
    this.results = results;
    let interrupted: StopReason | undefined;

    return new Promise<RunCodeResult>((resolve) => {
      let done: { error: CodeError | null } | undefined;
      let hardKill: NodeJS.Timeout | undefined;
      let settled = false;
      const finish = (stateLost: boolean, error: CodeError | null): void => {
        if (settled) return;
        settled = true;
        run.disarm();
        clearTimeout(hardKill);
        this.frameListener = undefined;
        this.outputListener = undefined;
        this.results = undefined;
        this.exitListeners = this.exitListeners.filter((l) => l !== onExit);
        const omitted = results.omitted;
        resolve({
          ...run.output(),
          results: results.results,
          ...(omitted === undefined ? {} : { omittedResults: omitted }),
          error,
          timedOut: interrupted === 'timeout',
          cancelled: interrupted === 'cancel',
          stateLost,
          durationMs: run.elapsedMs(),
        });
      };
      const maybeFinish = (): void => {
        if (done !== undefined && filters.stdout.found && filters.stderr.found) finish(false, done.error);
      };
      const interrupt = (why: StopReason): void => {
        if (interrupted !== undefined) return;
        interrupted = why;
        this.channel.write(`${JSON.stringify({ interrupt: true })}\n`);
        hardKill = setTimeout(() => {
          this.kill();
        }, INTERRUPT_GRACE_MS);
      };
      const onExit = (): void => {
        const how =
          interrupted === undefined
            ? 'The Python process exited'
            : 'The code did not stop when interrupted, so the Python process was killed';
        finish(true, {
          name: 'KernelRestarted',
          value: `${how}; variables and imports from earlier calls are gone.`,
          traceback: '',
        });
      };
      this.exitListeners.push(onExit);
      // The kernel interrupts itself at the deadline; this is the backstop for code that ignores it.
      run.arm({ timeoutMs: timeoutMs + 250, signal, stop: interrupt });

      // A listener that throws (ours, on the server) ends the call with an error: it is always answered.
      const guarded =
        <A extends unknown[]>(listener: (...args: A) => void) =>
        (...args: A): void => {
          try {
            listener(...args);
          } catch {
            this.kill();
            finish(true, SERVER_FAILED);
          }
        };
      this.outputListener = guarded((stream: OutputStream, chunk: string) => {
        const text = filters[stream].feed(chunk);
        if (text.length > 0) run.take(stream, text);
        maybeFinish();
      });
      this.frameListener = guarded((frame: KernelFrame) => {
        if (frame.t === 'result') results.add({ type: 'text', text: frame.d });
        else if (frame.t === 'image') results.add({ type: 'image', mimeType: frame.mime, data: frame.d });
        else if (frame.t === 'done' && frame.id === id) {
          if (frame.error?.name === 'KeyboardInterrupt' && interrupted === undefined) interrupted = 'timeout';
          done = { error: frame.error };
          maybeFinish();
          // Code that closed its own stdout never writes the marker: do not wait for it long.
          setTimeout(() => finish(false, frame.error), PIPE_DRAIN_MS).unref();
        }
      });
      if (this.exited) {
        onExit();
        return;
      }
      this.channel.write(`${JSON.stringify({ id, code, env: env ?? {}, timeout_s: timeoutMs / 1000 })}\n`);
    });
  }
}
