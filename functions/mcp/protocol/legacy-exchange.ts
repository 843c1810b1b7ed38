/**
 * One request of a 2025 session, served by the SDK server built for it over a transport of one exchange, instead of
 * through `createMcpHandler`'s stateless fallback. The server is the same and so is every byte of the answer (an
 * SSE stream: the request's notifications, then its result or error, with a `:` keep-alive meanwhile); what is left
 * out is work that the lane has already done or that answers nothing: the body's classification by era, its second
 * check against the JSON-RPC schema, the fallback's second stream that re-streams the answer only to see it end,
 * closing the server after its answer (see `send`), and web streams: the answer's body is pushed to the Node shell
 * as text (http/node-listener.ts). test/unit/protocol/legacy-exchange.test.ts compares the
 * two answer by answer.
 *
 * It takes only what the fallback would answer this way: a plain request (readPlainMessage, an id, no `_meta`),
 * whose protocol version header, if any, the server serves and whose Content-Type the SDK calls JSON. Anything
 * else (notifications, batches, odd shapes, refusals the SDK words) is left to the SDK.
 */
import {
  isJsonContentType,
  type JSONRPCMessage,
  type Server,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';

import type { IncomingRequest } from '../http/context';
import { type BodySink, type PushedBody, pushedResponse } from '../http/node-listener';
import { type PlainMessage, readPlainMessage } from './plain-message';

/** A plain JSON-RPC request: a message with an id. */
export type PlainRequest = PlainMessage & { readonly id: string | number };

/** The headers of the SDK transport's SSE answer to a POST (`WebStandardStreamableHTTPServerTransport`). */
const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
});
const KEEP_ALIVE_FRAME = ': keepalive\n\n';
/** setInterval's longest delay, as the SDK clamps it. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** The request in `body` when this exchange serves it as the SDK's stateless fallback would, else `undefined`. */
export function exchangeableRequest(
  req: IncomingRequest,
  body: unknown,
  versions: readonly string[],
): PlainRequest | undefined {
  const message = readPlainMessage(body);
  if (message?.id === undefined || (message.params !== undefined && '_meta' in message.params)) return undefined;
  const version = req.headers.get('mcp-protocol-version');
  if (version !== null && !versions.includes(version)) return undefined;
  return isJsonContentType(req.headers.get('content-type')) ? (message as PlainRequest) : undefined;
}

/**
 * Serves `message` through `server` (fresh, not connected) and resolves with the answer, whose body streams while
 * the request runs. The handlers get no `ctx.http` (the fallback gives them the web `Request` there): none of ours
 * reads it, since the lanes bind what a call needs (protocol/mcp-server.ts), and making a `Request` for it would
 * cost what the Node shell saves by not making one (http/context.ts).
 */
export async function serveExchange(server: Server, message: PlainRequest, keepAliveMs: number): Promise<Response> {
  const exchange = new ExchangeTransport(message.id);
  await server.connect(exchange);
  return exchange.serve(message, keepAliveMs);
}

/**
 * The transport of one request, and its answer's SSE body (http/node-listener.ts). The server's messages about the
 * request go on the stream as events; its result or error ends it. Others have nowhere to go, as in the SDK's
 * stateless serving (no standalone stream).
 */
class ExchangeTransport implements Transport, PushedBody {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  private sink: BodySink | undefined;
  /** What was written before the shell took the body (a quick answer is complete by then). */
  private pending: string[] = [];
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  private open = true;

  constructor(private readonly id: string | number) {}

  async start(): Promise<void> {}

  serve(message: PlainRequest, keepAliveMs: number): Response {
    this.onmessage?.(message as JSONRPCMessage);
    // An answer given at once (an unknown method) ended the stream already: no keep-alive then.
    if (this.open && Number.isFinite(keepAliveMs) && keepAliveMs >= 1) {
      const keepAlive = setInterval(() => this.write(KEEP_ALIVE_FRAME), Math.min(keepAliveMs, MAX_TIMER_DELAY_MS));
      keepAlive.unref();
      this.keepAlive = keepAlive;
    }
    return pushedResponse(this, { status: 200, headers: SSE_HEADERS });
  }

  /**
   * Writes the server's message about this request as an SSE event; its response ends the stream. The server is
   * not closed then: closing it would only abort the call's signal, which the SDK drops once the answer is sent,
   * and it would cost an error object (with its stack) per request.
   */
  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const isResponse = 'result' in message || 'error' in message;
    const related = isResponse ? message.id : options?.relatedRequestId;
    if (related !== this.id) return;
    this.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    if (isResponse) this.finish();
  }

  async close(): Promise<void> {
    if (!this.open) return;
    this.finish();
    this.onclose?.();
  }

  pipe(sink: BodySink): void {
    this.sink = sink;
    for (const text of this.pending) sink.write(text);
    this.pending = [];
    if (!this.open) sink.end();
  }

  /** The client went away: the server is closed, as the fallback's teardown does (its calls' signals abort). */
  cancel(): void {
    this.sink = undefined;
    void this.close();
  }

  private write(text: string): void {
    if (!this.open) return;
    if (this.sink === undefined) this.pending.push(text);
    else this.sink.write(text);
  }

  private finish(): void {
    this.open = false;
    clearInterval(this.keepAlive);
    this.sink?.end();
  }
}
