/**
 * Bounded capture of a process stream: keeps the first and the last bytes, counts the rest, and renders
 * `[… N bytes omitted …]` where the middle was dropped. Shared by every backend.
 */

/** One captured stream as tools report it. */
export interface CapturedOutput {
  /** Head and tail of the stream, with an omission marker when the middle was dropped. */
  readonly text: string;
  /** Bytes the stream really produced. */
  readonly totalBytes: number;
  /** True when `text` is not the whole stream. */
  readonly truncated: boolean;
}

/** Accumulates chunks within `maxBytes` (half for the head, half for the tail). */
export class OutputCapture {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(maxBytes: number) {
    this.headLimit = Math.ceil(maxBytes / 2);
    this.tailLimit = Math.floor(maxBytes / 2);
  }

  /** Bytes seen so far. */
  get totalBytes(): number {
    return this.total;
  }

  /** Adds a chunk of the stream. */
  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(this.headLimit - this.headBytes, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.tailLimit === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    while (this.tailBytes > this.tailLimit) {
      const first = this.tail[0];
      if (first === undefined) break;
      const excess = this.tailBytes - this.tailLimit;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
      }
    }
  }

  /** The captured stream; multi-byte characters cut at the edges become U+FFFD. */
  result(): CapturedOutput {
    const kept = this.headBytes + this.tailBytes;
    const omitted = this.total - kept;
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    if (omitted <= 0) return { text: head + tail, totalBytes: this.total, truncated: false };
    return {
      text: `${head}\n[… ${omitted} bytes omitted …]\n${tail}`,
      totalBytes: this.total,
      truncated: true,
    };
  }
}
