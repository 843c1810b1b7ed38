/**
 * envd's `/files` (E2B's envd HTTP API) for one sandbox, modelled on envd's GetFiles and PostFiles handlers.
 *
 * GET, in envd's order: the access token in `X-Access-Token` or the SDK's signature (`downloadUrl`; 401), the user
 * (401 when unknown), the path (400 when it cannot be expanded), a stat (404 missing, 400 a directory),
 * Accept-Encoding (406 when it refuses identity and gzip), `Vary: Accept-Encoding`, then
 * `Content-Disposition: inline; filename=<base name>` (Go's mime.FormatMediaType: quoted only when it must be) and:
 * - gzip when the client prefers it and sends no Range, If-Modified-Since, If-None-Match or If-Range: 200,
 *   `Content-Encoding: gzip`, a Content-Type by extension (else application/octet-stream), the file compressed as
 *   it is read, chunked: no Content-Length, Last-Modified or Accept-Ranges;
 * - otherwise Go's http.ServeContent (serve-content.ts): those headers force identity (406 when the client refused
 *   identity), and it answers ranges (206 with Content-Range, multipart/byteranges for several, 416 outside the
 *   file), conditions (304, 412), `Accept-Ranges: bytes`, Content-Length and Last-Modified.
 * HEAD and any other method are not envd routes: behind envd's access-token check (which only GET and POST /files
 * skip, sandbox-traffic.ts) its router answers 405, empty, with `Allow: GET` and `Allow: POST`.
 *
 * POST: the token or the signature (`uploadUrl`), Content-Encoding (identity or gzip, else 400; a gzip body without
 * a gzip header 400), the user, then by Content-Type: `application/octet-stream` copies the body into the file at
 * `path` (required); `multipart/form-data` writes each `file` part in turn (to `path`, else the part's filename;
 * a second part for one path 400, after the first was written); anything else 400. Each write makes the parent
 * directories, refuses a directory (400), truncates and copies: a full disk is 507 (`attempted to write
 * <Content-Length> bytes: not enough disk space available`; out of inodes at the open), a body that breaks off
 * 500. The answer lists the written entries as JSON, typed `text/plain; charset=utf-8` (envd sets no type; Go
 * sniffs it). Errors are `{code, message}` JSON.
 *
 * Here the agent reads and writes (its view of paths and symlinks), a chunk at a time (agent-transfers.ts), so a
 * file of any size moves in bounded memory; a multipart body is read whole before its parts are written.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

import { openForRead, openForWrite, TRANSFER_CHUNK_BYTES } from './agent-transfers';
import { ConnectError } from './connect';
import { inlineDisposition, refusesIdentity, responseEncoding } from './envd-file-headers';
import { expandAndResolve, type SandboxUser, userNamed } from './envd-users';
import { firstHeader } from './http-preconditions';
import { boundaryOf, parseMultipart } from './multipart';
import { AgentError, type SandboxRuntime } from './sandbox-runtime';
import { serveContent, typeByExtension } from './serve-content';
import { collect, decodeBody, drainRequest, readErrorText } from './upload-body';

export function writeJsonError(res: ServerResponse, status: number, message: string): void {
  const body = Buffer.from(`${JSON.stringify({ code: status, message })}\n`);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': body.length,
  });
  res.end(body);
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function httpErrorOf(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof AgentError) return new HttpError(err.status, err.message);
  if (err instanceof ConnectError) return new HttpError(err.code === 'invalid_argument' ? 400 : 500, err.message);
  return new HttpError(500, err instanceof Error ? err.message : String(err));
}

/** The SDK's signature of a file URL (`v1_` + unpadded base64 SHA-256 of `path:operation:user:token[:expiration]`). */
export function fileSignature(
  path: string,
  operation: 'read' | 'write',
  username: string,
  token: string,
  expiration?: number,
): string {
  const raw = [path, operation, username, token, ...(expiration === undefined ? [] : [String(expiration)])].join(':');
  return `v1_${createHash('sha256').update(raw).digest('base64').replace(/=+$/, '')}`;
}

