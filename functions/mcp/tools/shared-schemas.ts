/** Schema pieces and renderers shared by several tools. */
import * as z from 'zod';

import type { CapturedOutput } from '../sandbox/output-capture';
import type { OutOfMemory } from '../sandbox/types';
import { formatBytes } from './sandbox-status';

/** Linux refuses a single argument or environment string longer than this (MAX_ARG_STRLEN, 128 KiB). */
export const MAX_ARG_BYTES = 128 * 1024 - 1;

/** Text that becomes a process argument or environment value: no NUL byte, within the kernel's size limit. */
export function argumentText(what: string) {
  return z
    .string()
    .refine((text) => !text.includes('\0'), `${what} must not contain a NUL byte (\\0)`)
    .refine(
      (text) => Buffer.byteLength(text) <= MAX_ARG_BYTES,
      `${what} is longer than ${MAX_ARG_BYTES} bytes, the most Linux passes to a process; write it to a file ` +
        `with write_file and run that`,
    );
}

/** A POSIX environment variable name. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Environment variables for a process: POSIX names only. The names are checked by a refinement, not by a key
 * schema, which JSON Schema would state as `propertyNames`, outside the portable subset (docs/tool-schemas.md);
 * the description states the rule instead.
 */
export const EnvSchema = z
  .record(z.string(), argumentText('an environment variable value'))
  .superRefine((env, ctx) => {
    for (const name of Object.keys(env)) {
      if (!ENV_NAME.test(name))
        ctx.addIssue({
          code: 'custom',
          message: 'environment variable names are letters, digits and _, and do not start with a digit',
          path: [name],
        });
    }
  })
  .refine((env) => Object.keys(env).length <= 100, 'at most 100 environment variables')
  .describe('Extra environment variables for this call (names: letters, digits and _, not starting with a digit).');

/** A timeout argument in milliseconds; the server caps it at MCP_TOOL_TIMEOUT_MAX_S. At least 1 (not "positive", whose
 * `exclusiveMinimum` is outside the portable subset). */
export const TimeoutSchema = z
  .number()
  .int()
  .min(1)
  .describe(
    'Wall-clock limit in milliseconds (default 50000; capped by the server maximum). Most clients give up on a ' +
      'call after 60 s, so run longer work with run_command background: true and follow it with manage_process.',
  );

/** A path argument: relative to the working directory, or absolute under it. */
export const PathSchema = z
  .string()
  .min(1)
  .max(4096)
  .refine((path) => !path.includes('\0'), 'a path must not contain a NUL byte (\\0)');

/** A call's `out_of_memory` field: present when the sandbox ran out of memory during it. */
export const OutOfMemorySchema = z
  .object({ memory_limit_bytes: z.number().int().describe("The sandbox's memory limit.") })
  .optional()
  .describe('Present when the sandbox reached its memory limit during the call and the kernel killed a process of it.');

/** The memory limit as the model reads it: `the sandbox's limit is 1 GiB, LOCAL_SANDBOX_MEMORY_MB`. */
export function describeMemoryLimit(oom: OutOfMemory): string {
  return `the sandbox's limit is ${formatBytes(oom.limitBytes)}, ${oom.setting}`;
}

/** What a call says when the kernel killed a process of it for want of memory. */
export function outOfMemoryNote(oom: OutOfMemory): string {
  return (
    `Killed: out of memory (${describeMemoryLimit(oom)}): the kernel killed a process when the sandbox reached its ` +
    `limit. Use less memory at once (smaller inputs, streaming), or ask the operator to raise ${oom.setting}.`
  );
}

/** Renders a captured stream with its label, or nothing when it is empty. */
export function renderStream(label: string, output: CapturedOutput): string {
  if (output.totalBytes === 0) return '';
  const note = output.truncated ? ` (${output.totalBytes} bytes in all; the middle is omitted)` : '';
  return `${label}${note}:\n${output.text}${output.text.endsWith('\n') ? '' : '\n'}`;
}
