/**
 * The 2026-07-28 lane: every request is self-describing and served statelessly by a strict
 * `createMcpHandler` (the SDK does the revision's header checks, error codes and `server/discover`).
 * There are no sessions: a tool call names its sandbox with a signed handle, bound to the credential;
 * a call without one gets a new sandbox. Sandboxes this instance touched are cached by handle, idle
 * ones are swept (and destroyed) after the idle TTL, and at the caps an idle one is released as
 * sessions/fair-share.ts decides (a busy one never is). A sandbox made for a call without a handle lives on a
 * short first lease until its handle comes back: clients that never pass it leave cheap leftovers.
 */
import { createMcpHandler, type ServerContext, type Tool } from '@modelcontextprotocol/server';

import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import type { RequestContext } from '../http/context';
import { AppError, isAppError } from '../errors';
import { toErrorResponse } from '../http/refusals';
import type { Logger } from '../log';
import { createLazySandbox, type LazySandbox } from '../sandbox/lazy-sandbox';
import type { SandboxProvider } from '../sandbox/types';
import { type Holder, makeRoom, type RoomDecision, type SandboxHolder } from '../sessions/fair-share';
import { createIdleCache } from '../sessions/idle-cache';
import type { SignedIdCodec } from '../sessions/session-id';
import type { ToolCatalog } from '../tools';
import type { PostLane } from './mcp-endpoint';
import { SSE_KEEP_ALIVE_MS } from './keep-alive';
import { readPlainMessage } from './plain-message';
import { takeSandboxArgument, withSandboxArgument, withSandboxHandle } from './sandbox-argument';
import { createProtocolServer } from './server-factory';
import { MODERN_SERVER_INSTRUCTIONS } from './server-identity';
import { toToolContext } from './tool-context';
import { HTTP_PROTOCOL_VERSIONS } from './versions';

export interface ModernLaneOptions {
  catalog: ToolCatalog;
  provider: SandboxProvider;
  /** Signs and checks sandbox handles (MCP_SESSION_SECRET). */
  ids: SignedIdCodec;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: an untouched sandbox is destroyed after this. */
  idleTtlMs: number;
  /** MCP_SANDBOX_FIRST_LEASE_S in milliseconds: a new sandbox whose handle never came back is destroyed after this. */
  firstLeaseMs: number;
  /** MCP_TOOL_TIMEOUT_MAX_S in milliseconds. */
  toolTimeoutMaxMs: number;
  /** Sandboxes this instance holds for the modern lane (MCP_MAX_SESSIONS). */
  maxSandboxes: number;
  /** MCP_MAX_SANDBOXES_PER_CREDENTIAL. */
  maxSandboxesPerCredential: number;
  /** The admit hook for a sandbox of `principal` (fair-share.ts `createSandboxAdmission`). @default none */
  admitSandbox?: (principal: string) => () => void;
  logger: Logger;
  /** @default Date.now */
  now?: () => number;
}

export interface ModernLane extends PostLane {
  /** Sandboxes held for modern clients. */
  count(): number;
  /** Destroys every held sandbox. */
  closeAll(): Promise<void>;
  /** Lets go of every held sandbox, keeping it for its handle to come back to. */
  releaseAll(): Promise<void>;
  /** The running sandboxes held here, for the credentials' shares. */
  sandboxHolders(): SandboxHolder[];
}

interface HeldSandbox extends Holder {
  readonly key: string;
  readonly sandbox: LazySandbox;
  lastUsedMs: number;
  /** Calls using it now. */
  calls: number;
  /** A call came back with its handle (or named it first): it lives on the idle TTL, not the first lease. */
  confirmed: boolean;
}

/** What a call with a bad handle reads, by why the handle failed. */
function badHandleMessage(reason: string): string {
  const why =
    reason === 'expired'
      ? 'it has expired'
      : reason === 'bad_signature'
        ? 'it belongs to another credential or server, or was changed'
        : 'it is not a handle this server gave out';
  return `The "sandbox" handle cannot be used: ${why}. Call the tool again without "sandbox" to get a new, empty sandbox, and from then on pass the handle that each result gives back.`;
}

