/**
 * Go's `http.ServeContent`, which envd answers GET /files with unless it gzips, over a file open in the sandbox.
 * What it does, in order:
 * - `Last-Modified` from the file's time (none for the epoch).
 * - The conditional headers (http-preconditions.ts): 412, empty; 304 without Content-Type or Content-Length; or an
 *   `If-Range` that drops the range.
 * - `Content-Type` by the name's extension, else by sniffing the first 512 bytes.
 * - `Range` (`bytes=a-b`, `a-`, `-n`, lists of them): one range is 206 with `Content-Range: bytes a-b/size`;
 *   several are 206 `multipart/byteranges`; ranges adding up to more than the file are ignored (200, the whole
 *   file); none overlapping the file is 416 with `Content-Range: bytes *\/size` (200 for an empty file); a malformed
 *   one is 416. A 416 is Go's `http.Error` text: `text/plain; charset=utf-8`, `X-Content-Type-Options: nosniff`,
 *   the message and a newline, Last-Modified removed.
 * - `Accept-Ranges: bytes` and `Content-Length` on every 200 and 206.
 * Modelled more simply: Go's type table also holds what the system's mime.types lists, and its sniffer knows
 * HTML, XML, PDF, images, media and archives; here the sniffer tells text (`text/plain; charset=utf-8`) from
 * binary (`application/octet-stream`) only.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { SandboxFileReader } from './agent-transfers';
import { checkPreconditions } from './http-preconditions';

/** The types in Go's built-in table for years (newer Go releases and the system's mime.types add more). */
const TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  '.avif': 'image/avif',
  '.css': 'text/css; charset=utf-8',
  '.gif': 'image/gif',
  '.htm': 'text/html; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.jpeg': 'image/jpeg',
  '.jpg': 'image/jpeg',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.mjs': 'text/javascript; charset=utf-8',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
  '.webp': 'image/webp',
  '.xml': 'text/xml; charset=utf-8',
};

/** Go's mime.TypeByExtension of `name`'s extension, from the built-in table; undefined when it has none. */
export function typeByExtension(name: string): string | undefined {
  const extension = posix.extname(name).toLowerCase();
  return Object.hasOwn(TYPES_BY_EXTENSION, extension) ? TYPES_BY_EXTENSION[extension] : undefined;
}

/** Go's DetectContentType reduced to its last rule: text unless a control byte other than whitespace shows. */
function sniffedType(head: Buffer): string {
  const binary = head.some((b) => b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f));
  return binary ? 'application/octet-stream' : 'text/plain; charset=utf-8';
}

interface ByteRange {
  readonly start: number;
  readonly length: number;
}

/** A decimal as Go's strconv.ParseInt reads it (sign allowed, 64 bits), or undefined. */
function parseInt64(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value > 0x7fffffffffffffffn || value < -0x8000000000000000n ? undefined : Number(value);
}

/** Go's parseRange: the ranges of `header` within `size` bytes, `no-overlap`, or `invalid`. */
function parseRange(header: string, size: number): ByteRange[] | 'no-overlap' | 'invalid' {
  if (header === '') return [];
  if (!header.startsWith('bytes=')) return 'invalid';
  const ranges: ByteRange[] = [];
  let noOverlap = false;
  for (const spec of header.slice('bytes='.length).split(',')) {
    const ra = spec.trim();
    if (ra === '') continue;
    const dash = ra.indexOf('-');
    if (dash < 0) return 'invalid';
    const startText = ra.slice(0, dash).trim();
    const endText = ra.slice(dash + 1).trim();
    if (startText === '') {
      // A suffix: the last `endText` bytes.
      if (endText === '' || endText[0] === '-') return 'invalid';
      const suffix = parseInt64(endText);
      if (suffix === undefined || suffix < 0) return 'invalid';
      const start = size - Math.min(suffix, size);
      ranges.push({ start, length: size - start });
      continue;
    }
    const start = parseInt64(startText);
    if (start === undefined || start < 0) return 'invalid';
    if (start >= size) {
      noOverlap = true;
      continue;
    }
    if (endText === '') {
      ranges.push({ start, length: size - start });
      continue;
    }
    const end = parseInt64(endText);
    if (end === undefined || start > end) return 'invalid';
    ranges.push({ start, length: Math.min(end, size - 1) - start + 1 });
  }
  return noOverlap && ranges.length === 0 ? 'no-overlap' : ranges;
}

