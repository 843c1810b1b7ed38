/**
 * envd's `/files` (E2B's envd HTTP API) for one sandbox: GET downloads a file (404 when
 * missing, 400 for a directory, gzip when the client prefers it), POST uploads multipart/form-data (the path
 * in the query or in each part's filename) or application/octet-stream (the path in the query, gzip allowed),
 * creating parent directories, and answers the written entries. Without the access token in
 * `X-Access-Token` a request must carry the SDK's signature (`downloadUrl`/`uploadUrl`). Errors are
 * `{code, message}` JSON. Reads and writes run in the sandbox's agent (its view of paths and symlinks).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';

import { ConnectError, readBody } from './connect';
import { expandAndResolve, type SandboxUser, userNamed } from './envd-users';
import { boundaryOf, parseMultipart } from './multipart';
import { AgentError, type SandboxRuntime } from './sandbox-runtime';

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

/** Encodings in Accept-Encoding, best first (envd's parseAcceptEncoding, gzip being the one it supports). */
function responseEncoding(header: string | undefined): 'gzip' | 'identity' | undefined {
  if (header === undefined || header.trim() === '') return 'identity';
  const accepted = header.split(',').map((value) => {
    const [name = '', ...params] = value.split(';').map((s) => s.trim());
    const q = params.find((p) => p.toLowerCase().startsWith('q='));
    return { name: name.toLowerCase(), q: q === undefined ? 1 : Number(q.slice(2)) || 0 };
  });
  const has = (name: string, refused: boolean): boolean =>
    accepted.some((e) => e.name === name && (e.q === 0) === refused);
  const identityRejected = has('identity', true) || (has('*', true) && !has('identity', false));
  for (const e of [...accepted].sort((a, b) => b.q - a.q)) {
    if (e.q === 0) continue;
    if (e.name === 'identity') return 'identity';
    if (e.name === '*') return identityRejected ? 'gzip' : 'identity';
    if (e.name === 'gzip') return 'gzip';
  }
  return identityRejected ? undefined : 'identity';
}

export class FilesHandler {
  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly accessToken: string | undefined,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    try {
      if (req.method === 'GET') await this.download(req, res, url);
      else if (req.method === 'POST') await this.upload(req, res, url);
      else throw new HttpError(405, `method ${req.method} not allowed`);
    } catch (err) {
      req.resume();
      const error = httpErrorOf(err);
      if (!res.headersSent) writeJsonError(res, error.status, error.message);
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
    const header = req.headers['x-access-token'];
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

  private async download(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    req.resume();
    this.authorize(req, url, 'read');
    const user = this.userOf(url);
    const path = expandAndResolve(url.searchParams.get('path') ?? '', user);
    const { header, payload } = await this.runtime.request({ t: 'readFile', path });
    const encoding = responseEncoding(req.headers['accept-encoding']);
    if (encoding === undefined) throw new HttpError(406, 'no acceptable encoding found, supported: [identity, gzip]');
    const modifiedMs = (header.result as { modifiedMs: number }).modifiedMs;
    const body = encoding === 'gzip' ? gzipSync(payload) : payload;
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': `inline; filename=${JSON.stringify(posix.basename(path))}`,
      'Content-Length': body.length,
      'Last-Modified': new Date(modifiedMs).toUTCString(),
      Vary: 'Accept-Encoding',
      ...(encoding === 'gzip' ? { 'Content-Encoding': 'gzip' } : {}),
    });
    res.end(body);
  }

  private async upload(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    this.authorize(req, url, 'write');
    const raw = await readBody(req);
    const contentEncoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
    if (contentEncoding !== 'identity' && contentEncoding !== 'gzip') {
      throw new HttpError(
        400,
        `error decompressing request body: unsupported Content-Encoding: ${contentEncoding}, supported: [gzip]`,
      );
    }
    let body: Buffer;
    try {
      body = contentEncoding === 'gzip' ? gunzipSync(raw) : raw;
    } catch (err) {
      throw new HttpError(400, `error decompressing request body: ${(err as Error).message}`);
    }
    const user = this.userOf(url);
    const queryPath = url.searchParams.get('path') ?? undefined;
    const contentType = req.headers['content-type'] ?? '';
    const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
    const files: Array<{ path: string; data: Buffer }> = [];
    if (mediaType === 'application/octet-stream') {
      if (queryPath === undefined) throw new HttpError(400, 'path query parameter is required for raw body upload');
      files.push({ path: expandAndResolve(queryPath, user), data: body });
    } else if (mediaType.startsWith('multipart/')) {
      const boundary = boundaryOf(contentType);
      if (boundary === undefined)
        throw new HttpError(500, 'error parsing multipart form: no multipart boundary param in Content-Type');
      let parts: ReturnType<typeof parseMultipart>;
      try {
        parts = parseMultipart(body, boundary);
      } catch (err) {
        throw new HttpError(500, `error reading form: ${(err as Error).message}`);
      }
      for (const part of parts) {
        if (part.name !== 'file') continue;
        const path = expandAndResolve(queryPath ?? part.filename ?? '', user);
        if (files.some((f) => f.path === path)) {
          const message =
            `you cannot upload multiple files to the same path '${path}' in one upload request, only the first ` +
            `specified file was uploaded`;
          throw new HttpError(400, message);
        }
        files.push({ path, data: part.data });
      }
    } else {
      throw new HttpError(
        400,
        `unsupported content type: ${contentType}, expected multipart/form-data or application/octet-stream`,
      );
    }
    const written: Array<{ path: string; name: string; type: 'file' }> = [];
    for (const file of files) {
      await this.runtime.request({ t: 'writeFile', path: file.path }, file.data);
      written.push({ path: file.path, name: posix.basename(file.path), type: 'file' });
    }
    const answer = Buffer.from(JSON.stringify(written));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': answer.length });
    res.end(answer);
  }
}
