/**
 * The 2025-era lane: one SDK server and sessionful transport per session, held in the session store
 * (a cache). This lane owns the `Mcp-Session-Id` lifecycle around the transport: it mints signed ids,
 * finds sessions (only for the credential that made them), rebuilds a session it does not hold from its
 * verified id, makes room at the caps as sessions/fair-share.ts decides, sweeps idle ones, and rejects
 * batches outside 2025-03-26. The SDK transport does the rest of Streamable HTTP.
 */
import { isInitializeRequest } from '@modelcontextprotocol/server';

import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import type { RequestContext } from '../http/context';
import { toErrorResponse } from '../http/refusals';
import { describeError } from '../errors';
import type { Logger } from '../log';
import { createLazySandbox } from '../sandbox/lazy-sandbox';
import type { SandboxProvider } from '../sandbox/types';
import { type Holder, makeRoom, type Refusal, type SandboxHolder } from '../sessions/fair-share';
import { RecentSet } from '../sessions/recent-set';
import type { InitializeRate } from '../sessions/initialize-rate';
import { type SignedIdCodec, toIssuedAtMs, toSessionTag } from '../sessions/session-id';
import type { SessionStore } from '../sessions/store';
import type { ToolCatalog } from '../tools';
import { type LegacySession, openLegacySession, primeSession } from './legacy-session';
import { hasMethod, isJsonRpcEnvelope, jsonRpcIdOf } from './plain-message';
import { BATCH_PROTOCOL_VERSION, HTTP_PROTOCOL_VERSIONS } from './versions';

export interface LegacyLaneOptions {
  store: SessionStore<LegacySession>;
  /** Signs and checks session ids (MCP_SESSION_SECRET). */
  ids: SignedIdCodec;
  catalog: ToolCatalog;
  provider: SandboxProvider;
  /** MCP_MAX_SESSIONS. */
  maxSessions: number;
  /** MCP_MAX_SESSIONS_PER_CREDENTIAL. */
  maxSessionsPerCredential: number;
  /** The admit hook for a sandbox of `principal` (fair-share.ts `createSandboxAdmission`). @default none */
  admitSandbox?: (principal: string) => () => void;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds. */
  idleTtlMs: number;
  /** MCP_SESSION_MAX_AGE_S in milliseconds: how long an ended id's tombstone must hold. */
  maxAgeMs: number;
  /** Each credential's rate of new sessions (MCP_INITIALIZE_BURST, MCP_INITIALIZE_PER_MIN). @default no limit */
  initializeRate?: InitializeRate;
  /** MCP_TOOL_TIMEOUT_MAX_S in milliseconds. */
  toolTimeoutMaxMs: number;
  logger: Logger;
  /**
   * True, once, for an id whose `initialize` this process answered before its core was loaded
   * (protocol/early-listener.ts): such a session is opened as a new one, not as one recovered. @default none
   */
  mintedEarly?: (id: string) => boolean;
  /** @default Date.now */
  now?: () => number;
}

/** The lane's handlers plus what the process needs at shutdown and for `/health`. */
export interface LegacyLane {
  /** A POST whose body was read and parsed by the endpoint. */
  handlePost(req: Request, body: unknown, ctx: RequestContext): Promise<Response>;
  /** DELETE: ends the session (from any instance). */
  handleDelete(req: Request, ctx: RequestContext): Promise<Response>;
  /**
   * Ends every session at shutdown: first the sandboxes stop (kept for the sessions to come back to, on any
   * instance, when `keepSandboxes`; else destroyed), so calls still running end with a result; after
   * `flushMs` for those answers to be written, the transports close.
   */
  shutdown(options: { keepSandboxes: boolean; flushMs: number }): Promise<void>;
  /** Sessions held, and how many of them have a running sandbox. */
  counts(): { sessions: number; sandboxes: number };
  /** The running sandboxes of this lane's sessions, for the credentials' shares. */
  sandboxHolders(): SandboxHolder[];
}

/** Ended (deleted or expired) session ids this instance remembers, to answer them 404. */
const ENDED_IDS_REMEMBERED = 10_000;
/**
 * The version a rebuilt session assumes when the request names none: Streamable HTTP says to assume 2025-03-26 when
 * there is no `MCP-Protocol-Version` header and no other way to know (docs/platform-facts.md).
 */
const DEFAULT_RECOVERY_VERSION = '2025-03-26';
/** Ids carry their issue time in whole seconds: a tombstone holds a second past the id's max age. */
const ISSUE_TIME_RESOLUTION_MS = 1000;

