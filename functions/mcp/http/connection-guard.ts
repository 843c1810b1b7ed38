/**
 * What a client may cost before it says who it is: the server reads nothing of a request body before the
 * token is checked (node-listener.ts); here, the connections themselves. Caps on the connections served in total
 * and per peer address, a deadline for a connection's first request (Node's own `headersTimeout` only runs
 * once a request has begun), and deadlines for headers and the whole request (never the answer: tool calls
 * run for minutes).
 *
 * A connection over a cap is answered, not reset: its request gets 503 with `Retry-After` and `Connection: close`
 * (http/refusals.ts `over_capacity`) and one log line, and the connection closes once the request has been read,
 * so that the close does not reset the answer away. Behind a reverse proxy a reset reaches the client as "socket
 * hang up"; a 503 reaches it as a 503. Such connections are held `refusalHoldMs` at most, and at most
 * `maxRefusing` at a time: beyond that hard ceiling (MCP_MAX_CONNECTIONS + `maxRefusing` open connections in all)
 * a new connection is closed at once, so that nobody can hold an unbounded number of sockets in the refused state.
 *
 * A trusted proxy (MCP_TRUSTED_PROXIES, client-address.ts) carries many clients over few keep-alive connections:
 * its connections are not capped per peer; instead each client it forwards for may have MCP_MAX_CONNECTIONS_PER_PEER
 * requests in flight, and its next one is answered 503 the same way.
 */
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

import type { Logger } from '../log';
import { type ClientAddresses, toAddress } from './client-address';
import { DEFAULT_REQUEST_MS, isStreamingBody, UNTRUSTED_DRAIN_BYTES } from './node-listener';
import { type HttpRefusal, toErrorAnswer } from './refusals';

export interface ConnectionLimits {
  /** Open connections served at most (MCP_MAX_CONNECTIONS). */
  readonly maxConnections: number;
  /** Open connections from one address at most, or requests in flight per client through a trusted proxy; 0 for none
   * (MCP_MAX_CONNECTIONS_PER_PEER). */
  readonly maxPerPeer: number;
  /** A new connection must start a request within this (0: no deadline). @default 10 s */
  readonly firstRequestMs?: number;
  /** A request's headers must arrive within this. @default 10 s */
  readonly headersMs?: number;
  /**
   * A request (headers and body, not the answer) must arrive within this, or it is answered 408 and its connection
   * closed; a body streamed to a file (an upload) instead may stall no longer than this between bytes. @default 30 s
   */
  readonly requestMs?: number;
  /** An idle keep-alive connection is closed after this (0: never). @default 75 s */
  readonly keepAliveMs?: number;
  /** Connections over a cap held at once to be answered 503; beyond, a new one is closed at once. @default 256 */
  readonly maxRefusing?: number;
  /** A connection over a cap is closed this long after it opened, answered or not, in milliseconds. @default 5 s */
  readonly refusalHoldMs?: number;
}

export interface ConnectionGuardOptions {
  limits: ConnectionLimits;
  /** Tells trusted proxies and the clients they forward for. */
  clients: ClientAddresses;
  logger: Logger;
  /** Serves the requests within the caps. */
  serve: RequestListener;
}

