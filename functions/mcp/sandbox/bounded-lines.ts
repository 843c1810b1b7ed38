/**
 * Newline-delimited text from a sandbox, read so that no line costs more than a limit: code in the sandbox writes
 * the lines (the local kernel's control channel; an E2B interpreter's answer stream), so a line is held only up to
 * the limit the reader asks for at each chunk, and a longer one is skipped to its end without being kept and
 * reported as dropped. Lines are decoded as UTF-8 whole, so a character split across chunks stays whole.
 */

export interface BoundedLineReaderOptions {
  /** The longest line to keep now, in bytes. */
  limitBytes(): number;
  onLine(line: string): void;
  /** A line over the limit went by (its length in bytes); nothing of it was kept. */
  onDropped(bytes: number): void;
}

/** Splits a byte stream into lines (without their newline). */
export class BoundedLineReader {
  private parts: Buffer[] = [];
  private size = 0;
  /** Bytes of the line being skipped, or -1 while a line is being kept. */
  private skipped = -1;

  constructor(private readonly options: BoundedLineReaderOptions) {}

  feed(chunk: Uint8Array): void {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    while (start < bytes.length) {
      const newline = bytes.indexOf(10, start);
      const end = newline === -1 ? bytes.length : newline;
      this.take(bytes.subarray(start, end));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  /** The stream ended: a last line without its newline counts as a line. */
  end(): void {
    if (this.skipped >= 0 || this.size > 0) this.endLine();
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
    this.options.onLine(line);
  }
}

/**
 * A line (or a small file) read as a JSON object, or `undefined` for anything else: sandbox code writes these lines
 * too, and a record file may be damaged.
 */
export function jsonObjectOf(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
