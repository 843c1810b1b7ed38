/**
 * The Python kernel's control channel (fd 3), read as JSON lines (kernel.py writes them). The kernel's process
 * runs the user's code, which can write to fd 3 too, so the lines are read bounded (bounded-lines.ts): a line
 * over the limit the reader asks for is skipped without being kept, and reported as dropped.
 */
import { BoundedLineReader, jsonObjectOf } from '../bounded-lines';
import type { CodeError } from '../types';

/** What kernel.py sends. */
export type KernelFrame =
  | { t: 'ready' }
  | { t: 'result'; d: string }
  | { t: 'image'; mime: string; d: string }
  | { t: 'done'; id: number; error: CodeError | null };

export interface KernelFrameReaderOptions {
  /** The longest line to keep now, in bytes. */
  limitBytes(): number;
  onFrame(frame: KernelFrame): void;
  /** A line over the limit went by (its length in bytes); nothing of it was kept. */
  onDropped(bytes: number): void;
}

/** Splits the channel's bytes into frames. Malformed lines can only come from user code: they are ignored. */
export class KernelFrameReader {
  private readonly lines: BoundedLineReader;

  constructor(options: KernelFrameReaderOptions) {
    this.lines = new BoundedLineReader({
      limitBytes: options.limitBytes,
      onLine: (line) => {
        const frame = toFrame(line);
        if (frame !== undefined) options.onFrame(frame);
      },
      onDropped: options.onDropped,
    });
  }

  feed(chunk: Buffer): void {
    this.lines.feed(chunk);
  }
}

function toFrame(line: string): KernelFrame | undefined {
  const frame = jsonObjectOf(line);
  switch (frame?.t) {
    case 'ready':
      return { t: 'ready' };
    case 'result':
      return typeof frame.d === 'string' ? { t: 'result', d: frame.d } : undefined;
    case 'image':
      return typeof frame.d === 'string' && typeof frame.mime === 'string'
        ? { t: 'image', mime: frame.mime, d: frame.d }
        : undefined;
    case 'done':
      return typeof frame.id === 'number' ? { t: 'done', id: frame.id, error: toCodeError(frame.error) } : undefined;
    default:
      return undefined;
  }
}

function toCodeError(value: unknown): CodeError | null {
  if (typeof value !== 'object' || value === null) return null;
  const error = value as Record<string, unknown>;
  const text = (field: unknown): string => (typeof field === 'string' ? field : '');
  return { name: text(error.name) || 'Error', value: text(error.value), traceback: text(error.traceback) };
}