/** Connections over a cap held at once to be answered, unless configured. */
export const DEFAULT_MAX_REFUSING = 256;
/** What a refused client is told to wait: connections come and go by the second. */
const REFUSAL_RETRY_AFTER_S = 1;
/** Dropped connections (past the hard ceiling) are logged at most this often, as a count. */
const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * How long an idle keep-alive connection stays open, unless configured. Clients close their idle pooled
 * connections after a few seconds (undici 4 s, or the server's `Keep-Alive` hint less 2 s; httpx 5 s): a server
 * that closes first, as Node's own 5 s does, races a client reusing the socket at that instant, and the client's
 * POST fails as "other side closed". Well above the clients' windows, the client always closes first. Idle
 * connections still count against the caps.
 */
export const DEFAULT_KEEP_ALIVE_MS = 75_000;

/** The options for `http.createServer` that bound how long a request may take to arrive. */
export function serverTimeouts(limits: ConnectionLimits): {
  headersTimeout: number;
  requestTimeout: number;
  connectionsCheckingInterval: number;
} {
  return {
    headersTimeout: limits.headersMs ?? 10_000,
    // Node's own deadline covers every body whole, uploads too, so that a large file on a slow link would be cut:
    // the guard keeps the request deadline itself, and lets a streamed body go on while its bytes come.
    requestTimeout: 0,
    connectionsCheckingInterval: 1_000,
  };
}

/** Applies the caps and the first-request deadline to `server`, and hands the requests within them to `serve`. */
export function guardConnections(server: Server, { limits, clients, logger, serve }: ConnectionGuardOptions): void {
  const { maxConnections, maxPerPeer } = limits;
  const { maxRefusing = DEFAULT_MAX_REFUSING, refusalHoldMs = 5_000, firstRequestMs = 10_000 } = limits;
  const requestMs = limits.requestMs ?? DEFAULT_REQUEST_MS;
  // Past the hard ceiling Node itself closes a new connection before any event ('drop').
  server.maxConnections = maxConnections + maxRefusing;
  server.keepAliveTimeout = limits.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  let served = 0;
  let refusing = 0;
  const perPeer = new Map<string, number>();
  const perClient = new Map<string, number>();
  const refusals = new WeakMap<Socket, HttpRefusal<'over_capacity'>>();
  const proxied = new WeakSet<Socket>();
  const firstRequest = new WeakMap<Socket, NodeJS.Timeout>();

  let dropped = 0;
  let droppedLoggedAtMs = 0;
  const drop = (): void => {
    dropped += 1;
    if (Date.now() - droppedLoggedAtMs < DROP_LOG_INTERVAL_MS) return;
    logger.warn('connections dropped', {
      count: dropped,
      ceiling: maxConnections + maxRefusing,
      max_refusing: maxRefusing,
    });
    dropped = 0;
    droppedLoggedAtMs = Date.now();
  };
  server.on('drop', drop);

  server.on('connection', (socket: Socket) => {
    const peer = toAddress(socket.remoteAddress) ?? '';
    const viaProxy = clients.isTrustedProxy(peer);
    const scope =
      served >= maxConnections
        ? 'server'
        : !viaProxy && maxPerPeer > 0 && (perPeer.get(peer) ?? 0) >= maxPerPeer
          ? 'peer'
          : undefined;
    if (scope !== undefined) {
      if (refusing >= maxRefusing) {
        socket.destroy();
        drop();
        return;
      }
      refusing += 1;
      refusals.set(socket, {
        kind: 'over_capacity',
        scope,
        max: scope === 'server' ? maxConnections : maxPerPeer,
        retryAfterS: REFUSAL_RETRY_AFTER_S,
      });
      const hold = setTimeout(() => socket.destroy(), refusalHoldMs);
      hold.unref();
      socket.once('close', () => {
        refusing -= 1;
        clearTimeout(hold);
      });
      return;
    }
    served += 1;
    if (viaProxy) proxied.add(socket);
    else count(perPeer, peer, 1);
    socket.once('close', () => {
      served -= 1;
      if (!viaProxy) count(perPeer, peer, -1);
    });
    if (firstRequestMs === 0) return;
    const deadline = setTimeout(() => socket.destroy(), firstRequestMs);
    deadline.unref();
    socket.once('close', () => clearTimeout(deadline));
    firstRequest.set(socket, deadline);
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const { socket } = req;
    const deadline = firstRequest.get(socket);
    if (deadline !== undefined) {
      clearTimeout(deadline);
      firstRequest.delete(socket);
    }
    const refusal = refusals.get(socket);
    if (refusal !== undefined) {
      logger.warn('connection refused', {
        scope: refusal.scope,
        max: refusal.max,
        peer: toAddress(socket.remoteAddress),
      });
      answerAndClose(req, res, refusal);
      return;
    }
    if (proxied.has(socket) && maxPerPeer > 0) {
      const client = clients.clientOf(req) ?? '';
      if ((perClient.get(client) ?? 0) >= maxPerPeer) {
        logger.warn('connection refused', {
          scope: 'client',
          max: maxPerPeer,
          peer: toAddress(socket.remoteAddress),
          client,
        });
        answerAndClose(req, res, {
          kind: 'over_capacity',
          scope: 'client',
          max: maxPerPeer,
          retryAfterS: REFUSAL_RETRY_AFTER_S,
        });
        return;
      }
      count(perClient, client, 1);
      res.once('close', () => count(perClient, client, -1));
    }
    if (requestMs > 0 && !req.complete) {
      const bodyDeadline = setTimeout(() => {
        if (!req.complete && !isStreamingBody(req)) refuseSlowBody(req, res, requestMs);
      }, requestMs);
      bodyDeadline.unref();
      res.once('close', () => clearTimeout(bodyDeadline));
    }
    serve(req, res);
  });
}

/**
 * A body that did not arrive in time: answered 408 (when nothing was answered yet) and its connection closed, so
 * that the handler waiting for it ends (node-listener.ts readBody settles when the request closes).
 */
function refuseSlowBody(req: IncomingMessage, res: ServerResponse, requestMs: number): void {
  if (!res.headersSent) {
    const { status, headers, body } = toErrorAnswer({ kind: 'body_timeout', seconds: requestMs / 1000 });
    res.writeHead(status, { ...headers, connection: 'close', 'content-length': String(Buffer.byteLength(body)) });
    res.end(body, () => req.socket.destroy());
    return;
  }
  req.socket.destroy();
}

function count(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}

/**
 * Writes `refusal` and closes the connection once the request has been read: the answer goes out at once, and the
 * rest of the body is read and dropped (a small budget; beyond it the connection goes) before the close. Closing
 * with unread bytes would make the kernel reset the connection, and the client could lose the answer (RFC 9112
 * §9.6, lingering close).
 */
function answerAndClose(req: IncomingMessage, res: ServerResponse, refusal: HttpRefusal<'over_capacity'>): void {
  const { status, headers, body } = toErrorAnswer(refusal);
  res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.write(body);
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > UNTRUSTED_DRAIN_BYTES) req.socket.destroy();
  });
  req.once('end', () => res.end());
  req.resume();
}
