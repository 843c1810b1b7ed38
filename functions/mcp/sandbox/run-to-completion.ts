/**
 * What every call that runs something to completion shares, on both backends (a local command or script, the
 * local Python kernel, an E2B command or execution): stdout and stderr captured within their bounds and passed
 * on as live output, a deadline, a cancel on abort, and the call's duration. How a run is stopped, and what its
 * end looks like, is the caller's.
 */
import { StringDecoder } from 'node:string_decoder';

import { type CapturedOutput, OutputCapture } from './output-capture';
import type { CallControls, OutputStream } from './types';

/** Why a run is stopped before it ended by itself. */
export type StopReason = 'timeout' | 'cancel';

export interface RunToCompletionOptions {
  /** Bytes kept per stream (head and tail). */
  readonly maxOutputBytes: number;
  /** Receives each stream's output as it is taken. */
  readonly onOutput?: CallControls['onOutput'];
  /** The clock the duration is measured on, in milliseconds. @default performance.now */
  readonly now?: () => number;
}

/** When and how a run is stopped early. */
export interface StopRules {
  /** Milliseconds from `arm` to `stop('timeout')`. @default none: only a cancel stops it */
  readonly timeoutMs?: number;
  /** Its abort calls `stop('cancel')`, at once when it is already aborted. */
  readonly signal?: AbortSignal;
  /** Stops the run. Called once at the deadline and once at the abort, whichever come. */
  readonly stop: (why: StopReason) => void;
}

/** One run's output, deadline and cancel. Output may be taken before `arm` (a run that streams as it starts). */
export class RunToCompletion {
  private readonly now: () => number;
  private readonly startedMs: number;
  private readonly captures: Record<OutputStream, OutputCapture>;
  /** Per stream: a character split between two chunks of bytes is passed on once its end arrived. */
  private readonly decoders: Record<OutputStream, StringDecoder>;
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => void) | undefined;
  private timedOutAt = false;
  private cancelledAt = false;

  /** Starts the duration now. */
  constructor(private readonly options: RunToCompletionOptions) {
    this.now = options.now ?? (() => performance.now());
    this.startedMs = this.now();
    const { maxOutputBytes } = options;
    this.captures = { stdout: new OutputCapture(maxOutputBytes), stderr: new OutputCapture(maxOutputBytes) };
    this.decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  }

  /** The deadline passed (whether or not the run then ended otherwise). */
  get timedOut(): boolean {
    return this.timedOutAt;
  }

  /** The call was aborted. */
  get cancelled(): boolean {
    return this.cancelledAt;
  }

  /** Takes text of `stream`: into its capture, then on as live output. */
  take(stream: OutputStream, text: string): void {
    this.captures[stream].push(Buffer.from(text, 'utf8'));
    this.options.onOutput?.(stream, text);
  }

  /** Takes bytes of `stream`: into its capture as they are, then on as live output, as text. */
  takeBytes(stream: OutputStream, chunk: Buffer): void {
    this.captures[stream].push(chunk);
    const { onOutput } = this.options;
    if (onOutput !== undefined) onOutput(stream, this.decoders[stream].write(chunk));
  }

  /** `take` as the output callbacks of an SDK call. */
  callbacks(): { onStdout: (text: string) => void; onStderr: (text: string) => void } {
    return { onStdout: (text) => this.take('stdout', text), onStderr: (text) => this.take('stderr', text) };
  }

  /** Starts the deadline and listens for the abort. Call `disarm` once the run ended. */
  arm({ timeoutMs, signal, stop }: StopRules): void {
    if (timeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.timedOutAt = true;
        stop('timeout');
      }, timeoutMs);
    }
    const onAbort = (): void => {
      this.cancelledAt = true;
      stop('cancel');
    };
    if (signal?.aborted) onAbort();
    else if (signal !== undefined) {
      signal.addEventListener('abort', onAbort, { once: true });
      this.unlisten = () => signal.removeEventListener('abort', onAbort);
    }
  }

  /** Ends the deadline and the abort's listener. */
  disarm(): void {
    clearTimeout(this.timer);
    this.unlisten?.();
    this.unlisten = undefined;
  }

  /** Both streams as captured so far. */
  output(): { stdout: CapturedOutput; stderr: CapturedOutput } {
    return { stdout: this.captures.stdout.result(), stderr: this.captures.stderr.result() };
  }

  /** Whole milliseconds since the run was made. */
  elapsedMs(): number {
    return Math.round(this.now() - this.startedMs);
  }
}
