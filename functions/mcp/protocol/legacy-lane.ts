/**
 * The 2025-era lane: one SDK server and sessionful transport per session, held in the session store.
 * This lane owns the `Mcp-Session-Id` lifecycle around the transport: it mints ids, finds sessions
 * (only for the credential that made them), enforces the cap, sweeps idle ones, and rejects batches
 * outside 2025-03-26. The SDK transport does the rest of Streamable HTTP.
 */
import { isInitializeRequest } from '@modelcontextprotocol/server';

import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import type { FetchHandler, RequestContext } from '../http/context';
import { readJsonPost } from '../http/json-body';
import { jsonRpcError, RPC } from '../http/json-rpc-error';
import type { Logger } from '../log';
import { createLazySandbox } from '../sandbox/lazy-sandbox';
import type { SandboxProvider } from '../sandbox/types';
import { mintSessionId, toSessionTag } from '../sessions/session-id';
import type { SessionStore } from '../sessions/store';
import type { ToolCatalog } from '../tools';
import { type LegacySession, openLegacySession } from './legacy-session';
import { BATCH_PROTOCOL_VERSION, HTTP_PROTOCOL_VERSIONS } from './versions';

export interface LegacyLaneOptions {
  store: SessionStore<LegacySession>;
  catalog: ToolCatalog;
  provider: SandboxProvider;
  /** MCP_MAX_SESSIONS. */
  maxSessions: number;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds. */
  idleTtlMs: number;
  /** MCP_MAX_BODY_BYTES. */
  maxBodyBytes: number;
  /** MCP_TOOL_TIMEOUT_MAX_S in milliseconds. */
  toolTimeoutMaxMs: number;
  logger: Logger;
  /** @default Date.now */
  now?: () => number;
}

/** The lane's handler plus what the process needs at shutdown and for `/health`. */
export interface LegacyLane {
  handle: FetchHandler;
  /** Closes every session and kills its sandbox. */
  closeAll(reason: string): Promise<void>;
  /** Sessions held, and how many of them have a running sandbox. */
  counts(): { sessions: number; sandboxes: number };
}

/** Seconds a client is told to wait when the server is at its session cap. */
const CAPACITY_RETRY_AFTER_S = 30;

/** Creates the 2025-era lane. */
export function createLegacyLane(options: LegacyLaneOptions): LegacyLane {
  const { store, logger, now = Date.now } = options;

  const close = async (session: LegacySession, reason: string): Promise<void> => {
    store.remove(session.id);
    try {
      await session.close();
      logger.info('session closed', { session: session.tag, reason });
    } catch (err: unknown) {
      logger.error('session close failed', { session: session.tag, reason, error: err instanceof Error ? err.message : 'unknown' });
    }
  };

  const sweep = (): void => {
    for (const session of store.takeExpired(now())) void close(session, 'idle_expired');
  };

  const find = (id: string, ctx: RequestContext): LegacySession | undefined => {
    const session = store.get(id, now());
    // A session is bound to the credential that created it: for any other it does not exist.
    return session !== undefined && session.principal === ctx.principal ? session : undefined;
  };

  const open = (ctx: RequestContext): LegacySession => {
    const id = mintSessionId();
    const principal = ctx.principal ?? ANONYMOUS_PRINCIPAL;
    const session = openLegacySession({
      id,
      tag: toSessionTag(id),
      principal,
      nowMs: now(),
      catalog: options.catalog,
      sandbox: createLazySandbox(options.provider, { sessionKey: id, principal }),
      backendStatus: () => options.provider.status(),
      idleTtlMs: options.idleTtlMs,
      toolTimeoutMaxMs: options.toolTimeoutMaxMs,
      onInitialized: (s) => store.add(s),
      onDeleted: (s) => close(s, 'deleted'),
    });
    return session;
  };

  const deleteSession = async (req: Request, sessionId: string | null, ctx: RequestContext): Promise<Response> => {
    if (sessionId === null) return missingSessionId();
    const session = find(sessionId, ctx);
    if (session === undefined) return sessionNotFound(ctx);
    ctx.log.session = session.tag;
    return session.transport.handleRequest(req);
  };

  const forward = async (req: Request, sessionId: string, body: unknown, ctx: RequestContext): Promise<Response> => {
    const session = find(sessionId, ctx);
    if (session === undefined) return sessionNotFound(ctx);
    if (!isJsonRpcShaped(body)) return notJsonRpc();
    ctx.log.session = session.tag;
    const version = session.protocolVersion();
    if (version !== undefined) ctx.log.protocol_version = version;
    if (Array.isArray(body) && version !== BATCH_PROTOCOL_VERSION) {
      return jsonRpcError({
        status: 400,
        code: RPC.INVALID_REQUEST,
        message: `Invalid Request: JSON-RPC batches are only allowed with protocol version ${BATCH_PROTOCOL_VERSION}; this session uses ${version ?? 'an unknown version'}`,
      });
    }
    return session.transport.handleRequest(req, { parsedBody: body });
  };

  const initialize = async (req: Request, message: unknown, ctx: RequestContext): Promise<Response> => {
    const body = isInitializeMethod(message) ? withDefaultVersion(message) : message;
    if (!isInitializeRequest(body)) {
      if (isInitializeMethod(body)) {
        return jsonRpcError({
          status: 400,
          code: RPC.INVALID_PARAMS,
          message: 'Invalid params: initialize needs params.protocolVersion, params.capabilities and params.clientInfo {name, version}',
          id: requestIdOf(body),
        });
      }
      if (Array.isArray(body) && body.some((m) => isInitializeMethod(m))) {
        return jsonRpcError({ status: 400, code: RPC.INVALID_REQUEST, message: 'Invalid Request: initialize must not be part of a JSON-RPC batch' });
      }
      return isJsonRpcShaped(body) ? missingSessionId() : notJsonRpc();
    }
    if (store.size >= options.maxSessions) {
      ctx.log.error_code = 'capacity';
      logger.warn('session cap reached', { sessions: store.size, max_sessions: options.maxSessions });
      return jsonRpcError({
        status: 503,
        code: RPC.SERVER_ERROR,
        message: `Server at capacity: ${store.size} sessions are open (MCP_MAX_SESSIONS=${options.maxSessions}). Retry in ${CAPACITY_RETRY_AFTER_S} s, or end unused sessions with DELETE.`,
        headers: { 'retry-after': String(CAPACITY_RETRY_AFTER_S) },
        id: requestIdOf(body),
      });
    }
    const session = open(ctx);
    ctx.log.session = session.tag;
    await session.server.connect(session.transport);
    const res = await session.transport.handleRequest(req, { parsedBody: body });
    const negotiated = session.protocolVersion();
    if (negotiated !== undefined) ctx.log.protocol_version = negotiated;
    return res;
  };

  const handle: FetchHandler = async (req, ctx) => {
    ctx.log.era = 'legacy';
    sweep();
    const sessionId = req.headers.get('mcp-session-id');
    if (req.method === 'DELETE') return deleteSession(req, sessionId, ctx);
    const post = await readJsonPost(req, options.maxBodyBytes, ctx);
    if (!post.ok) return post.response;
    noteMessage(post.body, ctx);
    return sessionId === null ? initialize(req, post.body, ctx) : forward(req, sessionId, post.body, ctx);
  };

  return {
    handle,
    async closeAll(reason) {
      await Promise.all([...store.values()].map((session) => close(session, reason)));
    },
    counts() {
      let sandboxes = 0;
      for (const session of store.values()) if (session.sandbox.current() !== undefined) sandboxes += 1;
      return { sessions: store.size, sandboxes };
    },
  };
}

