/**
 * The thin Node shell: `node:http` request → IncomingRequest → core handler → streamed `ServerResponse`; and the
 * answers whose body is pushed to it as text.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import { AppError } from '../errors';
import { toAddress } from './client-address';
import type { FetchHandler, IncomingRequest, RequestBody, RequestContext } from './context';
import { MCP_ALLOW, targetsMcp } from './mcp-methods';
import { writeErrorAnswer } from './refusals';

/**
 * Answers whose body its producer pushes as text while the request runs (the SSE stream of a request in a 2025
 * session, protocol/legacy-exchange.ts), which the shell writes to the socket as it comes. Such an answer is a web
 * `Response` with no body of its own, tied to its pushed body here. Why not a web stream: on Node 20 each
 * `ReadableStream` costs tens of µs to make (its constructor makes it transferable to workers) and one promise per
 * chunk read, a measurable share of a cheap call (bench/PROFILE.md). Every host of the core reads an answer's body
 * through `pushedBodyOf` or `webBodyOf`: this shell takes the text; another host (the in-process test harness) gets
 * a web stream made on demand.
 */

/** Where a pushed body goes: its text in order, then its end. */
export interface BodySink {
  write(text: string): void;
  end(): void;
}

/** A body pushed by its producer. */
export interface PushedBody {
  /** Delivers the text written so far and everything after it to `sink`, then its end; once per body. */
  pipe(sink: BodySink): void;
  /** The reader went away before the end: the producer stops. */
  cancel(): void;
}

const PUSHED = new WeakMap<Response, PushedBody>();

/** An answer with `init`'s status and headers whose body is `body`. */
export function pushedResponse(body: PushedBody, init: ResponseInit): Response {
  const response = new Response(null, init);
  PUSHED.set(response, body);
  return response;
}

/** The pushed body of `response`, when it has one. */
export function pushedBodyOf(response: Response): PushedBody | undefined {
  return PUSHED.get(response);
}

/** The body of `response` as a web stream: its own, or one made now from its pushed body (UTF-8); `null` if none. */
export function webBodyOf(response: Response): ReadableStream<Uint8Array> | null {
  const pushed = PUSHED.get(response);
  if (pushed === undefined) return response.body;
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      pushed.pipe({ write: (text) => controller.enqueue(encoder.encode(text)), end: () => controller.close() });
    },
    cancel: () => pushed.cancel(),
  });
}

export interface NodeListenerOptions {
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader?: string;
  /** Called when serving a request fails; `clientGone` when the client went away first (not a server fault). */
  onError?: (err: unknown, clientGone: boolean) => void;
  /** Request bodies are read up to this many bytes (MCP_MAX_BODY_BYTES); beyond it they are marked too large. */
  maxBodyBytes: number;
  /** The client's address, for `ctx.peer` (client-address.ts). @default the socket's peer */
  clientOf?: (req: IncomingMessage) => string | undefined;
  /** A streamed body (ctx.bodyStream) that sends nothing this long ends with a `request_timeout`. @default 30 s */
  stallMs?: number;
}

/** How long a request's body may take, or a streamed one stall, unless configured (connection-guard.ts). */
export const DEFAULT_REQUEST_MS = 30_000;

/** Requests whose body a handler streams: the connection guard's whole-body deadline does not apply to them. */
const STREAMING = new WeakSet<IncomingMessage>();

/** True once a handler took `req`'s body as a stream (an upload). */
export function isStreamingBody(req: IncomingMessage): boolean {
  return STREAMING.has(req);
}

/** Methods a web `Request` can carry; anything else is answered 405 here. */
const WEB_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** A `node:http` request listener; `body` is passed when something before it already read the body. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse, body?: RequestBody) => void;

/**
 * Adapts a core handler to `http.createServer`. A client that disconnects cancels the response stream and
 * aborts `ctx.signal`. The request is a plain IncomingRequest (http/context.ts), not a web `Request`, and carries
 * no signal: a `Request` given one follows it through a `WeakRef`, which V8's minor GC treats as strong, so every
 * request's objects would be promoted to the old space (measured: more and longer GC pauses under load). The
 * modern lane makes a `Request` with the signal itself.
 */
