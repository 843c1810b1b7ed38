/**
 * The 2026-07-28 lane: every request is self-describing and served statelessly by the SDK (protocol/mcp-server.ts
 * does the revision's header checks, error codes and `server/discover`). There are no sessions: a tool call names
 * its sandbox with a signed handle, bound to the credential, and a call without one gets a new sandbox. Handles
 * are entries of the sandbox table (sessions/entry-lookup.ts finds them); a sandbox made for a call without a
 * handle lives on a short first lease until its handle comes back, so clients that never pass it leave cheap
 * leftovers.
 */
import { type FileUrlFactory, originOf } from '../files/file-urls';
import { ResourceNotFoundError } from '@modelcontextprotocol/server';

import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import { toErrorResponse } from '../http/refusals';
import type { SandboxProvider } from '../sandbox/types';
import { checkHandle, createHandleLookup } from '../sessions/entry-lookup';
import { placeOf } from '../sessions/sandbox-access';
import { type CallScope, createCallDirectory, type DirectoryDeps } from '../sessions/sandbox-directory';
import type { SandboxTable, TableEntry } from '../sessions/sandbox-table';
import type { SignedIdCodec } from '../sessions/session-id';
import type { ToolCatalog } from '../tools/registry';
import { type CallContextOptions, toToolContext } from '../tools/tool';
import { asResourceRequest, readFileResource, sandboxFileTemplate } from '../resources/file-resources';
import { parseSandboxUri } from '../resources/sandbox-uris';
import {
  type BoundCall,
  type BoundResources,
  type PostLane,
  type RequestBinding,
  type ServeMcp,
  webRequestOf,
} from './mcp-server';
import { readPlainMessage } from './plain-message';
import { SANDBOX_HEADER, sandboxHeaderMismatch, takeSandboxArgument, withSandboxHandle } from './sandbox-argument';

export interface ModernLaneOptions {
  table: SandboxTable;
  /** Signs and checks sandbox handles (MCP_SESSION_SECRET). */
  ids: SignedIdCodec;
  serve: ServeMcp;
  now: () => number;
}

export interface ModernCallOptions extends Omit<ModernLaneOptions, 'serve'> {
  catalog: ToolCatalog;
  /** The rest of a tool call's context. */
  context: Omit<CallContextOptions, 'sandbox' | 'sandboxes' | 'expiresAt' | 'principal'>;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: when an untouched sandbox falls asleep. */
  idleTtlMs: number;
  /** What each call's directory of the owner's sandboxes is made of. */
  directory: DirectoryDeps;
  /** Tombstones of deleted sandboxes. */
  provider: Pick<SandboxProvider, 'hasEnded'>;
  /** Makes each call's file URLs. @default none offered */
  fileUrls?: FileUrlFactory;
}

/**
 * Answers a tool call of the modern lane: the sandbox its handle names (or a new one), the handle given back; a
 * call that opened a named sandbox gives back that one's handle.
 */
export function createModernCall(options: ModernCallOptions): BoundCall {
  const lookup = createHandleLookup(options);
  const { ids, now } = options;
  return async (name, args, ctx, binding, task) => {
    const { handle, rest } = takeSandboxArgument(args);
    const { principal, origin } = binding;
    // The lane checked the handle before the SDK saw the call: not again.
    const checked = binding.handle?.value === handle ? binding.handle?.check : undefined;
    const found = await lookup(handle, principal, checked);
    if ('message' in found) return { content: [{ type: 'text', text: found.message }], isError: true };
    let current: TableEntry = found.entry;
    let given = { handle: found.handle, fresh: handle === undefined };
    const scope: CallScope = {
      principal,
      current: () => current,
      async moveTo(entry) {
        current = entry;
        given = { handle: ids.sign(entry.named ? 'named' : 'sandbox', entry.key, principal, now()), fresh: false };
      },
      async left() {
        const next = await lookup(undefined, principal);
        if ('entry' in next) {
          current = next.entry;
          given = { handle: next.handle, fresh: true };
        }
      },
    };
    const { entry } = found;
    // The handle's tag, as its entry carries it: the log's (and telemetry's) non-reversible name for it.
    if (binding.log !== undefined) binding.log.session = entry.tag;
    const { fileUrls } = options;
    const context = {
      ...options.context,
      principal,
      sandbox: entry.sandbox,
      sandboxRef: found.handle,
      ...(fileUrls !== undefined && origin !== undefined && { fileUrls: () => fileUrls(placeOf(entry), origin()) }),
      sandboxes: () => createCallDirectory(options.directory, scope),
      expiresAt: () => new Date(entry.lastUsedMs + options.idleTtlMs),
    };
    // A task's call stops on the task's cancel, not when its request ends.
    const callContext = task === undefined ? context : { ...context, signal: task.signal, task };
    const result = await options.table.run(entry, undefined, () =>
      options.catalog.call(name, rest, toToolContext(ctx, callContext)),
    );
    return withSandboxHandle(result, given.handle, given.fresh);
  };
}

