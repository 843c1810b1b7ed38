/**
 * The one byte range of a download (RFC 9110 §14): `bytes=a-b`, `bytes=a-` and `bytes=-n`. A request for several
 * ranges is served whole (the RFC lets a server ignore Range), so a multipart answer never has to be built.
 */

/** What a Range header asks of a file of `size` bytes. */
export type RangeAsk =
  /** No usable range: the whole file, 200. */
  | { readonly kind: 'whole' }
  /** Bytes `start` to `end` inclusive, 206. */
  | { readonly kind: 'part'; readonly start: number; readonly end: number }
  /** A range that starts past the end, 416. */
  | { readonly kind: 'unsatisfiable' };

/** Reads `header` (the request's Range) against a file of `size` bytes. */
export function toRange(header: string | null, size: number): RangeAsk {
  if (header === null) return { kind: 'whole' };
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  // Several ranges, another unit or nonsense: ignored, as the RFC allows.
  if (match === null) return { kind: 'whole' };
  const [, first = '', last = ''] = match;
  if (first === '') {
    if (last === '') return { kind: 'whole' };
    const suffix = Number(last);
    if (suffix === 0) return { kind: 'unsatisfiable' };
    return size === 0 ? { kind: 'unsatisfiable' } : { kind: 'part', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (!Number.isSafeInteger(start)) return { kind: 'unsatisfiable' };
  const end = last === '' ? size - 1 : Number(last);
  if (last !== '' && end < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'part', start, end: Math.min(end, size - 1) };
}