export function createNodeListener(handler: FetchHandler, options: NodeListenerOptions): NodeListener {
  const {
    requestIdHeader,
    onError,
    maxBodyBytes,
    clientOf = (req: IncomingMessage) => toAddress(req.socket.remoteAddress),
    stallMs = DEFAULT_REQUEST_MS,
  } = options;
  return (req, res, preRead) => {
    // The client went away: `ctx.signal` aborts. The signal itself is made only if something asks for it (on Node 20
    // an AbortSignal is a costly object, and most requests never look at theirs).
    const abort = new AbortController();
    let gone = false;
    const hangUp = (): void => {
      gone = true;
      abort.abort();
    };
    res.on('close', () => {
      if (!res.writableFinished) hangUp();
    });
    const requestId = requestIdOf(req, requestIdHeader);
    if (!WEB_METHODS.has(req.method ?? '')) {
      // TRACE and the like cannot even become a web Request (the Fetch spec forbids them).
      writeErrorAnswer(res, {
        kind: 'method_unsupported',
        allow: targetsMcp(req.url) ? MCP_ALLOW : 'GET, POST, DELETE, OPTIONS',
      });
      return;
    }
    if (hasDuplicateHost(req)) {
      writeErrorAnswer(res, { kind: 'duplicate_host' });
      return;
    }
    let request: IncomingRequest;
    let path: string;
    try {
      ({ request, path } = toIncomingRequest(req));
    } catch {
      writeErrorAnswer(res, { kind: 'bad_target' });
      return;
    }
    // The body is read by the shell, once, when a handler past the gates asks (no web stream per request:
    // they are costly in Node); a request refused before that (401) is answered without reading it.
    let body: Promise<RequestBody | undefined> | undefined =
      preRead === undefined ? undefined : Promise.resolve(preRead);
    // A body that cannot be read means the client went away: the request's signal says so before the error.
    const readBodyOrHangUp = (): Promise<RequestBody | undefined> =>
      readBody(req, maxBodyBytes).catch((err: unknown) => {
        hangUp();
        throw err;
      });
    // Run once the answer was written or failed, or the client went away (writeResponse stops then too).
    const sent: Array<() => void> = [];
    const beforeEnd: Array<() => Promise<void>> = [];
    const ctx: RequestContext = {
      requestId,
      path,
      peer: clientOf(req),
      log: {},
      readBody: () => (body ??= readBodyOrHangUp()),
      bodyStream: () => {
        body ??= Promise.resolve(undefined);
        STREAMING.add(req);
        return readChunks(req, abort, stallMs);
      },
      get signal() {
        return abort.signal;
      },
      onSent: (done) => sent.push(done),
      beforeEnd: (step) => beforeEnd.push(step),
    };
    // Trusted: it got past the token check (or its body was wanted). An untrusted one still sending a body is
    // answered with its connection closed, its body discarded up to a small budget.
    const trusted = (): boolean => ctx.principal !== undefined || body !== undefined;
    res.once('finish', () => discardUnread(req, trusted() ? MAX_DRAIN_BYTES : UNTRUSTED_DRAIN_BYTES));
    void handler(request, ctx)
      .then((response) => {
        if (!req.complete) {
          if (!trusted()) response.headers.set('connection', 'close');
          // A client still sending (a 413, say) must be able to read the answer: were the connection closed
          // with its body unread, the kernel would reset it and the answer could be lost. So it stays open,
          // the rest is drained (discardUnread), and the client closes it (RFC 9112 §9.6, lingering close).
          else res.shouldKeepAlive = true;
        }
        const pushed = pushedBodyOf(response);
        if (pushed !== undefined) return writePushed(response, pushed, res, () => gone, beforeEnd);
        return writeResponse(response, res, abort.signal, beforeEnd);
      })
      .catch((err: unknown) => {
        onError?.(err, req.destroyed || res.destroyed);
        if (res.headersSent) res.end();
        else writeErrorAnswer(res, { kind: 'internal_plain' });
      })
      .finally(() => {
        for (const done of sent.splice(0)) done();
      });
  };
}

/** The platform's request id from `header` when it looks like one, else a random one. */
export function requestIdOf(req: IncomingMessage, header: string | undefined): string {
  const value = header === undefined ? undefined : req.headers[header];
  return typeof value === 'string' && value.length > 0 && value.length <= 128 ? value : randomUUID();
}

/** More than one Host line makes a request bad (RFC 9112 §3.2); Node keeps the first and says nothing. */
export function hasDuplicateHost(req: IncomingMessage): boolean {
  const raw = req.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host' && ++seen > 1) return true;
  }
  return false;
}

/**
 * The request as the core reads it, and its path. Throws where a web `Request` could not be made of it either: a
 * target that makes no URL or one with credentials (`@host/…` reads as `http://localhost@host/…`), a header value
 * the Fetch standard refuses.
 */
export function toIncomingRequest(req: IncomingMessage): { request: IncomingRequest; path: string } {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  // The URL's authority is never trusted for routing; only the path is read from it. The body travels in
  // the context (see readBody).
  const url = new URL(`http://localhost${req.url ?? '/'}`);
  if (url.username !== '' || url.password !== '') throw new TypeError('a request target with credentials');
  return { request: { method: req.method ?? 'GET', url: url.href, headers }, path: url.pathname };
}

