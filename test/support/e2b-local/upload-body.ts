/**
 * The body of a POST /files as envd reads it, a chunk at a time: as sent, or gunzipped for `Content-Encoding:
 * gzip`. Go's gzip.NewReader reads the 10-byte gzip header before envd looks at anything else, so a body that does
 * not start with one is refused before the upload begins; what breaks later (a bad checksum, a body cut short) fails
 * the copy into the file. Reading never destroys the request: its answer still has to go out on that connection.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

import { firstHeader } from './http-preconditions';

/** The request's chunks; abandoning them leaves the request paused but whole (`drainRequest` reads the rest). */
async function* requestChunks(req: IncomingMessage): AsyncGenerator<Buffer> {
  const iterator = req.iterator({ destroyOnReturn: false });
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) return;
      yield next.value as Buffer;
    }
  } finally {
    await iterator.return?.();
  }
}

/** `source` gunzipped as it is read (concatenated gzip members included, as Go reads them). */
async function* gunzipped(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const input = Readable.from(source);
  const gunzip = createGunzip();
  input.on('error', (err) => gunzip.destroy(err));
  input.pipe(gunzip);
  try {
    for await (const chunk of gunzip) yield chunk as Buffer;
  } finally {
    input.destroy();
  }
}

/** Go's gzip.NewReader on the first bytes of a body: the error it would give, or undefined for a gzip header. */
function gzipHeaderProblem(head: Buffer): string | undefined {
  if (head.length === 0) return 'EOF';
  if (head.length < 10) return 'unexpected EOF';
  if (head[0] !== 0x1f || head[1] !== 0x8b || head[2] !== 0x08) return 'gzip: invalid header';
  return undefined;
}

/** The body to copy, or why envd refuses it (400 `error decompressing request body: <problem>`). */
export type DecodedBody = { ok: true; chunks: AsyncIterable<Buffer> } | { ok: false; problem: string };

/** envd's getDecompressedBody: identity or gzip by Content-Encoding (its first value, parameters ignored). */
export async function decodeBody(req: IncomingMessage): Promise<DecodedBody> {
  const header = firstHeader(req, 'content-encoding') ?? '';
  const encoding = header.split(';')[0]!.trim().toLowerCase();
  if (header === '' || encoding === 'identity') return { ok: true, chunks: requestChunks(req) };
  if (encoding !== 'gzip') return { ok: false, problem: `unsupported Content-Encoding: ${header}, supported: [gzip]` };
  const chunks = requestChunks(req);
  const head: Buffer[] = [];
  let headBytes = 0;
  while (headBytes < 10) {
    const next = await chunks.next();
    if (next.done === true) break;
    head.push(next.value);
    headBytes += next.value.length;
  }
  const first = Buffer.concat(head);
  const problem = gzipHeaderProblem(first);
  if (problem !== undefined) return { ok: false, problem: `failed to create gzip reader: ${problem}` };
  async function* replayed(): AsyncGenerator<Buffer> {
    yield first;
    yield* chunks;
  }
  return { ok: true, chunks: gunzipped(replayed()) };
}

/** What Go says when reading a body fails, where it is known: a bad checksum, a body cut short (`unexpected EOF`). */
export function readErrorText(err: unknown): string {
  const { code, message } = err instanceof Error ? (err as NodeJS.ErrnoException) : { code: undefined, message: '' };
  if (code === 'Z_BUF_ERROR') return 'unexpected EOF';
  if (code === 'Z_DATA_ERROR' && /incorrect (data|length) check/.test(message)) return 'gzip: invalid checksum';
  if (code === 'ECONNRESET' || message === 'aborted') return 'unexpected EOF';
  return message || String(err);
}

/** All of `chunks` (for a multipart body, parsed whole). */
export async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const all: Buffer[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return Buffer.concat(all);
}

/**
 * Reads and drops what is left of `req` after an early answer, so the client can finish sending and read it. A
 * reader abandoned mid-body still listens for `readable`, which would keep `resume` from flowing: it is dropped.
 */
export function drainRequest(req: IncomingMessage): void {
  req.removeAllListeners('readable');
  req.resume();
}
