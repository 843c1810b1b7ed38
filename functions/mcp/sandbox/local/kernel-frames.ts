/**
 * The Python kernel's control channel (fd 3), read as JSON lines (kernel.py writes them). The kernel's process
 * runs the user's code, which can write to fd 3 too, so a line is held only up to a limit the reader asks for at
 * each chunk: a longer one is skipped to its end without being kept, and reported as dropped.
 */
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
  private parts: Buffer[] = [];
  private size = 0;
  /** Bytes of the line being skipped, or -1 while a line is being kept. */
  private skipped = -1;

  constructor(private readonly options: KernelFrameReaderOptions) {}

  feed(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      this.take(chunk.subarray(start, end));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  private take(piece: Buffer): void {
    if (this.skipped >= 0) {
      this.skipped += piece.length;
    } else if (this.size + piece.length > this.options.limitBytes()) {
      this.skipped = this.size + piece.length;
      this.parts = [];
      this.size = 0;
    } else if (piece.length > 0) {
      this.parts.push(Buffer.from(piece));
      this.size += piece.length;
    }
  }

  private endLine(): void {
    if (this.skipped >= 0) {
      const bytes = this.skipped;
      this.skipped = -1;
      this.options.onDropped(bytes);
      return;
    }
    const line = Buffer.concat(this.parts, this.size).toString('utf8');
    this.parts = [];
    this.size = 0;
    const frame = toFrame(line);
    if (frame !== undefined) this.options.onFrame(frame);
  }
}

function toFrame(line: string): KernelFrame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const frame = value as Record<string, unknown>;
  switch (frame.t) {
    case 'ready':
      return { t: 'ready' };
    case 'result':
      return typeof frame.d === 'string' ? { t: 'result', d: frame.d } : undefined;
    case 'image':
      return typeof frame.d === 'string' && typeof frame.mime === 'string' ? { t: 'image', mime: frame.mime, d: frame.d } : undefined;
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