/**
 * Reads the request body, up to `maxBytes`: a declared or observed excess stops the reading (the rest is
 * drained after the answer, so that a client still sending can read the 413).
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<RequestBody | undefined> {
  const method = req.method ?? 'GET';
  if (method === 'GET' || method === 'HEAD') return Promise.resolve(undefined);
  if (Number(req.headers['content-length']) > maxBytes) return Promise.resolve({ tooLarge: true });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > maxBytes) {
        req.off('data', onData);
        req.pause();
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve({ tooLarge: false, text: Buffer.concat(chunks).toString('utf8') }));
    req.once('error', reject);
    // Closed before its end (the client went, or the connection guard closed a body that came too slowly).
    req.once('close', () => {
      if (!req.complete) reject(new Error('the request closed before its body ended'));
    });
  });
}

/**
 * The body chunk by chunk, as the reader takes them (back-pressure reaches the client). A reader that stops early
 * leaves the stream as it is, for discardUnread to drain after the answer; a client that goes away aborts the
 * request and ends the reading with an error.
 */
async function* readChunks(req: IncomingMessage, abort: AbortController, stallMs: number): AsyncGenerator<Uint8Array> {
  for (;;) {
    for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) yield chunk;
    if (req.readableEnded) return;
    if (req.destroyed) {
      abort.abort();
      throw new Error('the client went away during the upload');
    }
    await new Promise<void>((resolve, reject) => {
      const settle = (err?: Error): void => {
        clearTimeout(stalled);
        req.off('readable', onMore);
        req.off('end', onMore);
        req.off('close', onMore);
        req.off('error', settle);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onMore = (): void => settle();
      const stalled = setTimeout(
        () => settle(new AppError('request_timeout', `The upload stalled: no bytes came for ${stallMs / 1000} s.`)),
        stallMs,
      );
      req.once('readable', onMore);
      req.once('end', onMore);
      req.once('close', onMore);
      req.once('error', settle);
    });
  }
}

/** Bytes of an unread request body discarded after the answer, so that the client can read it (RFC 9112 §9.6). */
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;
/** The same for a request that was refused before anyone looked at its body (no valid token, over a cap): a small
 * budget. */
export const UNTRUSTED_DRAIN_BYTES = 64 * 1024;

/**
 * After the answer, the rest of an unread body is discarded, up to `budget` bytes and DEFAULT_REQUEST_MS; beyond
 * either the connection goes.
 */
function discardUnread(req: IncomingMessage, budget: number): void {
  if (req.complete || req.destroyed) return;
  req.removeAllListeners('data');
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > budget) req.destroy();
  });
  const deadline = setTimeout(() => req.destroy(), DEFAULT_REQUEST_MS);
  deadline.unref();
  req.once('close', () => clearTimeout(deadline));
  req.resume();
}

/** Writes the status and headers of `response`. */
function writeHead(response: Response, res: ServerResponse): void {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
}

async function writeResponse(
  response: Response,
  res: ServerResponse,
  signal: AbortSignal,
  beforeEnd: ReadonlyArray<() => Promise<void>>,
): Promise<void> {
  writeHead(response, res);
  if (response.body === null) {
    // Nothing to wait for in most answers: no await for them.
    if (beforeEnd.length > 0) await runSteps(beforeEnd);
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const cancel = (): void => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || signal.aborted) break;
      if (!res.write(value))
        await new Promise<void>((resolve) => {
          const resume = (): void => {
            res.off('drain', resume);
            signal.removeEventListener('abort', resume);
            resolve();
          };
          res.on('drain', resume);
          signal.addEventListener('abort', resume, { once: true });
        });
    }
  } finally {
    signal.removeEventListener('abort', cancel);
    // Nothing to wait for in most answers: no await for them.
    if (beforeEnd.length > 0) await runSteps(beforeEnd);
    res.end();
  }
}

/** The context's before-end steps, in order; one that fails does not keep the answer from ending. */
async function runSteps(steps: ReadonlyArray<() => Promise<void>>): Promise<void> {
  for (const step of steps) await step().catch(() => undefined);
}

/**
 * Writes an answer whose body is pushed (`pushedResponse`, above) as its text comes, and the before-end steps before
 * its end, as for any answer; a client that goes away (`gone()`, or the response closes before it finished) stops
 * the producer.
 */
function writePushed(
  response: Response,
  body: PushedBody,
  res: ServerResponse,
  gone: () => boolean,
  beforeEnd: ReadonlyArray<() => Promise<void>>,
): Promise<void> {
  writeHead(response, res);
  return new Promise((resolve) => {
    const end = (): void => {
      res.off('close', left);
      const finish = (): void => {
        res.end();
        resolve();
      };
      if (beforeEnd.length === 0) finish();
      else void runSteps(beforeEnd).then(finish);
    };
    const left = (): void => {
      if (res.writableFinished) return;
      body.cancel();
      end();
    };
    if (gone()) {
      left();
      return;
    }
    res.on('close', left);
    body.pipe({ write: (text) => void res.write(text), end });
  });
}
