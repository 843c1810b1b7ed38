/**
 * `/files/<name>?t=<token>`: the file URLs the server serves itself (files/file-urls.ts makes them). The token is
 * the only credential: it is checked before anything else, and a URL changed in any part, expired, or used with
 * another method is answered 403 with nothing read or written. Then the sandbox is reached through the table
 * (sessions/sandbox-access.ts, never made anew): a session ended or a sandbox deleted is 410 or 404, and a sandbox
 * reset since (another sandbox id) is 410. Downloads stream with Content-Length, Range and a file name; uploads
 * stream the PUT body to the file, whole or not at all (413 past the cap, 507 past the disk).
 */
import type { FetchHandler, IncomingRequest, RequestContext } from './context';
import type { Logger } from '../log';
import { AppError, isAppError } from '../errors';
import { tooLargeToUpload } from '../sandbox/read-limit';
import type { FileSource, Sandbox } from '../sandbox/types';
import { toUriComponent } from '../uri-component';
import type { CallShare } from '../sessions/call-share';
import type { SandboxAccess } from '../sessions/sandbox-access';
import { toRange } from '../files/byte-range';
import type { FileGrant, FileUrlSigner } from '../files/file-url-token';

export interface FileRouteOptions {
  readonly signer: FileUrlSigner;
  readonly access: SandboxAccess;
  readonly now: () => number;
  /**
   * On FC a function may not set Content-Length (FC frames the body itself and streams only chunked answers) nor
   * `Content-Disposition: attachment`: the file name goes in an `inline` disposition instead.
   */
  readonly onFc: boolean;
  /** MCP_MAX_CALLS_PER_CREDENTIAL: a transfer holds one of its credential's slots of calls in flight. */
  readonly calls: CallShare;
  /** MCP_MAX_FILE_TRANSFERS: transfers in flight on this instance at most (each holds a few MiB of buffers). */
  readonly maxTransfers: number;
  readonly logger: Logger;
}

/** The methods a grant allows: downloads GET (and HEAD), uploads PUT. */
const ALLOWED = { download: ['GET', 'HEAD'], upload: ['PUT'] } as const;

/** Headers every answer of this route carries: it is read from anywhere, with the URL as its only credential. */
const COMMON = {
  'cache-control': 'private, no-store',
  'access-control-allow-origin': '*',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** Serves one request to the route. */
export function createFileRoute(options: FileRouteOptions): FetchHandler {
  const { signer, access, now, onFc, calls, maxTransfers, logger } = options;
  let transfers = 0;

  return async (req: IncomingRequest, ctx: RequestContext): Promise<Response> => {
    if (req.method === 'OPTIONS') return preflight();
    const token = new URL(req.url).searchParams.get('t') ?? '';
    const check = signer.verify(token, now());
    if (!check.ok) {
      ctx.log.error_code = `file_url_${check.reason}`;
      return refuse(
        403,
        check.reason === 'expired'
          ? 'This file URL has expired; ask for a new one (get_file_url).'
          : 'This file URL is not valid: it was changed, cut short, or made by another server.',
      );
    }
    const { grant } = check;
    // From here on the request is the grant holder's: its body may be read.
    ctx.principal = grant.place.principal;
    ctx.log.session = grant.place.tag;
    const allowed: readonly string[] = ALLOWED[grant.mode];
    if (!allowed.includes(req.method)) {
      ctx.log.error_code = 'file_url_method';
      return refuse(403, `This file URL is for ${allowed.join(' or ')} only (it is an ${grant.mode} URL).`, {
        allow: allowed.join(', '),
      });
    }
    // Bounded per instance (every transfer holds buffers) and per credential (one cannot starve the others).
    if (transfers >= maxTransfers) {
      ctx.log.error_code = 'file_transfers';
      return refuse(503, `Too many file transfers on this server right now (${maxTransfers}); retry in a second.`, {
        'retry-after': '1',
      });
    }
    const admitted = calls.admit(grant.place.principal, 1);
    if ('refused' in admitted) {
      ctx.log.error_code = 'credential_calls';
      const { running, max, retryAfterS } = admitted.refused;
      const message =
        `Too many calls and transfers at once: this credential has ${running} ` +
        `(MCP_MAX_CALLS_PER_CREDENTIAL=${max}).`;
      return refuse(429, message, { 'retry-after': String(retryAfterS) });
    }
    transfers += 1;
    let counted = true;
    ctx.onSent(() => {
      if (!counted) return;
      counted = false;
      transfers -= 1;
      admitted.release();
    });
    let reached: Awaited<ReturnType<SandboxAccess>>;
    try {
      reached = await access(grant.place);
    } catch (err: unknown) {
      return failed(err, ctx);
    }
    if ('refusal' in reached) {
      ctx.log.error_code = reached.refusal.code;
      return refuse(reached.refusal.status, reached.refusal.message, { 'retry-after': '5' });
    }
    if ('missing' in reached) {
      ctx.log.error_code = `sandbox_${reached.missing}`;
      return reached.missing === 'ended'
        ? refuse(410, 'The session that made this URL has ended, and its sandbox with it.')
        : refuse(404, 'The sandbox of this URL no longer exists (deleted, or past its retention).');
    }
    const { sandbox, release, signal } = reached;
    let handedOver = false;
    try {
      if (sandbox.info().id !== grant.sandboxId) {
        ctx.log.error_code = 'sandbox_reset';
        return refuse(410, 'The sandbox of this URL was reset since: the file it named is gone.');
      }
      if (grant.mode === 'upload') return await upload(sandbox, grant, req, ctx);
      const source = await sandbox.openFile(grant.path);
      handedOver = true;
      ctx.onSent(release);
      return download(source, req, signal, onFc);
    } catch (err: unknown) {
      return failed(err, ctx);
    } finally {
      if (!handedOver) release();
    }
  };

  async function upload(
    sandbox: Sandbox,
    grant: FileGrant,
    req: IncomingRequest,
    ctx: RequestContext,
  ): Promise<Response> {
    const declared = Number(req.headers.get('content-length'));
    if (declared > grant.maxBytes) {
      ctx.log.error_code = 'file_too_large';
      return refuse(413, tooLargeToUpload(grant.maxBytes).message);
    }
    if (ctx.bodyStream === undefined) throw new Error('an upload reached the route without its body stream');
    const written = await sandbox.receiveFile({ path: grant.path, body: ctx.bodyStream(), maxBytes: grant.maxBytes });
    logger.info('file uploaded', { session: grant.place.tag, bytes: written.bytes });
    return Response.json(
      { path: written.path, bytes: written.bytes, created: written.created },
      { status: written.created ? 201 : 200, headers: COMMON },
    );
  }

  function failed(err: unknown, ctx: RequestContext): Response {
    if (!isAppError(err)) throw err;
    ctx.log.error_code = err.code;
    return refuse(STATUS_OF[err.code] ?? 500, err.message);
  }
}

/** The answer status of each error a transfer can meet. */
const STATUS_OF: Partial<Record<string, number>> = {
  not_found: 404,
  invalid_input: 403,
  too_large: 413,
  request_timeout: 408,
  disk_full: 507,
  sandbox_gone: 410,
  capacity: 503,
  rate_limited: 429,
  backend_busy: 503,
  backend_unreachable: 502,
  sandbox_timeout: 504,
};

function refuse(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { ...COMMON, 'content-type': 'text/plain; charset=utf-8', ...headers },
  });
}

