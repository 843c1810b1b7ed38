/**
 * What a tool is: schemas, annotations and a handler that gets a sandbox and a context, never HTTP; and the one
 * place a call's context is built from the SDK's request context, for every entry and lane.
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import type * as z from 'zod';

import type { EgressSummary } from '../egress/policy';
import type { FileUrls } from '../files/file-urls';
import type { FileLink } from '../resources/file-resources';
import type { SecretSummary } from '../egress/secrets';
import type { SandboxDirectory } from '../sandbox/directory';
import type { LazySandbox } from '../sandbox/lazy-sandbox';
import type { BackendStatus, OutputStream } from '../sandbox/types';
import { createProgressForwarder } from './progress';

/** Everything a tool call may use besides its arguments. */
export interface ToolContext {
  sandbox: LazySandbox;
  /**
   * The owner's other sandboxes (open, list, name, delete), made on first use; absent where there is no owner to
   * speak of (stdio).
   */
  sandboxes?: () => SandboxDirectory;
  backend: () => BackendStatus;
  /** The egress policy the caller's sandboxes run under, and what enforces it. @default none shown */
  egress?: () => EgressStatus;
  /** When the sandbox will be reclaimed if nothing uses it. */
  expiresAt: () => Date;
  /** Makes URLs for the sandbox's files (get_file_url); absent where no HTTP listener serves them (stdio). */
  fileUrls?: () => FileUrls;
  /**
   * What names the call's sandbox in resource URIs (resources/sandbox-uris.ts): `session`, or a 2026-07-28 handle.
   * @default none: results link no files
   */
  sandboxRef?: string;
  /** Aborted when the client cancels the call. */
  signal: AbortSignal;
  /** Receives live output of commands and code. */
  onOutput?: (stream: OutputStream, text: string) => void;
  /** Called once the tool is done, before its result goes out (flushes live output; nothing may follow the result). */
  settle?: () => Promise<void>;
  /** Clamps a requested timeout to the configured maximum. */
  timeoutMs: (requested: number | undefined) => number;
}

/** A binary block beside the text (an image). */
export interface ImageBlock {
  type: 'image';
  data: string;
  mimeType: string;
}

/** A tool's answer before it is put on the wire. */
export interface ToolOutcome<O> {
  /** The human-readable rendering. */
  text: string;
  /** Conforms to the tool's output schema. */
  structured: O;
  images?: ImageBlock[];
  /** Files the tool made or names, linked from the result as resources (`resource_link`). */
  links?: FileLink[];
  /** The tool could not do its job (timeout, failed code); the result still carries what happened. */
  isError?: boolean;
}

/** A tool: its schemas are zod objects, converted to JSON Schema once per process. */
export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /**
   * `optional`: a client may run a call of it as an MCP task (protocol/task-methods.ts), for work that outlasts a
   * request. @default forbidden
   */
  taskSupport?: 'optional';
  run(args: z.output<I>, ctx: ToolContext): Promise<ToolOutcome<z.output<O>>>;
}

/** Typed constructor for a tool (keeps the handler's argument and result types tied to the schemas). */
export function defineTool<I extends z.ZodType, O extends z.ZodType>(tool: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return tool;
}

/**
 * A tool's `timeout_ms` when the call gives none: 50 s, so that the server's own answer (timed out, with the
 * output so far and what to do) reaches the client before the 60 s request timeout most MCP clients keep.
 */
export const DEFAULT_TOOL_TIMEOUT_MS = 50_000;

/** The egress policy of a credential's sandboxes, as sandbox_status shows it. */
export interface EgressStatus extends EgressSummary {
  /** What enforces it, in words. */
  readonly enforcedBy: string;
  /** The secrets the egress point adds to its requests (never their values). */
  readonly secrets: readonly SecretSummary[];
}

export interface CallContextOptions {
  sandbox: LazySandbox;
  /** The caller's principal. @default none (stdio) */
  principal?: string;
  /** The egress status of a principal's sandboxes. @default none shown */
  egressOf?: (principal: string) => EgressStatus;
  /** Makes the owner's other sandboxes' directory for the call (on first use). @default none */
  sandboxes?: () => SandboxDirectory;
  backend: () => BackendStatus;
  expiresAt: () => Date;
  /** Makes URLs for the sandbox's files, when a call asks. @default none (stdio) */
  fileUrls?: () => FileUrls;
  /** What names the sandbox in resource URIs. @default none: no links */
  sandboxRef?: string;
  /** MCP_TOOL_TIMEOUT_MAX_S in milliseconds. */
  toolTimeoutMaxMs: number;
  /** Cancels the call. @default the request's signal (the SDK aborts it when the request is cancelled or gone) */
  signal?: AbortSignal;
  /**
   * A task's call (tasks/task-runner.ts): it runs on after its request was answered, so its live output goes to
   * the task's waiters (`onOutput`) rather than that request's stream, and its timeout defaults to, and is capped
   * by, the task's time instead of MCP_TOOL_TIMEOUT_MAX_S. @default a call answered on its request
   */
  task?: { readonly maxTimeoutMs: number; readonly onOutput: (text: string) => void };
}

/**
 * Builds the tool context: cancellation from the request's signal, the timeout cap, and, when the request
 * carries a progress token, live output forwarded as progress notifications on the request's stream.
 */
export function toToolContext(ctx: ServerContext, options: CallContextOptions): ToolContext {
  const { egressOf, principal, task } = options;
  const token = task === undefined ? ctx.mcpReq._meta?.progressToken : undefined;
  const forwarder =
    token === undefined
      ? undefined
      : createProgressForwarder(({ progress, message }) =>
          ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress, message } }),
        );
  return {
    sandbox: options.sandbox,
    ...(options.sandboxes !== undefined && { sandboxes: once(options.sandboxes) }),
    backend: options.backend,
    ...(egressOf !== undefined && principal !== undefined && { egress: () => egressOf(principal) }),
    expiresAt: options.expiresAt,
    ...(options.fileUrls !== undefined && { fileUrls: options.fileUrls }),
    ...(options.sandboxRef !== undefined && { sandboxRef: options.sandboxRef }),
    signal: options.signal ?? ctx.mcpReq.signal,
    timeoutMs:
      task === undefined
        ? (requested) => Math.min(requested ?? DEFAULT_TOOL_TIMEOUT_MS, options.toolTimeoutMaxMs)
        : (requested) => Math.min(requested ?? task.maxTimeoutMs, task.maxTimeoutMs),
    ...(forwarder !== undefined && {
      onOutput: (_stream, text) => forwarder.push(text),
      settle: () => forwarder.close(),
    }),
    ...(task !== undefined && { onOutput: (_stream, text) => task.onOutput(text) }),
  };
}

/** `make`, called at most once. */
function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}