/** Request headers that make envd serve identity, for Go's ServeContent to honour (Range and conditionals). */
const SERVE_CONTENT_HEADERS = ['range', 'if-modified-since', 'if-none-match', 'if-range'];

export class FilesHandler {
  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly accessToken: string | undefined,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    try {
      if (req.method === 'GET') await this.download(req, res, url);
      else if (req.method === 'POST') await this.upload(req, res, url);
      else {
        // envd's router (chi) for a method it has no route for at /files.
        req.resume();
        res.writeHead(405, { Allow: ['GET', 'POST'], 'Content-Length': 0 });
        res.end();
      }
    } catch (err) {
      drainRequest(req);
      const error = httpErrorOf(err);
      // Once the headers are out, a failure can only cut the answer short, as Go's server does.
      if (!res.headersSent) writeJsonError(res, error.status, error.message);
      else res.destroy();
    }
  }

  /** Whether `url` carries a signature made with this sandbox's token (what identifies a signed URL's sandbox here). */
  signedBy(url: URL, method: string | undefined): boolean {
    if (this.accessToken === undefined) return false;
    const expiration = url.searchParams.get('signature_expiration');
    const expected = fileSignature(
      url.searchParams.get('path') ?? '',
      method === 'POST' ? 'write' : 'read',
      url.searchParams.get('username') ?? '',
      this.accessToken,
      expiration === null ? undefined : Number(expiration),
    );
    return url.searchParams.get('signature') === expected;
  }

  /** envd's validateSigning: the token in the header, or a valid unexpired signature of this operation. */
  private authorize(req: IncomingMessage, url: URL, operation: 'read' | 'write'): void {
    if (this.accessToken === undefined) return;
    const header = firstHeader(req, 'x-access-token');
    if (header !== undefined && header !== '') {
      if (header !== this.accessToken) throw new HttpError(401, 'access token present in header but does not match');
      return;
    }
    const signature = url.searchParams.get('signature');
    if (signature === null) throw new HttpError(401, 'missing signature query parameter');
    const expirationParam = url.searchParams.get('signature_expiration');
    const expiration = expirationParam === null ? undefined : Number(expirationParam);
    const expected = fileSignature(
      url.searchParams.get('path') ?? '',
      operation,
      url.searchParams.get('username') ?? '',
      this.accessToken,
      expiration,
    );
    if (signature !== expected) throw new HttpError(401, 'invalid signature');
    if (expiration !== undefined && expiration < Date.now() / 1000)
      throw new HttpError(401, 'signature is already expired');
  }

  private userOf(url: URL): SandboxUser {
    const name = url.searchParams.get('username') ?? undefined;
    const user = userNamed(name);
    if (user === undefined) throw new HttpError(401, `error looking up user '${name}': user: unknown user ${name}`);
    return user;
  }

  /** `path` expanded for `user`; a 400 whose message `describe` words as envd's handler does. */
  private resolve(path: string, user: SandboxUser, describe: (reason: string) => string): string {
    try {
      return expandAndResolve(path, user);
    } catch (err) {
      throw new HttpError(400, describe(err instanceof Error ? err.message : String(err)));
    }
  }

  private async download(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    req.resume();
    this.authorize(req, url, 'read');
    const user = this.userOf(url);
    const requested = url.searchParams.get('path') ?? '';
    const path = this.resolve(requested, user, (why) => `error expanding and resolving path '${requested}': ${why}`);
    const file = await openForRead(this.runtime, path);
    try {
      const acceptEncoding = firstHeader(req, 'accept-encoding');
      const encoding = responseEncoding(acceptEncoding);
      if (encoding === undefined)
        throw new HttpError(406, 'error parsing Accept-Encoding: no acceptable encoding found, supported: [gzip]');
      res.setHeader('Vary', 'Accept-Encoding');
      const servesContent = SERVE_CONTENT_HEADERS.some((name) => Boolean(firstHeader(req, name)));
      if (servesContent && refusesIdentity(acceptEncoding))
        throw new HttpError(406, 'identity encoding not acceptable for Range or conditional request');
      res.setHeader('Content-Disposition', inlineDisposition(posix.basename(path)));
      if (encoding === 'gzip' && !servesContent) {
        const type = typeByExtension(requested) ?? 'application/octet-stream';
        res.writeHead(200, { 'Content-Encoding': 'gzip', 'Content-Type': type });
        // Large output chunks: Node's fetch decompresses a response of many small chunks in superlinear time
        // (40 MB in 16 KiB chunks took 10 s, in 1 MiB chunks under 1 s); how a body is chunked means nothing in HTTP.
        const gzip = createGzip({ chunkSize: TRANSFER_CHUNK_BYTES });
        await pipeline(Readable.from(file.chunks(0)), gzip, res);
      } else await serveContent(req, res, requested, file);
    } finally {
      await file.close();
    }
  }

  private async upload(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    this.authorize(req, url, 'write');
    const body = await decodeBody(req);
    if (!body.ok) throw new HttpError(400, `error decompressing request body: ${body.problem}`);
    const user = this.userOf(url);
    const queryPath = url.searchParams.get('path') ?? undefined;
    const contentType = firstHeader(req, 'content-type') ?? '';
    const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
    const written: string[] = [];
    if (mediaType === 'application/octet-stream') {
      if (queryPath === undefined) throw new HttpError(400, 'path query parameter is required for raw body upload');
      const path = this.resolve(queryPath, user, (why) => `error resolving path: ${why}`);
      await this.writeFile(req, path, body.chunks);
      written.push(path);
    } else if (mediaType.startsWith('multipart/')) {
      for (const part of await this.formParts(contentType, mediaType, body.chunks)) {
        if (part.name !== 'file') continue;
        const target = queryPath ?? part.filename;
        if (target === undefined) {
          const message =
            'error getting multipart custom part file name: filename not found in Content-Disposition header';
          throw new HttpError(400, message);
        }
        const path = this.resolve(target, user, (why) => `error resolving path: ${why}`);
        if (written.includes(path)) {
          const others = written.filter((p) => p !== path);
          const message =
            `you cannot upload multiple files to the same path '${path}' in one upload request, only the first ` +
            `specified file was uploaded` +
            (others.length > 1 ? `, also the following files were uploaded: ${others.join(', ')}` : '');
          throw new HttpError(400, message);
        }
        await this.writeFile(req, path, [part.data]);
        written.push(path);
      }
    } else {
      throw new HttpError(
        400,
        `unsupported content type: ${contentType}, expected multipart/form-data or application/octet-stream`,
      );
    }
    const entries = written.map((path) => ({ name: posix.basename(path), path, type: 'file' }));
    const answer = Buffer.from(JSON.stringify(entries));
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': answer.length });
    res.end(answer);
  }

  /** A multipart/form-data body's parts (Go's MultipartReader: form-data only, a boundary required; 500 otherwise). */
  private async formParts(contentType: string, mediaType: string, chunks: AsyncIterable<Buffer>) {
    if (mediaType !== 'multipart/form-data')
      throw new HttpError(500, "error parsing multipart form: request Content-Type isn't multipart/form-data");
    const boundary = boundaryOf(contentType);
    if (boundary === undefined)
      throw new HttpError(500, 'error parsing multipart form: no multipart boundary param in Content-Type');
    try {
      return parseMultipart(await collect(chunks), boundary);
    } catch (err) {
      throw new HttpError(500, `error reading form: ${readErrorText(err)}`);
    }
  }

  /** envd's processFile: opens `path` for writing (agent-transfers.ts) and copies `chunks` into it. */
  private async writeFile(req: IncomingMessage, path: string, chunks: AsyncIterable<Buffer> | Buffer[]): Promise<void> {
    const file = await openForWrite(this.runtime, path);
    try {
      await file.writeAll(chunks);
    } catch (err) {
      if (err instanceof AgentError && err.code === 'no_space') {
        // Go's r.ContentLength: the length as sent (compressed for gzip), -1 when chunked.
        const length = Number(firstHeader(req, 'content-length'));
        throw new HttpError(507, length > 0 ? `attempted to write ${length} bytes: ${err.message}` : err.message);
      }
      if (err instanceof AgentError) throw err;
      throw new HttpError(500, `error writing file: ${readErrorText(err)}`);
    } finally {
      await file.close();
    }
  }
}
