/** The one place a tool call's context is built from the SDK's request context, for every entry and lane. */
import type { ServerContext } from '@modelcontextprotocol/server';

import type { LazySandbox } from '../sandbox/lazy-sandbox';
import type { BackendStatus } from '../sandbox/types';
import type { ToolContext } from '../tools';
import { createProgressForwarder } from '../tools/progress';

/**
 * A tool's `timeout_ms` when the call gives none: 50 s, so that the server's own answer (timed out, with the
 * output so far and what to do) reaches the client before the 60 s request timeout most MCP clients keep.
 */
export const DEFAULT_TOOL_TIMEOUT_MS = 50_000;

export interface CallContextOptions {
  sandbox: LazySandbox;
  backend: () => BackendStatus;
  expiresAt: () => Date;
  /** MCP_TOOL_TIMEOUT_MAX_S in milliseconds. */
  toolTimeoutMaxMs: number;
  /** Cancels the call. @default the request's signal (the SDK aborts it when the request is cancelled or gone) */
  signal?: AbortSignal;
}

/**
 * Builds the tool context: cancellation from the request's signal, the timeout cap, and, when the request
 * carries a progress token, live output forwarded as progress notifications on the request's stream.
 */
export function toToolContext(ctx: ServerContext, options: CallContextOptions): ToolContext {
  const token = ctx.mcpReq._meta?.progressToken;
  const forwarder =
    token === undefined
      ? undefined
      : createProgressForwarder(({ progress, message }) =>
          ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress, message } }),
        );
  return {
    sandbox: options.sandbox,
    backend: options.backend,
    expiresAt: options.expiresAt,
    signal: options.signal ?? ctx.mcpReq.signal,
    timeoutMs: (requested) => Math.min(requested ?? DEFAULT_TOOL_TIMEOUT_MS, options.toolTimeoutMaxMs),
    ...(forwarder !== undefined && {
      onOutput: (_stream, text) => forwarder.push(text),
      settle: () => forwarder.close(),
    }),
  };
}