/**
 * Sandbox files as resources in the 2026-07-28 lane: `sandbox://<handle>/<path>`, the handle checked as a call's.
 * Without a handle there is no sandbox to list.
 */
export function createModernResources(
  options: Omit<ModernCallOptions, 'catalog' | 'context' | 'directory'>,
): BoundResources {
  const lookup = createHandleLookup(options);
  return {
    templates: [sandboxFileTemplate('a sandbox handle, as tool results give it in structuredContent.sandbox')],
    list: async () => ({ resources: [] }),
    read: async (uri, _ctx, { principal }) => {
      const named = parseSandboxUri(uri);
      if (named === undefined)
        throw new ResourceNotFoundError(uri, 'Not a sandbox file: their URIs are sandbox://<handle>/<path>.');
      const found = await lookup(named.sandbox, principal);
      if ('message' in found) throw new ResourceNotFoundError(uri, found.message);
      const { entry } = found;
      return asResourceRequest(() =>
        options.table.run(entry, undefined, async () => {
          const sandbox = await entry.sandbox.existing();
          if (sandbox === undefined) throw new ResourceNotFoundError(uri, 'The sandbox of this handle is gone.');
          return readFileResource(sandbox, uri, named.path);
        }),
      );
    },
  };
}

/** Creates the modern lane. */
export function createModernLane({ table, ids, serve, now }: ModernLaneOptions): PostLane {
  return {
    async handlePost(req, body, ctx) {
      ctx.log.era = 'modern';
      ctx.log.protocol_version = req.headers.get('mcp-protocol-version')?.slice(0, 16) ?? undefined;
      table.sweep();
      const principal = ctx.principal ?? ANONYMOUS_PRINCIPAL;
      const message = readPlainMessage(body);
      const isCall = message?.method === 'tools/call';
      const { handle } = takeSandboxArgument((message?.params as { arguments?: unknown } | undefined)?.arguments);
      const mismatch = isCall ? sandboxHeaderMismatch(req.headers.get(SANDBOX_HEADER), handle) : undefined;
      if (mismatch !== undefined) {
        ctx.log.error_code = 'header_mismatch';
        const refusal = { kind: 'param_header_mismatch', header: SANDBOX_HEADER, why: mismatch } as const;
        return toErrorResponse(refusal, message?.id ?? null);
      }
      const check = handle === undefined ? undefined : checkHandle(ids, handle, principal, now());
      const binding: RequestBinding = {
        principal,
        log: ctx.log,
        origin: () => originOf(req),
        ...(check !== undefined && { handle: { value: handle, check } }),
      };
      // A call that would need a new entry when there is no room is refused before the SDK sees it, with the
      // status and Retry-After of fair-share.ts (a bad handle is answered by the call, as a tool result).
      const needsEntry = check === undefined || (check.ok && table.get('handle', check.key) === undefined);
      const refusal = isCall && needsEntry ? table.hasRoom('handle', principal) : undefined;
      if (refusal !== undefined) {
        ctx.log.error_code = refusal.code;
        return toErrorResponse({ kind: 'no_room', ...refusal }, message?.id ?? null);
      }
      // The SDK cancels a modern call through the request's signal when the client goes away.
      const request = webRequestOf(req, ctx.signal);
      return serve(request, body, binding);
    },
  };
}
