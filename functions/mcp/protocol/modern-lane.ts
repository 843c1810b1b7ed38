/**
 * The 2026-07-28 lane: every request is self-describing and served statelessly by a strict
 * `createMcpHandler` (the SDK does the revision's header checks, error codes and `server/discover`).
 * There are no sessions: a tool call names its sandbox with a signed handle, bound to the credential;
 * a call without one gets a new sandbox. Sandboxes this instance touched are cached by handle, idle
 * ones are swept (and destroyed) after the idle TTL, and at the cap the least recently used is released.
 */
import { createMcpHandler, ProtocolError, ProtocolErrorCode, type ServerContext, type Tool } from '@modelcontextprotocol/server';

import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import type { RequestContext } from '../http/context';
import type { Logger } from '../log';
import { createLazySandbox, type LazySandbox } from '../sandbox/lazy-sandbox';
import type { SandboxProvider } from '../sandbox/types';
import type { SignedIdCodec } from '../sessions/session-id';
import type { ToolCatalog } from '../tools';
import type { PostLane } from './mcp-endpoint';
import { SSE_KEEP_ALIVE_MS } from './keep-alive';
import { takeSandboxArgument, withSandboxArgument, withSandboxHandle } from './sandbox-argument';
import { createProtocolServer } from './server-factory';
import { toToolContext } from './tool-context';
import { HTTP_PROTOCOL_VERSIONS } from './versions';

export interface ModernLaneOptions {
  catalog: ToolCatalog;
  provider: SandboxProvider;
  /** Signs and checks sandbox handles (MCP_SESSION_SECRET). */
  ids: SignedIdCodec;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: an untouched sandbox is destroyed after this. */
  idleTtlMs: number;
  /** MCP_TOOL_TIMEOUT_MAX_S in milliseconds. */
  toolTimeoutMaxMs: number;
  /** Sandboxes this instance holds for the modern lane (MCP_MAX_SESSIONS). */
  maxSandboxes: number;
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
}

interface HeldSandbox {
  readonly key: string;
  readonly sandbox: LazySandbox;
  lastUsedMs: number;
}

/** Creates the modern lane; its tool list is built here, once. */
export function createModernLane(options: ModernLaneOptions): ModernLane {
  const { catalog, provider, ids, logger, now = Date.now } = options;
  const tools: readonly Tool[] = withSandboxArgument(catalog.list);
  // Insertion order is use order: re-inserted on each use, so the least recently used comes first.
  const held = new Map<string, HeldSandbox>();

  const sweep = (): void => {
    for (const entry of held.values()) {
      if (now() - entry.lastUsedMs <= options.idleTtlMs) break;
      held.delete(entry.key);
      void entry.sandbox.expire(options.idleTtlMs, now()).catch(() => undefined);
    }
  };

  /** The sandbox a call names (or a new one), and the handle to give back. */
  const resolve = (handle: unknown, principal: string): { entry: HeldSandbox; handle: string } => {
    let key: string;
    let resume = true;
    if (handle === undefined) {
      const minted = ids.mint('sandbox', principal, now());
      ({ key, id: handle } = minted);
      resume = false;
    } else {
      const check = typeof handle === 'string' ? ids.verify('sandbox', handle, principal, now()) : ({ ok: false } as const);
      if (!check.ok) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'The "sandbox" handle is not valid for this credential, or it expired; omit it to get a new sandbox.');
      }
      key = check.key;
    }
    let entry = held.get(key);
    if (entry === undefined) {
      if (held.size >= options.maxSandboxes) {
        const [oldest] = held.values();
        if (oldest !== undefined) {
          held.delete(oldest.key);
          void oldest.sandbox.release().catch(() => undefined);
        }
      }
      entry = { key, sandbox: createLazySandbox(provider, { sessionKey: key, principal }, { resume }), lastUsedMs: now() };
    }
    held.delete(key);
    entry.lastUsedMs = now();
    held.set(key, entry);
    return { entry, handle: String(handle) };
  };

  const call = async (name: string, args: unknown, ctx: ServerContext, principal: string) => {
    const { handle, rest } = takeSandboxArgument(args);
    const resolved = resolve(handle, principal);
    const entry = resolved.entry;
    const result = await catalog.call(
      name,
      rest,
      toToolContext(ctx, {
        sandbox: entry.sandbox,
        backend: () => provider.status(),
        expiresAt: () => new Date(entry.lastUsedMs + options.idleTtlMs),
        toolTimeoutMaxMs: options.toolTimeoutMaxMs,
      }),
    );
    return withSandboxHandle(result, resolved.handle);
  };

  const handler = createMcpHandler(
    (requestCtx) => {
      const principal = requestCtx.authInfo?.clientId ?? ANONYMOUS_PRINCIPAL;
      return createProtocolServer({ tools, versions: HTTP_PROTOCOL_VERSIONS, call: (name, args, ctx) => call(name, args, ctx, principal) });
    },
    // Always a stream, as in the 2025 lane: in 'auto' mode a call that prints nothing sends no byte until its
    // result (no keep-alive either), and a proxy may cut it.
    { legacy: 'reject', responseMode: 'sse', keepAliveMs: SSE_KEEP_ALIVE_MS, onerror: (err) => logger.debug('modern lane protocol error', { error: err.message }) },
  );

  return {
    async handlePost(req: Request, body: unknown, ctx: RequestContext): Promise<Response> {
      ctx.log.era = 'modern';
      ctx.log.protocol_version = req.headers.get('mcp-protocol-version')?.slice(0, 16) ?? undefined;
      sweep();
      // The SDK cancels a modern call through the request's signal when the client goes away.
      const request = ctx.signal === undefined ? req : new Request(req, { signal: ctx.signal });
      return handler.fetch(request, { parsedBody: body, authInfo: { token: '', clientId: ctx.principal ?? ANONYMOUS_PRINCIPAL, scopes: [] } });
    },
    count: () => held.size,
    async closeAll() {
      const entries = [...held.values()];
      held.clear();
      await Promise.all(entries.map((entry) => entry.sandbox.kill().catch(() => undefined)));
    },
    async releaseAll() {
      const entries = [...held.values()];
      held.clear();
      await Promise.all(entries.map((entry) => entry.sandbox.release().catch(() => undefined)));
    },
  };
}
