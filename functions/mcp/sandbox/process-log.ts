/**
 * A background process's output log on the host (the local backend), in segment files kept as
 * `log-segments.ts` says: appended in order, the tail kept, offsets absolute.
 */
import { appendFile, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

import {
  extentOf,
  extentOfSegments,
  groupSegments,
  LOG_SEGMENT_BYTES,
  pageOf,
  parseSegmentName,
  type SegmentFile,
  segmentName,
  segmentRanges,
} from './log-segments';
import type { ProcessLogPage } from './types';

export class ProcessLog {
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly dir: string,
    private readonly id: string,
    /** Bytes written in all (kept or dropped). */
    private total: number,
  ) {}

  /**
   * A new, empty log for process `id` in `dir`, its first segment made at once: a process that never prints is
   * still listed from its log (by a later instance, after a sleep).
   */
  static async create(dir: string, id: string): Promise<ProcessLog> {
    const log = new ProcessLog(dir, id, 0);
    await appendFile(log.segment(0), Buffer.alloc(0));
    return log;
  }

  /** The log process `id` left in `dir` (another server instance wrote it); `undefined` when there is none. */
  static async open(dir: string, id: string): Promise<ProcessLog | undefined> {
    const segments = (await segmentsIn(dir)).get(id);
    return segments === undefined ? undefined : new ProcessLog(dir, id, extentOfSegments(segments).totalBytes);
  }

  get totalBytes(): number {
    return this.total;
  }

  /** Appends a chunk (writes are serialized); a full segment drops the one before it. */
  append(chunk: Buffer): Promise<void> {
    this.writing = this.writing
      .then(async () => {
        let at = 0;
        for (const range of segmentRanges(this.total, chunk.length)) {
          await appendFile(this.segment(range.index), chunk.subarray(at, at + range.length));
          at += range.length;
          this.total += range.length;
          if (this.total % LOG_SEGMENT_BYTES === 0 && range.index >= 1)
            await rm(this.segment(range.index - 1), { force: true });
        }
      })
      .catch(() => undefined);
    return this.writing;
  }

  /** Settles once every chunk appended so far is written. */
  flushed(): Promise<void> {
    return this.writing;
  }

  /** Reads from absolute `offset` on (clamped to what is kept), or the last `limitBytes` without one. */
  async read(offset: number | undefined, limitBytes: number): Promise<ProcessLogPage> {
    await this.writing;
    const extent = extentOf(this.total);
    const { from, length } = pageOf(extent, offset, limitBytes);
    const parts: Buffer[] = [];
    for (const range of segmentRanges(from, length)) {
      const buffer = Buffer.alloc(range.length);
      const handle = await open(this.segment(range.index), 'r');
      try {
        await handle.read(buffer, 0, range.length, range.start);
      } finally {
        await handle.close();
      }
      parts.push(buffer);
    }
    return { text: Buffer.concat(parts).toString('utf8'), offset: from, nextOffset: from + length, ...extent };
  }

  private segment(index: number): string {
    return join(this.dir, segmentName(this.id, index));
  }
}

/** The log segments in `dir`, by process id. */
export async function segmentsIn(dir: string): Promise<Map<string, SegmentFile[]>> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => parseSegmentName(name) !== undefined);
  const files = await Promise.all(
    names.map(async (name) => ({ name, size: (await stat(join(dir, name)).catch(() => undefined))?.size ?? 0 })),
  );
  return groupSegments(files);
}