function preflight(): Response {
  return new Response(null, {
    status: 204,
    headers: {
      ...COMMON,
      'access-control-allow-methods': 'GET, HEAD, PUT',
      'access-control-allow-headers': 'content-type, range',
      'access-control-max-age': '600',
    },
  });
}

/** The answer to a download: the whole file or one range of it, streamed as it is read. */
function download(source: FileSource, req: IncomingRequest, signal: AbortSignal, onFc: boolean): Response {
  const size = source.sizeBytes;
  const range = toRange(req.headers.get('range'), size);
  const name = source.path.slice(source.path.lastIndexOf('/') + 1);
  const headers: Record<string, string> = {
    ...COMMON,
    'content-type': 'application/octet-stream',
    'content-disposition': contentDisposition(onFc ? 'inline' : 'attachment', name),
    'accept-ranges': 'bytes',
    'last-modified': source.modifiedAt.toUTCString(),
  };
  if (range.kind === 'unsatisfiable') {
    void source.close().catch(() => undefined);
    return new Response(null, { status: 416, headers: { ...headers, 'content-range': `bytes */${size}` } });
  }
  const [start, end] = range.kind === 'part' ? [range.start, range.end] : [0, size - 1];
  const length = end - start + 1;
  if (!onFc) headers['content-length'] = String(length);
  if (range.kind === 'part') headers['content-range'] = `bytes ${start}-${end}/${size}`;
  const status = range.kind === 'part' ? 206 : 200;
  if (req.method === 'HEAD' || length === 0) {
    void source.close().catch(() => undefined);
    return new Response(null, { status, headers });
  }
  return new Response(toStream(source, start, end, signal), { status, headers });
}

/** Chunks of a download read before the client asks for them (the local backend reads a MiB a chunk). */
const READ_AHEAD_CHUNKS = 2;

/** The file's bytes as a web stream, read only as fast as the client takes them; the file is closed at the end. */
function toStream(source: FileSource, start: number, end: number, signal: AbortSignal): ReadableStream<Uint8Array> {
  const chunks = source.read(start, end)[Symbol.asyncIterator]();
  const close = (): void => void source.close().catch(() => undefined);
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          if (signal.aborted) throw new AppError('sandbox_gone', 'The sandbox ended during the download.');
          const { done, value } = await chunks.next();
          if (done) {
            close();
            controller.close();
          } else controller.enqueue(value);
        } catch (err: unknown) {
          close();
          controller.error(err);
        }
      },
      async cancel() {
        await chunks.return?.();
        close();
      },
    },
    // A few chunks read ahead (a megabyte at most): the next read overlaps the socket's write.
    { highWaterMark: READ_AHEAD_CHUNKS },
  );
}

/** `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266), the plain name kept to safe ASCII. */
export function contentDisposition(kind: 'attachment' | 'inline', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_') || 'file';
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${toUriComponent(name)}`;
}
