/** The thin Node shell: `node:http` request → web `Request` → core handler → streamed `ServerResponse`. */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { FetchHandler } from './context';

export interface NodeListenerOptions {
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader?: string;
  /** Called when writing a response fails after its head was sent. */
  onError?: (err: unknown) => void;
}

/** Adapts a core handler to `http.createServer`. Client disconnects abort the request's signal. */
export function createNodeListener(handler: FetchHandler, options: NodeListenerOptions = {}) {
  const { requestIdHeader, onError } = options;
  return (req: IncomingMessage, res: ServerResponse): void => {
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const headerId = requestIdHeader === undefined ? undefined : req.headers[requestIdHeader];
    const requestId = typeof headerId === 'string' && headerId.length > 0 && headerId.length <= 128 ? headerId : randomUUID();
    res.once('finish', () => drain(req));
    let request: Request;
    try {
      request = toWebRequest(req, abort.signal);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"bad_request","message":"The request target is not a valid path."}');
      return;
    }
    void handler(request, { requestId, log: {} })
      .then((response) => writeResponse(response, res, abort.signal))
      .catch((err: unknown) => {
        onError?.(err);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end();
      });
  };
}

function toWebRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  // The URL's authority is never trusted for routing; only the path is read from it.
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal };
  if (hasBody) {
    init.body = toBodyStream(req);
    init.duplex = 'half';
  }
  return new Request(`http://localhost${req.url ?? '/'}`, init);
}

/** Bytes of an unread request body discarded after the answer, so that the client can read it (RFC 9112 §9.6). */
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * The request body as a web stream that reads on demand. Cancelling it, or answering before it was
 * read (413), discards the rest instead of resetting the connection under a client that is still sending.
 */
function toBodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  let open = true;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.pause();
      req.on('data', (chunk: Buffer) => {
        if (!open) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.once('end', () => {
        if (open) controller.close();
        open = false;
      });
      req.once('error', (err) => {
        if (open) controller.error(err);
        open = false;
      });
    },
    pull() {
      req.resume();
    },
    cancel() {
      open = false;
      drain(req);
    },
  });
}

function drain(req: IncomingMessage): void {
  if (req.complete || req.destroyed) return;
  req.removeAllListeners('data');
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > MAX_DRAIN_BYTES) req.destroy();
  });
  req.resume();
}

async function writeResponse(response: Response, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body === null) {
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
      if (!res.write(value)) await new Promise<void>((resolve) => {
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
    res.end();
  }
}