function missingSessionId(): Response {
  return jsonRpcError({
    status: 400,
    code: RPC.SERVER_ERROR,
    message: 'Bad Request: the Mcp-Session-Id header is required; send initialize first to start a session',
  });
}

function notJsonRpc(): Response {
  return jsonRpcError({ status: 400, code: RPC.INVALID_REQUEST, message: 'Invalid Request: the body is not a JSON-RPC 2.0 message (or a batch of them)' });
}

function sessionNotFound(ctx: RequestContext): Response {
  ctx.log.error_code = 'session_not_found';
  return jsonRpcError({
    status: 404,
    code: RPC.SESSION_NOT_FOUND,
    message: 'Session not found: it expired, was deleted, or was never issued to this credential. Send initialize to start a new session.',
  });
}

function isInitializeMethod(body: unknown): body is { method: 'initialize'; params?: unknown } {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && 'method' in body && body.method === 'initialize';
}

/**
 * A client that names no protocol version is treated like one that names an unknown version: it is
 * answered with the preferred version (what `/health` reports as preferred).
 */
function withDefaultVersion(body: { method: 'initialize'; params?: unknown }): unknown {
  const params = body.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params) || 'protocolVersion' in params) return body;
  return { ...body, params: { ...params, protocolVersion: HTTP_PROTOCOL_VERSIONS[0] } };
}

function requestIdOf(body: unknown): string | number | null {
  const id = typeof body === 'object' && body !== null && 'id' in body ? body.id : null;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function isJsonRpcShaped(body: unknown): boolean {
  const isMessage = (m: unknown): boolean => typeof m === 'object' && m !== null && !Array.isArray(m) && (m as { jsonrpc?: unknown }).jsonrpc === '2.0';
  return Array.isArray(body) ? body.length > 0 && body.every(isMessage) : isMessage(body);
}

/** Puts the MCP method and tool name of a single message into the request log line. */
function noteMessage(body: unknown, ctx: RequestContext): void {
  if (typeof body !== 'object' || body === null) return;
  if (Array.isArray(body)) {
    ctx.log.mcp_method = 'batch';
    return;
  }
  const { method, params } = body as { method?: unknown; params?: { name?: unknown } };
  if (typeof method === 'string') ctx.log.mcp_method = method.slice(0, 64);
  if (method === 'tools/call' && typeof params?.name === 'string') ctx.log.tool = params.name.slice(0, 64);
}
