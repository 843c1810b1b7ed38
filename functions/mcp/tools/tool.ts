/** What a tool is: schemas, annotations and a handler that gets a sandbox and a context, never HTTP. */
import type * as z from 'zod';

import type { LazySandbox } from '../sandbox/lazy-sandbox';
import type { BackendStatus, OutputStream } from '../sandbox/types';

/** Everything a tool call may use besides its arguments. */
export interface ToolContext {
  sandbox: LazySandbox;
  backend: () => BackendStatus;
  /** When the sandbox will be reclaimed if nothing uses it. */
  expiresAt: () => Date;
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
  run(args: z.output<I>, ctx: ToolContext): Promise<ToolOutcome<z.output<O>>>;
}

/** Typed constructor for a tool (keeps the handler's argument and result types tied to the schemas). */
export function defineTool<I extends z.ZodType, O extends z.ZodType>(tool: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return tool;
}
