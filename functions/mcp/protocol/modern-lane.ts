/**
 * The 2026-07-28 lane: every request is self-describing and served statelessly by the SDK (protocol/mcp-server.ts
 * does the revision's header checks, error codes and `server/discover`). There are no sessions: a tool call names
 * its sandbox with a signed handle, bound to the credential, and a call without one gets a new sandbox. Handles
 * are entries of the sandbox table (sessions/sandbox-table.ts), which sweeps, shares and evicts them; a sandbox
 * made for a call without a handle lives on a short first lease until its handle comes back, so clients that
 * never pass it leave cheap leftovers.
 */
import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import type { RequestContext } from '../http/context';
import { toErrorResponse } from '../http/refusals';
import type { SandboxTable, TableEntry } from '../sessions/sandbox-table';
import { type SignedIdCheck, type SignedIdCodec, toSessionTag } from '../sessions/session-id';
import type { ToolCatalog } from '../tools/registry';
import type { PostLane } from './mcp-endpoint';
import type { BoundCall, RequestBinding, ServeMcp } from './mcp-server';
import { readPlainMessage } from './plain-message';
import { SANDBOX_HEADER, sandboxHeaderMismatch, takeSandboxArgument, withSandboxHandle } from './sandbox-argument';
import { type CallContextOptions, toToolContext } from '../tools/tool';

export interface ModernLaneOptions {
  table: SandboxTable;
  /** Signs and checks sandbox handles (MCP_SESSION_SECRET). */
  ids: SignedIdCodec;
  serve: ServeMcp;
  now: () => number;
}

export interface ModernCallOptions {
  table: SandboxTable;
  ids: SignedIdCodec;
  catalog: ToolCatalog;
  /** The rest of a tool call's context. */
  context: Omit<CallContextOptions, 'sandbox' | 'expiresAt'>;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: when an untouched sandbox is destroyed. */
  idleTtlMs: number;
  now: () => number;
}

/** What a call with a bad handle reads, by why the handle failed. */
function badHandleMessage(reason: string): string {
  const why =
    reason === 'expired'
      ? 'it has expired'
      : reason === 'bad_signature'
        ? 'it belongs to another credential or server, or was changed'
        : 'it is not a handle this server gave out';
  return (
    `The "sandbox" handle cannot be used: ${why}. Call the tool again without "sandbox" to get a new, empty ` +
    'sandbox, and from then on pass the handle that each result gives back.'
  );
}

/** The check of a handle, made once per request: by the lane before the SDK, else here. */
function checkOf(ids: SignedIdCodec, handle: unknown, binding: RequestBinding, nowMs: number): SignedIdCheck {
  if (binding.handle !== undefined && binding.handle.value === handle) return binding.handle.check;
  if (typeof handle !== 'string') return { ok: false, reason: 'malformed' };
  return ids.verify('sandbox', handle, binding.principal, nowMs);
}

/** Answers a tool call of the modern lane: the sandbox its handle names (or a new one), the handle given back. */
export function createModernCall(options: ModernCallOptions): BoundCall {
  const { table, ids, catalog, now } = options;
  /** The entry a handle names (opened here if another instance held it), or a new one; else why there is none. */
  const resolve = (handle: unknown, binding: RequestBinding): { entry: TableEntry; handle: string } | string => {
    const { principal } = binding;
    const check = handle === undefined ? undefined : checkOf(ids, handle, binding, now());
    if (check?.ok === false) return badHandleMessage(check.reason);
    if (check?.ok === true) {
      const held = table.get('handle', check.key);
      if (held !== undefined) {
        // It came back with its handle: from now on it lives on the idle TTL.
        held.sandbox.confirm();
        return { entry: held, handle: String(handle) };
      }
    }
    const refusal = table.makeRoom('handle', principal);
    if (refusal !== undefined) return refusal.message;
    const named = check?.ok === true ? { id: String(handle), key: check.key } : undefined;
    const { id, key } = named ?? ids.mint('sandbox', principal, now());
    const issuedAtMs = check?.ok === true ? check.issuedAtMs : now();
    const resume = named !== undefined;
    const entry = table.hold({ kind: 'handle', key, tag: toSessionTag(id), principal, issuedAtMs, resume });
    return { entry, handle: id };
  };

  return async (name, args, ctx, binding) => {
    const { handle, rest } = takeSandboxArgument(args);
    const resolved = resolve(handle, binding);
    if (typeof resolved === 'string') return { content: [{ type: 'text', text: resolved }], isError: true };
    const { entry } = resolved;
    const context = {
      ...options.context,
      sandbox: entry.sandbox,
      expiresAt: () => new Date(entry.lastUsedMs + options.idleTtlMs),
    };
    const result = await table.run(entry, undefined, () => catalog.call(name, rest, toToolContext(ctx, context)));
    return withSandboxHandle(result, resolved.handle, handle === undefined);
  };
}

/** Creates the modern lane. */
export function createModernLane({ table, ids, serve, now }: ModernLaneOptions): PostLane {
  return {
    async handlePost(req, body, ctx: RequestContext) {
      ctx.log.era = 'modern';
      ctx.log.protocol_version = req.headers.get('mcp-protocol-version')?.slice(0, 16) ?? undefined;
      table.sweep();
      const binding: RequestBinding = { principal: ctx.principal ?? ANONYMOUS_PRINCIPAL };
      const message = readPlainMessage(body);
      const { handle } = takeSandboxArgument((message?.params as { arguments?: unknown } | undefined)?.arguments);
      const mismatch =
        message?.method === 'tools/call' ? sandboxHeaderMismatch(req.headers.get(SANDBOX_HEADER), handle) : undefined;
      if (mismatch !== undefined) {
        ctx.log.error_code = 'header_mismatch';
        return toErrorResponse(
          { kind: 'param_header_mismatch', header: SANDBOX_HEADER, why: mismatch },
          message?.id ?? null,
        );
      }
      const bound =
        handle === undefined
          ? binding
          : { ...binding, handle: { value: handle, check: checkOf(ids, handle, binding, now()) } };
      // A call that would need a new entry when there is no room is refused before the SDK sees it, with the
      // status and Retry-After of fair-share.ts (a bad handle is answered by the call, as a tool result).
      const check = bound.handle?.check;
      const needsEntry = check === undefined || (check.ok && table.get('handle', check.key) === undefined);
      const refusal =
        message?.method === 'tools/call' && needsEntry ? table.hasRoom('handle', bound.principal) : undefined;
      if (refusal !== undefined) {
        ctx.log.error_code = refusal.code;
        return toErrorResponse({ kind: 'no_room', ...refusal }, message?.id ?? null);
      }
      // The SDK cancels a modern call through the request's signal when the client goes away.
      const request = ctx.signal === undefined ? req : new Request(req, { signal: ctx.signal });
      return serve(request, body, bound);
    },
  };
}
