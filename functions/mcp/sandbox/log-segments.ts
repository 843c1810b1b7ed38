/**
 * How both backends keep a background process's output: in numbered segment files of LOG_SEGMENT_BYTES
 * (`p1.log.0`, `p1.log.1`, …). Byte `o` of the output lives in segment `floor(o / LOG_SEGMENT_BYTES)`. When a
 * segment fills, the one before it is deleted: the tail is kept (between one and two segments of it), offsets
 * stay absolute, and the byte counts come from the newest segment's number and size alone. One policy, so the
 * local and the E2B backend report the same `outputBytes`, `droppedBytes` and pages for the same output.
 */

/** Size of one segment; at most two are kept (the cap is 8 MiB). */
export const LOG_SEGMENT_BYTES = 4 * 1024 * 1024;

/** The name of segment `index` of process `id`'s log. */
export function segmentName(id: string, index: number): string {
  return `${id}.log.${index}`;
}

/** `{ id, index }` of a segment file name, `undefined` for any other name. */
export function parseSegmentName(name: string): { id: string; index: number } | undefined {
  const match = /^(p\d+)\.log\.(\d+)$/.exec(name);
  return match === null ? undefined : { id: match[1] as string, index: Number(match[2]) };
}

/** A log's segment files as found on disk: their numbers and sizes. */
export type SegmentFile = { readonly index: number; readonly size: number };

/** The log segments among `files` (name and size; other names are passed over), by process id. */
export function groupSegments(files: Iterable<{ name: string; size: number }>): Map<string, SegmentFile[]> {
  const found = new Map<string, SegmentFile[]>();
  for (const { name, size } of files) {
    const parsed = parseSegmentName(name);
    if (parsed === undefined) continue;
    const segments = found.get(parsed.id) ?? [];
    segments.push({ index: parsed.index, size });
    found.set(parsed.id, segments);
  }
  return found;
}

/** Bytes written in all, and bytes at the start no longer kept. */
export interface LogExtent {
  readonly totalBytes: number;
  readonly droppedBytes: number;
}

/** The extent of a log of `totalBytes`. */
export function extentOf(totalBytes: number): LogExtent {
  return { totalBytes, droppedBytes: Math.max(0, Math.floor(totalBytes / LOG_SEGMENT_BYTES) - 1) * LOG_SEGMENT_BYTES };
}

/** The extent of a log from the segments found on disk (name index, size); an empty log when there are none. */
export function extentOfSegments(segments: readonly SegmentFile[]): LogExtent {
  const newest = segments.reduce<SegmentFile | undefined>(
    (a, b) => (a === undefined || b.index > a.index ? b : a),
    undefined,
  );
  return extentOf(newest === undefined ? 0 : newest.index * LOG_SEGMENT_BYTES + newest.size);
}

/** The page to read: from absolute `offset` (clamped to what is kept), or the last `limitBytes` without one. */
export function pageOf(
  extent: LogExtent,
  offset: number | undefined,
  limitBytes: number,
): { from: number; length: number } {
  const { totalBytes, droppedBytes } = extent;
  const from = Math.max(droppedBytes, Math.min(totalBytes, offset ?? totalBytes - limitBytes));
  return { from, length: Math.min(limitBytes, totalBytes - from) };
}

/** Where the bytes `[from, from + length)` lie: per segment, the start within it and how many. */
export function segmentRanges(from: number, length: number): Array<{ index: number; start: number; length: number }> {
  const ranges: Array<{ index: number; start: number; length: number }> = [];
  for (let at = from, end = from + length; at < end; ) {
    const index = Math.floor(at / LOG_SEGMENT_BYTES);
    const start = at - index * LOG_SEGMENT_BYTES;
    const take = Math.min(end - at, LOG_SEGMENT_BYTES - start);
    ranges.push({ index, start, length: take });
    at += take;
  }
  return ranges;
}
