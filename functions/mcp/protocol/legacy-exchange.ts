/**
 * One request of a 2025 session, served by an SDK server as `createMcpHandler`'s stateless fallback would serve it,
 * with less work. The server is built the same way and every byte of the answer is the same (an SSE stream: the
 * request's notifications, then its result or error, with a `:` keep-alive meanwhile); what is left out is work
 * that the lane has already done or that answers nothing: the body's classification by era, its second check
 * against the JSON-RPC schema, a server built and closed per request (servers are kept connected and lent, below),
 * the fallback's second stream that re-streams the answer only to see it end, and web streams: the answer's body
 * is pushed to the Node shell as text (http/node-listener.ts). test/unit/protocol/legacy-exchange.test.ts compares
 * the two answer by answer.
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
 * Serves `message` for `binding` through a server lent by `slots` and resolves with the answer, whose body streams
 * while the request runs. The handlers get no `ctx.http` (the fallback gives them the web `Request` there): none of
 * ours reads it, since the lanes bind what a call needs (protocol/mcp-server.ts), and making a `Request` for it
 * would cost what the Node shell saves by not making one (http/context.ts).
 */
export async function serveExchange<B>(
  slots: () => Promise<ServerSlot<B>>,
  binding: B,
  message: PlainRequest,
  keepAliveMs: number,
): Promise<Response> {
  const answer = new ExchangeAnswer(message.id, await slots());
  answer.start(message, binding, keepAliveMs);
  return pushedResponse(answer, { status: 200, headers: SSE_HEADERS });
}

/**
 * The answer to one request: its SSE stream (a pushed body, http/node-listener.ts). The server's messages about the
 * request become events; its result or error ends the stream and gives the server back. Others have nowhere to go,
 * as in the SDK's stateless serving (no standalone stream).
 */
class ExchangeAnswer<B> implements PushedBody, SlotTarget {
  private sink: BodySink | undefined;
  /** What was written before the shell took the body (a quick answer is complete by then). */
  private pending: string[] = [];
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  private open = true;

  constructor(
    private readonly id: string | number,
    private readonly slot: ServerSlot<B>,
  ) {}

  start(message: PlainRequest, binding: B, keepAliveMs: number): void {
    this.slot.dispatch(message as JSONRPCMessage, binding, this);
    // An answer given at once (an unknown method) ended the stream already: no keep-alive then.
    if (this.open && Number.isFinite(keepAliveMs) && keepAliveMs >= 1) {
      const keepAlive = setInterval(() => this.write(KEEP_ALIVE_FRAME), Math.min(keepAliveMs, MAX_TIMER_DELAY_MS));
      keepAlive.unref();
      this.keepAlive = keepAlive;
    }
  }

  /** Writes the server's message about this request as an SSE event; its response ends the stream. */
  send(message: JSONRPCMessage, options?: TransportSendOptions): void {
    const isResponse = 'result' in message || 'error' in message;
    const related = isResponse ? message.id : options?.relatedRequestId;
    if (!this.open || related !== this.id) return;
    this.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    if (!isResponse) return;
    this.finish();
    this.slot.release();
  }

  pipe(sink: BodySink): void {
    this.sink = sink;
    for (const text of this.pending) sink.write(text);
    this.pending = [];
    if (!this.open) sink.end();
  }

  /** The client went away before the answer: the server is closed, as the fallback's teardown does. */
  cancel(): void {
    if (!this.open) return;
    this.sink = undefined;
    this.finish();
    this.slot.discard();
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

// Servers kept connected between requests: each serves one request at a time, bound to that request's binding, over
// a transport that outlives the requests. The SDK's stateless serving builds a server per request; that allocates
// its handler maps for every call, and keeping them alive while the call runs is much of what each call leaves for
// V8's old space (bench/PROFILE.md). A server whose request was left unanswered (the client went away) is closed,
// as the SDK's serving closes it, and never used again.

/** Where a slot's server sends what it says while it serves a request. */
export interface SlotTarget {
  send(message: JSONRPCMessage, options?: TransportSendOptions): void;
}

/** A connected server, lent for one request. */
export interface ServerSlot<B> {
  /** Serves `message` for `binding`: the server's messages go to `target` until the slot is given back. */
  dispatch(message: JSONRPCMessage, binding: B, target: SlotTarget): void;
  /** The request was answered: the server serves another. */
  release(): void;
  /** The request was left unanswered: its handlers' signals abort (the server is closed) and it serves no other. */
  discard(): void;
}

/**
 * Lends connected servers, built by `build` (given the binding of the request each serves), keeping at most
 * `maxIdle` between requests.
 */
export function createServerSlots<B>(
  build: (binding: () => B) => Server,
  maxIdle: number,
): () => Promise<ServerSlot<B>> {
  const idle: ServerSlot<B>[] = [];
  const make = async (): Promise<ServerSlot<B>> => {
    const transport = new SlotTransport();
    let bound: B | undefined;
    const server = build(() => {
      if (bound === undefined) throw new Error('a request reached a server that serves none');
      return bound;
    });
    await server.connect(transport);
    const slot: ServerSlot<B> = {
      dispatch(message, binding, target) {
        bound = binding;
        transport.target = target;
        transport.onmessage?.(message);
      },
      release() {
        bound = undefined;
        transport.target = undefined;
        if (idle.length < maxIdle) idle.push(slot);
      },
      discard() {
        bound = undefined;
        void server.close();
      },
    };
    return slot;
  };
  return async () => idle.pop() ?? make();
}

/** The transport a server keeps: what it sends goes to the request it serves now, if any. */
class SlotTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  target: SlotTarget | undefined;

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    this.target?.send(message, options);
  }

  async close(): Promise<void> {
    this.target = undefined;
    this.onclose?.();
  }
}
