/**
 * A capped, append-only output log on disk with absolute offsets: when it outgrows its cap, the oldest
 * half is dropped and counted, so that offsets handed out earlier stay valid.
 */
import { appendFile, open, readFile, writeFile } from 'node:fs/promises';

import type { ProcessLogPage } from './types';

export class ProcessLog {
  private size: number;
  private dropped = 0;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly capBytes: number,
    /** Bytes already in the file (a log left by another server instance). */
    existingBytes = 0,
  ) {
    this.size = existingBytes;
  }

  /** Bytes written in all (kept or dropped). */
  get totalBytes(): number {
    return this.dropped + this.size;
  }

  /** Appends a chunk (writes are serialized). */
  append(chunk: Buffer): Promise<void> {
    this.writing = this.writing.then(async () => {
      await appendFile(this.path, chunk);
      this.size += chunk.length;
      if (this.size > this.capBytes) {
        const kept = (await readFile(this.path)).subarray(this.size - Math.floor(this.capBytes / 2));
        await writeFile(this.path, kept);
        this.dropped += this.size - kept.length;
        this.size = kept.length;
      }
    }).catch(() => undefined);
    return this.writing;
  }

  /** Reads from absolute `offset` on (clamped to what is kept), or the last `limitBytes` without one. */
  async read(offset: number | undefined, limitBytes: number): Promise<ProcessLogPage> {
    await this.writing;
    const total = this.totalBytes;
    const from = Math.max(this.dropped, Math.min(total, offset ?? total - limitBytes));
    const length = Math.min(limitBytes, total - from);
    const buffer = Buffer.alloc(length);
    if (length > 0) {
      const handle = await open(this.path, 'r');
      try {
        await handle.read(buffer, 0, length, from - this.dropped);
      } finally {
        await handle.close();
      }
    }
    return { text: buffer.toString('utf8'), offset: from, nextOffset: from + length, totalBytes: total, droppedBytes: this.dropped };
  }
}
