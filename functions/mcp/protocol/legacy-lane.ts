/**
 * The 2025-era lane: sessions as ids this server mints and verifies, every request served by the SDK through a
 * fresh server (the SDK's stateless serving, protocol/mcp-server.ts). A session is an entry of the sandbox table
 * (sessions/sandbox-table.ts), opened by `initialize` and named by its signed `Mcp-Session-Id`; any instance
 * with the same secret serves it, so a session this instance does not hold is opened from its verified id.
 * This lane checks what the SDK's stateless serving does not: the id, `initialize` only without one, batches
 * only in 2025-03-26, the credential's rate of new sessions and room at the caps; and it routes a client's
 * `notifications/cancelled` to the call it names, which runs on under another request.
 */
import { isInitializeRequest } from '@modelcontextprotocol/server';

import { AppError, describeError, isAppError } from '../errors';
import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import type { IncomingRequest, RequestContext } from '../http/context';
import { toErrorResponse } from '../http/refusals';
import { type FileUrlFactory, originOf } from '../files/file-urls';
import { createSessionLookup, type SessionLookupOptions } from '../sessions/entry-lookup';
import { placeOf } from '../sessions/sandbox-access';
import { type CallScope, createCallDirectory, type DirectoryDeps } from '../sessions/sandbox-directory';
import type { Refusal } from '../sessions/fair-share';
import type { InitializeRate } from '../sessions/initialize-rate';
import type { SandboxTable, TableEntry } from '../sessions/sandbox-table';
import { toSessionTag } from '../sessions/session-id';
import type { ToolCatalog } from '../tools/registry';
import { type CallContextOptions, toToolContext } from '../tools/tool';
import { createSessionResources, sessionFileTemplate } from '../resources/file-resources';
import { SESSION_SANDBOX } from '../resources/sandbox-uris';
import type { BoundCall, BoundResources, PostLane, RequestBinding, ServeMcp } from './mcp-server';
import { hasMethod, isJsonRpcEnvelope, isObject, jsonRpcIdOf } from './plain-message';
import { BATCH_PROTOCOL_VERSION, HTTP_PROTOCOL_VERSIONS, negotiateVersion } from './versions';

export interface LegacyLaneOptions extends SessionLookupOptions {
  serve: ServeMcp;
  /** Each credential's rate of new sessions (MCP_INITIALIZE_BURST, MCP_INITIALIZE_PER_MIN). @default no limit */
  initializeRate?: InitializeRate;
}

export interface LegacyLane extends PostLane {
  /** DELETE: ends the session, on every instance. */
  handleDelete(req: IncomingRequest, ctx: RequestContext): Promise<Response>;
}

/**
 * The version of a request inside a session: its header, or 2025-03-26 when there is none, as Streamable HTTP
 * says to assume when nothing else tells (2025-03-26 clients send no header).
 */
const DEFAULT_SESSION_VERSION = '2025-03-26';

export interface LegacyCallOptions {
  table: SandboxTable;
  catalog: ToolCatalog;
  /** The rest of a tool call's context. */
  context: Omit<CallContextOptions, 'sandbox' | 'sandboxes' | 'expiresAt' | 'signal' | 'principal'>;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: when an untouched sandbox falls asleep. */
  idleTtlMs: number;
  /** What each call's directory of the owner's sandboxes is made of. */
  directory: DirectoryDeps;
  /** Makes each call's file URLs. @default none offered */
  fileUrls?: FileUrlFactory;
}

/**
 * Answers a tool call of a 2025 session, in its sandbox: its own, or the named one it opened. The call stops on the
 * client's `notifications/cancelled` or when the session ends, never because its stream dropped: in the 2025 era a
 * dropped connection is not a cancel.
 */