function contentRange(range: ByteRange, size: number): string {
  return `bytes ${range.start}-${range.start + range.length - 1}/${size}`;
}

/** Go's http.Error after serveError's clean-up (no Last-Modified on an error). */
function writeServeError(res: ServerResponse, status: number, message: string): void {
  for (const name of ['cache-control', 'content-encoding', 'etag', 'last-modified', 'content-length'])
    res.removeHeader(name);
  const body = Buffer.from(`${message}\n`);
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': body.length,
  });
  res.end(body);
}

/** The body of a multipart/byteranges answer (Go's multipart.Writer: parts' headers sorted by name). */
function byteRanges(file: SandboxFileReader, ranges: readonly ByteRange[], type: string, boundary: string) {
  const partHeader = (range: ByteRange, index: number) =>
    `${index === 0 ? '' : '\r\n'}--${boundary}\r\n` +
    `Content-Range: ${contentRange(range, file.size)}\r\nContent-Type: ${type}\r\n\r\n`;
  const closing = `\r\n--${boundary}--\r\n`;
  const length = ranges.reduce(
    (sum, range, index) => sum + Buffer.byteLength(partHeader(range, index)) + range.length,
    Buffer.byteLength(closing),
  );
  async function* body(): AsyncGenerator<Buffer> {
    for (const [index, range] of ranges.entries()) {
      yield Buffer.from(partHeader(range, index));
      yield* file.chunks(range.start, range.length);
    }
    yield Buffer.from(closing);
  }
  return { length, body };
}

/**
 * Answers `req` with `file` as Go's http.ServeContent does, `name` giving the extension for the type. Resolves once
 * the body is sent; rejects when the client went away or the file could not be read to the end (the headers sent).
 */
export async function serveContent(
  req: IncomingMessage,
  res: ServerResponse,
  name: string,
  file: SandboxFileReader,
): Promise<void> {
  if (file.modifiedMs !== 0) res.setHeader('Last-Modified', new Date(file.modifiedMs).toUTCString());
  const preconditions = checkPreconditions(req, file.modifiedMs);
  if ('done' in preconditions) {
    if (preconditions.done === 304) res.writeHead(304);
    else res.writeHead(412, { 'Content-Length': 0 });
    res.end();
    return;
  }
  let type = typeByExtension(name);
  if (type === undefined) {
    const head: Buffer[] = [];
    for await (const chunk of file.chunks(0, Math.min(512, file.size))) head.push(chunk);
    type = sniffedType(Buffer.concat(head));
  }
  res.setHeader('Content-Type', type);
  const size = file.size;
  let ranges = parseRange(preconditions.range ?? '', size);
  if (ranges === 'no-overlap' && size === 0) ranges = [];
  if (ranges === 'no-overlap') {
    res.setHeader('Content-Range', `bytes */${size}`);
    writeServeError(res, 416, 'invalid range: failed to overlap');
    return;
  }
  if (ranges === 'invalid') {
    writeServeError(res, 416, 'invalid range');
    return;
  }
  if (ranges.reduce((sum, range) => sum + range.length, 0) > size) ranges = [];
  let status = 200;
  let length = size;
  let body: () => AsyncGenerator<Buffer> = () => file.chunks(0, size);
  const [only] = ranges;
  if (ranges.length === 1 && only !== undefined) {
    status = 206;
    length = only.length;
    res.setHeader('Content-Range', contentRange(only, size));
    body = () => file.chunks(only.start, only.length);
  } else if (ranges.length > 1) {
    const boundary = randomBytes(30).toString('hex');
    const multipart = byteRanges(file, ranges, type, boundary);
    status = 206;
    length = multipart.length;
    res.setHeader('Content-Type', `multipart/byteranges; boundary=${boundary}`);
    body = multipart.body;
  }
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Content-Length', length);
  res.writeHead(status);
  await pipeline(Readable.from(body()), res);
}