/** Creates the 2025-era lane. */
export function createLegacyLane(options: LegacyLaneOptions): LegacyLane {
  const { store, logger, now = Date.now } = options;

  const ended = new RecentSet(ENDED_IDS_REMEMBERED);

  /**
   * Ends the id on every instance (the backend keeps a tombstone) for as long as it could be valid: until its max
   * age from its issue time, which every instance compares with its own clock, as it does for the id itself. Only for
   * a session that may have a sandbox: one that never had any leaves nothing to revive (this instance refuses it from
   * `ended`; elsewhere its id would open an empty session for its own credential), so an initialize + DELETE loop
   * writes nothing. A session resumed from its id may have a sandbox made elsewhere: it counts as having one.
   */
  const recordEnded = async (session: LegacySession): Promise<void> => {
    const issuedAtMs = toIssuedAtMs(session.id) ?? now();
    await options.provider
      .recordEnded(session.sandbox.owner, issuedAtMs + options.maxAgeMs + ISSUE_TIME_RESOLUTION_MS)
      .catch((err: unknown) => {
        logger.error('session tombstone not recorded: another instance could revive the id', {
          session: session.tag,
          error: describeError(err),
        });
      });
  };

  const close = async (session: LegacySession, reason: string): Promise<void> => {
    store.remove(session.id);
    ended.add(session.tag);
    try {
      if (session.sandbox.mayExist()) await recordEnded(session);
      await session.close();
      logger.info('session closed', { session: session.tag, reason });
    } catch (err: unknown) {
      logger.error('session close failed', { session: session.tag, reason, error: describeError(err) });
    }
  };

  const expire = async (session: LegacySession): Promise<void> => {
    try {
      // Without affinity another instance may serve this session now: then only let go here.
      const hadSandbox = session.sandbox.mayExist();
      const destroyed = await session.expire(options.idleTtlMs, now());
      if (destroyed) {
        ended.add(session.tag);
        if (hadSandbox) await recordEnded(session);
      }
      logger.info(destroyed ? 'session closed' : 'session released', {
        session: session.tag,
        reason: destroyed ? 'idle_expired' : 'idle_here_used_elsewhere',
      });
    } catch (err: unknown) {
      logger.error('session expiry failed', { session: session.tag, error: describeError(err) });
    }
  };

  /** Expiries still deciding whether the sandbox goes: a request for that session waits for the verdict. */
  const expiring = new Map<string, Promise<void>>();

  const sweep = (): void => {
    const nowMs = now();
    // A session whose call runs on past the TTL stays until the call ends (its sandbox is in use).
    const idle = store.takeExpired(nowMs, (session) => session.inCall());
    for (const session of idle) {
      const done = expire(session).finally(() => expiring.delete(session.tag));
      expiring.set(session.tag, done);
    }
  };

  /** The sessions held here, for fair sharing. */
  const sessionHolders = function* (): Generator<Holder & { readonly session: LegacySession }> {
    for (const session of store.values())
      yield { principal: session.principal, lastUsedMs: session.lastUsedMs, busy: session.busy, session };
  };

  /**
   * Makes room for one more session of `principal` (expired ones are already gone): its own least recently used
   * idle one at its own cap, else the least recently used idle one of whoever holds the most (fair-share.ts).
   */
  const makeRoomFor = (principal: string, ctx: RequestContext): Refusal | undefined => {
    const decision = makeRoom({
      holders: sessionHolders(),
      principal,
      perCredential: { max: options.maxSessionsPerCredential, setting: 'MCP_MAX_SESSIONS_PER_CREDENTIAL' },
      total: { max: options.maxSessions, setting: 'MCP_MAX_SESSIONS' },
      noun: 'sessions',
    });
    if (!decision.ok) return decision.refusal;
    const { evict } = decision;
    if (evict !== undefined) {
      store.remove(evict.session.id);
      // Safe: it comes back on its next request, with its sandbox (recovered from its signed id).
      void evict.session.release().catch(() => undefined);
      logger.info('session evicted', { session: evict.session.tag, reason: 'cap', request_id: ctx.requestId });
    }
    return undefined;
  };

  /**
   * `resume`: the session may have a sandbox already (its id came from a client, not from this call): look for it
   * first. `quiet`: a session opened for the first time, so a sandbox not found is no news to the client.
   */
  const open = (principal: string, id: string, key: string, resume: boolean, quiet = false): LegacySession => {
    return openLegacySession({
      id,
      tag: toSessionTag(id),
      principal,
      nowMs: now(),
      catalog: options.catalog,
      sandbox: createLazySandbox(
        options.provider,
        { sessionKey: key, principal },
        { resume, quiet, admit: options.admitSandbox?.(principal) },
      ),
      backendStatus: () => options.provider.status(),
      idleTtlMs: options.idleTtlMs,
      toolTimeoutMaxMs: options.toolTimeoutMaxMs,
      onInitialized: (s) => store.add(s),
      onDeleted: (s) => close(s, 'deleted'),
      onCallEnded: (s) => store.touch(s.id, now()),
    });
  };

  /**
   * Opens a session this instance does not hold from an id that verifies for this credential: one whose
   * `initialize` was answered before the core was loaded (new), or one rebuilt after it moved here or was let go.
   */
  const recover = async (
    id: string,
    req: Request,
    ctx: RequestContext,
  ): Promise<LegacySession | Refusal | undefined> => {
    const principal = ctx.principal ?? ANONYMOUS_PRINCIPAL;
    const tag = toSessionTag(id);
    await expiring.get(tag);
    if (ended.has(tag)) return undefined;
    const check = options.ids.verify('session', id, principal, now());
    if (!check.ok) {
      ctx.log.error_code = `session_${check.reason}`;
      return undefined;
    }
    if (await options.provider.hasEnded({ sessionKey: check.key, principal }, now())) {
      ended.add(tag);
      ctx.log.error_code = 'session_ended';
      return undefined;
    }
    const refusal = makeRoomFor(principal, ctx);
    if (refusal !== undefined) return refusal;
    const header = req.headers.get('mcp-protocol-version');
    const version = header !== null && HTTP_PROTOCOL_VERSIONS.includes(header) ? header : DEFAULT_RECOVERY_VERSION;
    // An id minted early is new, but still looked up (resume): its client may have used it on another instance since.
    const isNew = options.mintedEarly?.(id) === true;
    const session = open(principal, id, check.key, true, isNew);
    await primeSession(session, version);
    store.add(session);
    logger.info(isNew ? 'session opened' : 'session recovered', {
      session: session.tag,
      protocol_version: version,
      request_id: ctx.requestId,
    });
    return session;
  };

  /** Recoveries under way, so that concurrent first requests of a moved session rebuild it once. */
  const recovering = new Map<string, Promise<LegacySession | Refusal | undefined>>();

  const find = async (id: string, req: Request, ctx: RequestContext): Promise<LegacySession | Response> => {
    const held = store.get(id, now());
    if (held !== undefined) {
      // A session is bound to the credential that created it: for any other it does not exist.
      return held.principal === ctx.principal ? held : sessionNotFound(ctx);
    }
    const key = `${ctx.principal ?? ANONYMOUS_PRINCIPAL}\n${id}`;
    let pending = recovering.get(key);
    if (pending === undefined) {
      pending = recover(id, req, ctx).finally(() => recovering.delete(key));
      recovering.set(key, pending);
    }
    const recovered = await pending;
    if (recovered === undefined) return sessionNotFound(ctx);
    return 'status' in recovered ? refused(recovered, ctx, null) : recovered;
  };

  const refused = (refusal: Refusal, ctx: RequestContext, id: string | number | null): Response => {
    ctx.log.error_code = refusal.status === 429 ? 'credential_share' : 'capacity';
    logger.warn(refusal.status === 429 ? 'credential session share reached' : 'session cap reached', {
      sessions: store.size,
      limit: refusal.setting,
    });
    return toErrorResponse({ kind: 'no_room', ...refusal }, id);
  };

  const deleteSession = async (req: Request, sessionId: string | null, ctx: RequestContext): Promise<Response> => {
    if (sessionId === null) return toErrorResponse({ kind: 'session_id_required' });
    const session = await find(sessionId, req, ctx);
    if (session instanceof Response) return session;
    ctx.log.session = session.tag;
    return session.transport.handleRequest(req);
  };

  const forward = async (req: Request, sessionId: string, body: unknown, ctx: RequestContext): Promise<Response> => {
    const session = await find(sessionId, req, ctx);
    if (session instanceof Response) return session;
    if (!isJsonRpcEnvelope(body)) return toErrorResponse({ kind: 'not_json_rpc' });
    if (hasMethod(body, 'initialize') || (Array.isArray(body) && body.some((m) => hasMethod(m, 'initialize')))) {
      return toErrorResponse({ kind: 'already_initialized' }, jsonRpcIdOf(body));
    }
    ctx.log.session = session.tag;
    const version = session.protocolVersion();
    if (version !== undefined) ctx.log.protocol_version = version;
    if (Array.isArray(body) && version !== BATCH_PROTOCOL_VERSION) {
      return toErrorResponse({ kind: 'batch_not_allowed', allowed: BATCH_PROTOCOL_VERSION, version });
    }
    return session.transport.handleRequest(withCanonicalAccept(req), { parsedBody: body });
  };

  const initialize = async (req: Request, message: unknown, ctx: RequestContext): Promise<Response> => {
    const body = hasMethod(message, 'initialize') ? withDefaultVersion(message) : message;
    if (!isInitializeRequest(body)) {
      if (hasMethod(body, 'initialize')) return toErrorResponse({ kind: 'initialize_params' }, jsonRpcIdOf(body));
      if (Array.isArray(body) && body.some((m) => hasMethod(m, 'initialize')))
        return toErrorResponse({ kind: 'initialize_in_batch' });
      return toErrorResponse({ kind: isJsonRpcEnvelope(body) ? 'session_id_required' : 'not_json_rpc' });
    }
    const principal = ctx.principal ?? ANONYMOUS_PRINCIPAL;
    // Counted before room is made: an initialize refused for room still cost a credential's turn.
    const rate = options.initializeRate;
    const waitS = rate?.take(principal, now()) ?? 0;
    if (rate !== undefined && waitS > 0) {
      ctx.log.error_code = 'initialize_rate';
      return toErrorResponse(
        { kind: 'initialize_rate', burst: rate.burst, perMinute: rate.perMinute, retryAfterS: waitS },
        jsonRpcIdOf(body),
      );
    }
    const refusal = makeRoomFor(principal, ctx);
    if (refusal !== undefined) return refused(refusal, ctx, jsonRpcIdOf(body));
    const minted = options.ids.mint('session', principal, now());
    const session = open(principal, minted.id, minted.key, false);
    ctx.log.session = session.tag;
    await session.server.connect(session.transport);
    const res = await session.transport.handleRequest(withCanonicalAccept(req), { parsedBody: body });
    const negotiated = session.protocolVersion();
    if (negotiated !== undefined) ctx.log.protocol_version = negotiated;
    return res;
  };

  return {
    async handlePost(req, body, ctx) {
      ctx.log.era = 'legacy';
      sweep();
      const sessionId = req.headers.get('mcp-session-id');
      return sessionId === null ? initialize(req, body, ctx) : forward(req, sessionId, body, ctx);
    },
    async handleDelete(req, ctx) {
      ctx.log.era = 'legacy';
      sweep();
      return deleteSession(req, req.headers.get('mcp-session-id'), ctx);
    },
    async shutdown({ keepSandboxes, flushMs }) {
      const sessions = [...store.values()];
      for (const session of sessions) store.remove(session.id);
      await Promise.all(
        sessions.map((s) => (keepSandboxes ? s.sandbox.release() : s.sandbox.kill()).catch(() => undefined)),
      );
      await new Promise((resolve) => setTimeout(resolve, flushMs));
      await Promise.all(sessions.map((s) => s.transport.close().catch(() => undefined)));
      logger.info('sessions ended for shutdown', { sessions: sessions.length, sandboxes_kept: keepSandboxes });
    },
    sandboxHolders() {
      const holders: SandboxHolder[] = [];
      for (const session of store.values()) {
        if (!session.sandbox.active()) continue;
        holders.push({
          principal: session.principal,
          lastUsedMs: session.lastUsedMs,
          busy: session.busy,
          release: () => session.sandbox.release(),
        });
      }
      return holders;
    },
    counts() {
      let sandboxes = 0;
      for (const session of store.values()) if (session.sandbox.current() !== undefined) sandboxes += 1;
      return { sessions: store.size, sandboxes };
    },
  };
}

function sessionNotFound(ctx: RequestContext): Response {
  ctx.log.error_code = 'session_not_found';
  return toErrorResponse({ kind: 'session_not_found' });
}

/**
 * Media types are case-insensitive (RFC 9110 §8.3.1), but the SDK transport looks for them in lower case:
 * hand it a lower-cased Accept (the gate already checked it case-insensitively).
 */
function withCanonicalAccept(req: Request): Request {
  const accept = req.headers.get('accept');
  if (accept === null || accept === accept.toLowerCase()) return req;
  const headers = new Headers(req.headers);
  headers.set('accept', accept.toLowerCase());
  return new Request(req.url, { method: req.method, headers });
}

/**
 * A client that names no protocol version is treated like one that names an unknown version: it is
 * answered with the preferred version (what `/health` reports as preferred).
 */
function withDefaultVersion(body: { method: 'initialize'; params?: unknown }): unknown {
  const params = body.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params) || 'protocolVersion' in params)
    return body;
  return { ...body, params: { ...params, protocolVersion: HTTP_PROTOCOL_VERSIONS[0] } };
}