/** Creates the modern lane; its tool list is built here, once. */
export function createModernLane(options: ModernLaneOptions): ModernLane {
  const { catalog, provider, ids, logger, now = Date.now } = options;
  const tools: readonly Tool[] = withSandboxArgument(catalog.list);
  const leaseOf = (entry: Pick<HeldSandbox, 'confirmed'>): number =>
    entry.confirmed ? options.idleTtlMs : Math.min(options.firstLeaseMs, options.idleTtlMs);
  // Each sandbox idles on its own lease, so a sweep reads the whole table (at most MCP_MAX_SESSIONS long).
  const held = createIdleCache<HeldSandbox>({ idleTtlMs: leaseOf });

  /** Destroys the sandbox of an entry no longer held here on its lease (unless another instance used it since). */
  const endOnLease = (entry: HeldSandbox): void => {
    void entry.sandbox.expire(leaseOf(entry), now()).catch(() => undefined);
  };
  const expire = (entry: HeldSandbox): void => {
    held.remove(entry.key);
    endOnLease(entry);
  };
  // A call longer than the lease: its sandbox stays until it ends.
  const sweep = (): void => {
    for (const entry of held.takeExpired(now(), (busy) => busy.calls > 0)) endOnLease(entry);
  };

  /** Whether one more held sandbox of `principal` fits, and which to let go for it (fair-share.ts). */
  const roomFor = (principal: string): RoomDecision<HeldSandbox> =>
    makeRoom({
      holders: held.values(),
      principal,
      perCredential: { max: options.maxSandboxesPerCredential, setting: 'MCP_MAX_SANDBOXES_PER_CREDENTIAL' },
      total: { max: options.maxSandboxes, setting: 'MCP_MAX_SESSIONS' },
      noun: 'sandboxes',
    });

  /**
   * The key a call's handle names, when it is valid; `undefined` for a call without one. A bad handle is an
   * AppError, so that the model reads the fix in a tool result rather than a protocol error its host may hide.
   */
  const keyOf = (handle: unknown, principal: string): string | undefined => {
    if (handle === undefined) return undefined;
    const check =
      typeof handle === 'string'
        ? ids.verify('sandbox', handle, principal, now())
        : ({ ok: false, reason: 'malformed' } as const);
    if (!check.ok) throw new AppError('invalid_input', badHandleMessage(check.reason));
    return check.key;
  };

  /** The sandbox a call names (or a new one), and the handle to give back; throws an AppError when there is no room. */
  const resolve = (handle: unknown, principal: string): { entry: HeldSandbox; handle: string } => {
    let key = keyOf(handle, principal);
    const resume = key !== undefined;
    let entry = key === undefined ? undefined : held.peek(key);
    if (entry === undefined) {
      const decision = roomFor(principal);
      if (!decision.ok) throw new AppError('capacity', decision.refusal.message);
      if (decision.evict !== undefined) {
        // A sandbox whose handle never came back is not kept for it: it ends on its first lease.
        if (decision.evict.confirmed) {
          held.remove(decision.evict.key);
          void decision.evict.sandbox.release().catch(() => undefined);
        } else {
          expire(decision.evict);
        }
      }
      if (key === undefined) ({ key, id: handle } = ids.mint('sandbox', principal, now()));
      // A sandbox for a call without a handle lives on the first lease, at the backend too, until its handle comes back.
      const owner = resume
        ? { sessionKey: key, principal }
        : { sessionKey: key, principal, firstLeaseMs: leaseOf({ confirmed: false }) };
      const sandbox = createLazySandbox(provider, owner, { resume, admit: options.admitSandbox?.(principal) });
      const created: HeldSandbox = {
        key,
        principal,
        sandbox,
        lastUsedMs: now(),
        calls: 0,
        confirmed: resume,
        busy: () => created.calls > 0 || sandbox.current()?.hasRunningBackground() === true,
      };
      held.add(key, created);
      entry = created;
    }
    if (resume && !entry.confirmed) {
      entry.confirmed = true;
      entry.sandbox.confirm();
    }
    held.touch(entry.key, now());
    return { entry, handle: String(handle) };
  };

  /**
   * A call that would need a new held sandbox when there is no room is refused before the SDK sees it, with
   * the status and Retry-After of fair-share.ts; `undefined` lets it through (resolve decides again).
   */
  const refusalFor = (body: unknown, principal: string): Response | undefined => {
    const message = readPlainMessage(body);
    if (message?.method !== 'tools/call') return undefined;
    const { handle } = takeSandboxArgument((message.params as { arguments?: unknown } | undefined)?.arguments);
    let key: string | undefined;
    try {
      key = keyOf(handle, principal);
    } catch {
      return undefined; // the call answers the bad handle, as a tool result
    }
    if (key !== undefined && held.peek(key) !== undefined) return undefined;
    const decision = roomFor(principal);
    if (decision.ok) return undefined;
    return toErrorResponse({ kind: 'no_room', ...decision.refusal }, message.id ?? null);
  };

  const call = async (name: string, args: unknown, ctx: ServerContext, principal: string) => {
    const { handle, rest } = takeSandboxArgument(args);
    let resolved: { entry: HeldSandbox; handle: string };
    try {
      resolved = resolve(handle, principal);
    } catch (err: unknown) {
      if (!isAppError(err)) throw err;
      return { content: [{ type: 'text' as const, text: err.message }], isError: true };
    }
    const entry = resolved.entry;
    entry.calls += 1;
    const result = await catalog
      .call(
        name,
        rest,
        toToolContext(ctx, {
          sandbox: entry.sandbox,
          backend: () => provider.status(),
          expiresAt: () => new Date(entry.lastUsedMs + options.idleTtlMs),
          toolTimeoutMaxMs: options.toolTimeoutMaxMs,
        }),
      )
      .finally(() => {
        entry.calls -= 1;
      });
    return withSandboxHandle(result, resolved.handle, handle === undefined);
  };

  const handler = createMcpHandler(
    (requestCtx) => {
      const principal = requestCtx.authInfo?.clientId ?? ANONYMOUS_PRINCIPAL;
      return createProtocolServer({
        tools,
        versions: HTTP_PROTOCOL_VERSIONS,
        instructions: MODERN_SERVER_INSTRUCTIONS,
        call: (name, args, ctx) => call(name, args, ctx, principal),
      });
    },
    // Always a stream, as in the 2025 lane: in 'auto' mode a call that prints nothing sends no byte until its
    // result (no keep-alive either), and a proxy may cut it.
    {
      legacy: 'reject',
      responseMode: 'sse',
      keepAliveMs: SSE_KEEP_ALIVE_MS,
      onerror: (err) => logger.debug('modern lane protocol error', { error: err.message }),
    },
  );

  return {
    async handlePost(req: Request, body: unknown, ctx: RequestContext): Promise<Response> {
      ctx.log.era = 'modern';
      ctx.log.protocol_version = req.headers.get('mcp-protocol-version')?.slice(0, 16) ?? undefined;
      sweep();
      const refusal = refusalFor(body, ctx.principal ?? ANONYMOUS_PRINCIPAL);
      if (refusal !== undefined) {
        ctx.log.error_code = refusal.status === 429 ? 'credential_share' : 'capacity';
        return refusal;
      }
      // The SDK cancels a modern call through the request's signal when the client goes away.
      const request = ctx.signal === undefined ? req : new Request(req, { signal: ctx.signal });
      return handler.fetch(request, {
        parsedBody: body,
        authInfo: { token: '', clientId: ctx.principal ?? ANONYMOUS_PRINCIPAL, scopes: [] },
      });
    },
    count: () => held.size,
    async closeAll() {
      const entries = held.takeAll();
      await Promise.all(entries.map((entry) => entry.sandbox.kill().catch(() => undefined)));
    },
    sandboxHolders() {
      const holders: SandboxHolder[] = [];
      for (const entry of held.values()) {
        if (!entry.sandbox.active()) continue;
        // Let go for another's share: kept for its handle, unless that handle never came back (then destroyed).
        const release = (): Promise<void> =>
          entry.confirmed ? entry.sandbox.release() : Promise.resolve(expire(entry));
        holders.push({ principal: entry.principal, lastUsedMs: entry.lastUsedMs, busy: entry.busy, release });
      }
      return holders;
    },
    async releaseAll() {
      // Those past their lease end now; the rest are kept for their handles to come back to.
      sweep();
      const entries = held.takeAll();
      await Promise.all(entries.map((entry) => entry.sandbox.release().catch(() => undefined)));
    },
  };
}
