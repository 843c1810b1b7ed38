/**
 * Handshakes answered on plain `node:http`, without the core (SDK, tools, sandboxes, web `Request`/`Response`):
 * on a cold instance before the core is even loaded, so that a client connects and lists the tools at about
 * the cost of bare Node; on a warm one so that a session that only connected holds no SDK objects (issue 7).
 *
 * It answers only what it can answer exactly as the core would (protocol/early-answers.ts): a POST to `/mcp`
 * that passes the same gates (Host, bearer token, Accept, Content-Type, protocol version header, size), with
 * no Origin (CORS is the core's), carrying a plain `initialize` without a session, or `notifications/initialized`
 * or `tools/list` in a session it started; and GET, which the core refuses with a 405 (clients try it once). Everything else is handed on, with the body when it was read.
 * The sessions it starts are plain data (sessions/fresh-sessions.ts) until a request needs the core.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { Logger } from '../log';
import { earlyInitializeResponse, earlyToolsListResponse, negotiateVersion, readEarlyInitialize, readEarlySessionRequest } from '../protocol/early-answers';
import { HTTP_PROTOCOL_VERSIONS } from '../protocol/versions';
import type { FreshSessions } from '../sessions/fresh-sessions';
import { type SignedIdCodec, toSessionTag } from '../sessions/session-id';
import { ANONYMOUS_PRINCIPAL, type BearerVerifier } from './auth';
import type { RequestBody, RequestLogFields } from './context';
import { hasDuplicateHost, readBody, requestIdOf } from './node-listener';
import { RPC } from './json-rpc-error';
import { MCP_ALLOW, mcpMethodNotAllowed } from './mcp-methods';
import { isHostAllowed, type OriginPolicy } from './origin';
import { logRequest } from './request-log';

export interface EarlyListenerOptions {
  ids: SignedIdCodec;
  fresh: FreshSessions;
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  policy: OriginPolicy;
  /**
   * False when MCP_MAX_SESSIONS sessions are held (as data and by the core), or `principal` holds its share
   * (MCP_MAX_SESSIONS_PER_CREDENTIAL): then the core decides (eviction, 429, 503).
   */
  canOpen: (principal: string) => boolean;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: a session idle for longer is the core's to judge. */
  idleTtlMs: number;
  /** MCP_MAX_BODY_BYTES. */
  maxBodyBytes: number;
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader?: string;
  logger: Logger;
  /** @default Date.now */
  now?: () => number;
}

/**
 * Answered here (`handshakeDone` once the client listed the tools: a good moment to load the core), or to be
 * handed to the core, with the body when it was read.
 */
export type EarlyOutcome = { answered: true; handshakeDone: boolean } | { answered: false; body?: RequestBody };

/** What the core answers to GET /mcp (http/app.ts). */
const GET_NOT_ALLOWED_BODY = JSON.stringify({
  jsonrpc: '2.0',
  error: { code: RPC.SERVER_ERROR, message: mcpMethodNotAllowed('GET') },
  id: null,
});

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' };

/** The early path: a cheap test of the request line and headers, and the answer. */
export interface EarlyListener {
  /** False for requests it surely leaves to the core (most of them: calls in sessions the core holds). */
  mayAnswer(req: IncomingMessage): boolean;
  /** Answers, or leaves to the core; it never writes to `res` unless it answers. */
  answer(req: IncomingMessage, res: ServerResponse): Promise<EarlyOutcome>;
}