export function createLegacyCall(options: LegacyCallOptions): BoundCall {
  const { table, catalog, context, idleTtlMs, directory, fileUrls } = options;
  const { now, maxAgeMs, logger } = directory;
  const { catalog: sandboxes } = directory.provider;
  return async (name, args, ctx, { session, origin }, task) => {
    if (session === undefined) throw new Error('a 2025-era tool call outside a session');
    let target: TableEntry;
    try {
      target = targetOf(table, session, now());
    } catch (err: unknown) {
      if (!isAppError(err)) throw err;
      return { content: [{ type: 'text', text: err.message }], isError: true };
    }
    const scope: CallScope = {
      principal: session.principal,
      current: () => target,
      async moveTo(entry) {
        const previous = target;
        target = entry;
        const chosen = { key: entry.key, name: entry.name ?? '' };
        session.attached = chosen;
        const untilMs = session.issuedAtMs + maxAgeMs;
        await sandboxes
          .bindSession(session.principal, session.key, { ...chosen, untilMs })
          .catch((err: unknown) =>
            logger.warn('session binding not recorded', { session: session.tag, error: describeError(err) }),
          );
        // Its own sandbox is left to sleep, unless something of it still runs.
        if (previous === session && session.sandbox.current()?.hasRunningBackground() !== true)
          void session.sandbox.release().catch(() => undefined);
      },
      left: async () => undefined,
    };
    // A task's call is not named by its request's id (`notifications/cancelled` does not reach tasks) and stops
    // on the task's cancel as well as on the session's end.
    return table.run(
      session,
      task === undefined ? ctx.mcpReq.id : undefined,
      (signal) =>
        catalog.call(
          name,
          args,
          toToolContext(ctx, {
            ...context,
            principal: session.principal,
            sandbox: target.sandbox,
            sandboxes: () => createCallDirectory(directory, scope),
            expiresAt: () => new Date(target.lastUsedMs + idleTtlMs),
            sandboxRef: SESSION_SANDBOX,
            ...(fileUrls !== undefined &&
              origin !== undefined && { fileUrls: () => fileUrls(placeOf(target), origin()) }),
            signal: task === undefined ? signal : AbortSignal.any([signal, task.signal]),
            ...(task !== undefined && { task }),
          }),
        ),
      target,
    );
  };
}

/**
 * Sandbox files as resources in a 2025 session: `sandbox://session/<path>` is a file of the sandbox its calls work
 * in (its own, or the named one it opened); a sandbox not made yet has no files.
 */
const WHOSE = "this session's sandbox";

export function createLegacyResources({
  table,
  now,
}: Pick<LegacyCallOptions['directory'], 'now'> & {
  table: SandboxTable;
}): BoundResources {
  const forBinding = ({ session }: RequestBinding) => {
    if (session === undefined) throw new Error('a 2025-era resources request outside a session');
    return createSessionResources(WHOSE, (ctx, use) => {
      const target = targetOf(table, session, now());
      return table.run(session, ctx.mcpReq.id, async () => use(await target.sandbox.existing()), target);
    });
  };
  return {
    templates: [sessionFileTemplate(WHOSE)],
    list: (ctx, binding) => forBinding(binding).list(ctx),
    read: (uri, ctx, binding) => forBinding(binding).read(uri, ctx),
  };
}

/**
 * The entry whose sandbox a session's calls work in: its own, or the named sandbox it opened (held here, or opened
 * again: a named sandbox that is gone stays gone). Throws an AppError when there is no room for it.
 */
function targetOf(table: SandboxTable, session: TableEntry, nowMs: number): TableEntry {
  if (session.attached === undefined) return session;
  const { key, name } = session.attached;
  const held = table.get('handle', key);
  if (held !== undefined) return held;
  const refusal = table.makeRoom('handle', session.principal);
  if (refusal !== undefined) throw new AppError('capacity', refusal.message);
  return table.hold({
    kind: 'handle',
    key,
    tag: toSessionTag(key),
    principal: session.principal,
    issuedAtMs: nowMs,
    resume: true,
    mustExist: true,
    ...(name !== '' && { name }),
  });
}

