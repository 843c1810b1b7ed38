/**
 * What a client may cost before it says who it is: the server reads nothing of a request body before the
 * token is checked (node-listener.ts); here, the connections themselves. Caps on open connections in total
 * and per peer address, a deadline for a connection's first request (Node's own `headersTimeout` only runs
 * once a request has begun), and deadlines for headers and the whole request (never the answer: tool calls
 * run for minutes).
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  /** Open connections at most (MCP_MAX_CONNECTIONS). */
  readonly maxConnections: number;
  /** Open connections from one address at most; 0 for none (MCP_MAX_CONNECTIONS_PER_PEER). */
  readonly maxPerPeer: number;
  /** A new connection must start a request within this (0: no deadline). @default 10 s */
  readonly firstRequestMs?: number;
  /** A request's headers must arrive within this. @default 10 s */
  readonly headersMs?: number;
  /** A request (headers and body, not the answer) must arrive within this. @default 30 s */
  readonly requestMs?: number;
}

/** The options for `http.createServer` that bound how long a request may take to arrive. */
export function serverTimeouts(limits: ConnectionLimits): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  return { headersTimeout: limits.headersMs ?? 10_000, requestTimeout: limits.requestMs ?? 30_000, connectionsCheckingInterval: 1_000 };
}

/** Applies the caps and the first-request deadline to `server`. */
export function guardConnections(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections;
  const perPeer = new Map<string, number>();
  const firstRequestMs = limits.firstRequestMs ?? 10_000;
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress ?? '';
    const open = (perPeer.get(peer) ?? 0) + 1;
    perPeer.set(peer, open);
    socket.once('close', () => {
      const left = (perPeer.get(peer) ?? 1) - 1;
      if (left <= 0) perPeer.delete(peer);
      else perPeer.set(peer, left);
    });
    if (limits.maxPerPeer > 0 && open > limits.maxPerPeer) {
      socket.destroy();
      return;
    }
    if (firstRequestMs === 0) return;
    const deadline = setTimeout(() => socket.destroy(), firstRequestMs);
    deadline.unref();
    socket.once('close', () => clearTimeout(deadline));
    FIRST_REQUEST.set(socket, deadline);
  });
  server.on('request', (req) => {
    const deadline = FIRST_REQUEST.get(req.socket);
    if (deadline === undefined) return;
    clearTimeout(deadline);
    FIRST_REQUEST.delete(req.socket);
  });
}

/** Each connection's first-request timer, until its first request. */
const FIRST_REQUEST = new WeakMap<Socket, NodeJS.Timeout>();