export function createEarlyListener(options: EarlyListenerOptions): EarlyListener {
  const { ids, fresh, logger, now = Date.now } = options;

  /** The request line the core would log (http/request-log.ts), with the fields its 2025 lane adds. */
  const logAnswer = (req: IncomingMessage, started: number, status: number, fields: RequestLogFields = {}): void => {
    const line = { requestId: requestIdOf(req, options.requestIdHeader), method: req.method ?? 'POST', path: '/mcp', status, durationMs: performance.now() - started };
    logRequest(logger, line, fields);
  };
  const sessionFields = (method: string, sessionId: string, version: string): RequestLogFields => ({
    mcp_method: method,
    era: 'legacy',
    session: toSessionTag(sessionId),
    protocol_version: version,
  });

  /** A JSON body, or why not. */
  const readMessage = async (req: IncomingMessage): Promise<{ body: RequestBody | undefined; message?: unknown }> => {
    const body = await readBody(req, options.maxBodyBytes);
    if (body === undefined || body.tooLarge) return { body };
    try {
      return { body, message: JSON.parse(body.text) as unknown };
    } catch {
      return { body };
    }
  };

  const initialize = async (req: IncomingMessage, res: ServerResponse, principal: string): Promise<EarlyOutcome> => {
    if (!options.canOpen(principal)) return { answered: false };
    const started = performance.now();
    const { body, message } = await readMessage(req);
    const request = readEarlyInitialize(message);
    if (request === undefined) return { answered: false, body };
    const version = negotiateVersion(request.requestedVersion);
    const nowMs = now();
    const minted = ids.mint('session', principal, nowMs);
    fresh.add({ id: minted.id, key: minted.key, principal, protocolVersion: version, capabilities: request.capabilities, clientInfo: request.clientInfo, lastUsedMs: nowMs });
    res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': minted.id });
    res.end(`event: message\ndata: ${earlyInitializeResponse(request)}\n\n`);
    logAnswer(req, started, 200, sessionFields('initialize', minted.id, version));
    return { answered: true, handshakeDone: false };
  };

  const inSession = async (req: IncomingMessage, res: ServerResponse, principal: string, sessionId: string): Promise<EarlyOutcome> => {
    const session = fresh.get(sessionId, principal);
    if (session === undefined || now() - session.lastUsedMs > options.idleTtlMs) return { answered: false };
    const started = performance.now();
    const { body, message } = await readMessage(req);
    const request = readEarlySessionRequest(message);
    if (request === undefined) return { answered: false, body };
    if (request.method === 'notifications/initialized') {
      res.writeHead(202, {});
      res.end();
    } else {
      const answer = earlyToolsListResponse(request.id, session.protocolVersion);
      if (answer === undefined) return { answered: false, body };
      res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': sessionId });
      res.end(`event: message\ndata: ${answer}\n\n`);
    }
    fresh.touch(session, now());
    logAnswer(req, started, res.statusCode, sessionFields(request.method, sessionId, session.protocolVersion));
    return { answered: true, handshakeDone: request.method === 'tools/list' };
  };

  /** GET /mcp: the 405 the core answers (clients try it once after the handshake, for a stream they do not need). */
  const getNotAllowed = (req: IncomingMessage, res: ServerResponse): EarlyOutcome => {
    const started = performance.now();
    res.writeHead(405, { allow: MCP_ALLOW, 'content-type': 'application/json' });
    res.end(GET_NOT_ALLOWED_BODY);
    logAnswer(req, started, 405);
    return { answered: true, handshakeDone: false };
  };

  return {
    mayAnswer(req) {
      if (req.url !== '/mcp' || (req.method !== 'POST' && req.method !== 'GET')) return false;
      const sessionId = req.headers['mcp-session-id'];
      return req.method === 'GET' || sessionId === undefined || (typeof sessionId === 'string' && fresh.has(sessionId));
    },
    async answer(req, res) {
      const principal = admit(req, options);
      if (principal === undefined) return { answered: false };
      if (req.method === 'GET') return getNotAllowed(req, res);
      const sessionId = req.headers['mcp-session-id'];
      if (sessionId === undefined) return initialize(req, res, principal);
      return typeof sessionId === 'string' ? inSession(req, res, principal, sessionId) : { answered: false };
    },
  };
}

/**
 * The principal of a request the early path may take, or `undefined`: the request is not a GET, or a POST of
 * a 2025-era client, to `/mcp` that passes the core's gates without CORS.
 */
function admit(req: IncomingMessage, options: EarlyListenerOptions): string | undefined {
  const { headers } = req;
  if ((req.method !== 'POST' && req.method !== 'GET') || req.url !== '/mcp' || headers.origin !== undefined) return undefined;
  if (hasDuplicateHost(req) || !isHostAllowed(headers.host ?? null, options.policy)) return undefined;
  if (req.method === 'POST') {
    const version = headers['mcp-protocol-version'];
    if (version !== undefined && (typeof version !== 'string' || !HTTP_PROTOCOL_VERSIONS.includes(version))) return undefined;
    const accept = headers.accept ?? '';
    if (!/application\/json/i.test(accept) || !/text\/event-stream/i.test(accept)) return undefined;
    if (!/^application\/json\s*(;|$)/i.test(headers['content-type'] ?? '')) return undefined;
  }
  if (options.verifier === undefined) return ANONYMOUS_PRINCIPAL;
  const check = options.verifier.check(headers.authorization ?? null);
  return check.ok ? check.principal : undefined;
}