/** Creates the 2025-era lane. */
export function createLegacyLane(options: LegacyLaneOptions): LegacyLane {
  const { table, ids, logger, now } = options;
  const lookup = createSessionLookup(options);

  /** The session `id` names for this credential, or the answer that it has none. */
  const find = async (id: string, ctx: RequestContext, version: string): Promise<TableEntry | Response> => {
    const ask = { principal: ctx.principal ?? ANONYMOUS_PRINCIPAL, version, requestId: ctx.requestId };
    const found = await lookup(id, ask);
    if (typeof found === 'string') return sessionNotFound(ctx, found);
    return 'status' in found ? refused(found, ctx, null) : found;
  };

  const initialize = async (req: IncomingRequest, message: unknown, ctx: RequestContext): Promise<Response> => {
    const body = withDefaultVersion(message);
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
      const limit = { burst: rate.burst, perMinute: rate.perMinute, retryAfterS: waitS };
      return toErrorResponse({ kind: 'initialize_rate', ...limit }, jsonRpcIdOf(body));
    }
    const refusal = table.makeRoom('session', principal);
    if (refusal !== undefined) return refused(refusal, ctx, jsonRpcIdOf(body));
    const minted = ids.mint('session', principal, now());
    const tag = toSessionTag(minted.id);
    ctx.log.session = tag;
    const version = negotiateVersion(body.params.protocolVersion);
    ctx.log.protocol_version = version;
    const res = await options.serve(withCanonicalAccept(req), body, { principal });
    if (!res.ok) return res;
    table.hold({ kind: 'session', key: minted.key, tag, principal, issuedAtMs: now(), resume: false });
    logger.info('session opened', { session: tag, protocol_version: version, request_id: ctx.requestId });
    const headers = new Headers(res.headers);
    headers.set('mcp-session-id', minted.id);
    return new Response(res.body, { status: res.status, headers });
  };

  const forward = async (req: IncomingRequest, id: string, body: unknown, ctx: RequestContext): Promise<Response> => {
    const version = versionOf(req);
    const session = await find(id, ctx, version);
    if (session instanceof Response) return session;
    if (!isJsonRpcEnvelope(body)) return toErrorResponse({ kind: 'not_json_rpc' });
    if (hasMethod(body, 'initialize') || (Array.isArray(body) && body.some((m) => hasMethod(m, 'initialize')))) {
      return toErrorResponse({ kind: 'already_initialized' }, jsonRpcIdOf(body));
    }
    ctx.log.session = session.tag;
    ctx.log.protocol_version = version;
    if (Array.isArray(body) && version !== BATCH_PROTOCOL_VERSION) {
      return toErrorResponse({ kind: 'batch_not_allowed', allowed: BATCH_PROTOCOL_VERSION, version });
    }
    for (const message of Array.isArray(body) ? body : [body]) cancelNamed(session, message);
    const binding = { principal: session.principal, session, origin: () => originOf(req) };
    return options.serve(withCanonicalAccept(req), body, binding);
  };

  /** A `notifications/cancelled` stops the call it names, which runs under its own request. */
  const cancelNamed = (session: TableEntry, message: unknown): void => {
    if (!hasMethod(message, 'notifications/cancelled') || !isObject(message.params)) return;
    const { requestId } = message.params;
    if (typeof requestId === 'string' || typeof requestId === 'number') table.cancel(session, requestId);
  };

  const refused = (refusal: Refusal, ctx: RequestContext, id: string | number | null): Response => {
    ctx.log.error_code = refusal.code;
    const msg = refusal.status === 429 ? 'credential session share reached' : 'session cap reached';
    logger.warn(msg, { sessions: table.counts().sessions, limit: refusal.setting });
    return toErrorResponse({ kind: 'no_room', ...refusal }, id);
  };

  return {
    async handlePost(req, body, ctx) {
      ctx.log.era = 'legacy';
      table.sweep();
      const id = req.headers.get('mcp-session-id');
      return id === null ? initialize(req, body, ctx) : forward(req, id, body, ctx);
    },
    async handleDelete(req, ctx) {
      ctx.log.era = 'legacy';
      table.sweep();
      const id = req.headers.get('mcp-session-id');
      if (id === null) return toErrorResponse({ kind: 'session_id_required' });
      const session = await find(id, ctx, versionOf(req));
      if (session instanceof Response) return session;
      ctx.log.session = session.tag;
      await table.end(session, 'deleted');
      if (session.attached !== undefined)
        await options.catalog?.unbindSession(session.principal, session.key).catch(() => undefined);
      return new Response(null, { status: 200 });
    },
  };
}

function sessionNotFound(ctx: RequestContext, code: string): Response {
  ctx.log.error_code = code;
  return toErrorResponse({ kind: 'session_not_found' });
}

/**
 * A client that names no protocol version is treated like one that names an unknown version: it is answered
 * with the preferred version (what `/health` reports as preferred).
 */
function withDefaultVersion(body: unknown): unknown {
  if (!hasMethod(body, 'initialize') || !isObject(body.params) || 'protocolVersion' in body.params) return body;
  return { ...body, params: { ...body.params, protocolVersion: HTTP_PROTOCOL_VERSIONS[0] } };
}

function versionOf(req: IncomingRequest): string {
  const header = req.headers.get('mcp-protocol-version');
  return header !== null && HTTP_PROTOCOL_VERSIONS.includes(header) ? header : DEFAULT_SESSION_VERSION;
}

/**
 * Media types are case-insensitive (RFC 9110 §8.3.1), but the SDK transport looks for them in lower case:
 * hand it a lower-cased Accept (the gate already checked it case-insensitively).
 */
function withCanonicalAccept(req: IncomingRequest): IncomingRequest {
  const accept = req.headers.get('accept');
  if (accept === null || accept === accept.toLowerCase()) return req;
  const headers = new Headers(req.headers);
  headers.set('accept', accept.toLowerCase());
  return { method: req.method, url: req.url, headers };
}
