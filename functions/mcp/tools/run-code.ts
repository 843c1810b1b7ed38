/** `run_code`: code in a stateful interpreter (Python) or a one-shot one (other languages). */
import * as z from 'zod';

import { MAX_CODE_RESULT_BYTES, MAX_CODE_RESULTS } from '../sandbox/code-results';
import {
  describeMemoryLimit,
  EnvSchema,
  OutOfMemorySchema,
  outOfMemoryNote,
  renderStream,
  TimeoutSchema,
} from './shared-schemas';
import { linkFiles, OutputFilesSchema } from './file-links';
import { defineTool, type ImageBlock } from './tool';

const Input = z.strictObject({
  code: z.string().min(1).max(1_000_000).describe('The code to run.'),
  language: z
    .enum(['python', 'javascript', 'typescript', 'bash', 'r', 'java'])
    .default('python')
    .describe('Python keeps variables and imports between calls; the others run each call on its own.'),
  timeout_ms: TimeoutSchema.optional(),
  env: EnvSchema.optional(),
  files: OutputFilesSchema,
});

const Output = z.object({
  stdout: z.string(),
  stderr: z.string(),
  results: z
    .array(z.object({ type: z.enum(['text', 'image']), text: z.string().optional(), mime_type: z.string().optional() }))
    .describe('Rich results: the value of the last expression, charts (images are also sent as image content).'),
  results_omitted: z
    .object({ count: z.number().int(), bytes: z.number().int() })
    .optional()
    .describe(
      `Present when the code produced more rich results than one call returns (${MAX_CODE_RESULTS}, ` +
        `${MAX_CODE_RESULT_BYTES / 1024 / 1024} MiB in all): how many were left out, and their size.`,
    ),
  error: z.object({ name: z.string(), value: z.string(), traceback: z.string() }).nullable(),
  timed_out: z.boolean(),
  state_lost: z.boolean().describe('True when the interpreter restarted and earlier variables are gone.'),
  duration_ms: z.number().int(),
  out_of_memory: OutOfMemorySchema,
});

export const runCodeTool = defineTool({
  name: 'run_code',
  title: 'Run code',
  description:
    'Run code in the sandbox. Python runs in a persistent interpreter: variables and imports survive between ' +
    'calls, the value of a final ' +
    'expression is returned, and matplotlib figures come back as images. Exceptions come back with name, value ' +
    'and traceback. ' +
    'Code running longer than about 50 s belongs in a script started with run_command background: true, since ' +
    'most clients give up on a call after 60 s.',
  input: Input,
  output: Output,
  annotations: { destructiveHint: true, openWorldHint: true },
  taskSupport: 'optional',
  async run(args, ctx) {
    const sandbox = await ctx.sandbox.get();
    const timeoutMs = ctx.timeoutMs(args.timeout_ms);
    const result = await sandbox.runCode({
      code: args.code,
      language: args.language,
      env: args.env,
      timeoutMs,
      signal: ctx.signal,
      onOutput: ctx.onOutput,
    });
    const images: ImageBlock[] = [];
    const lines: string[] = [];
    for (const item of result.results) {
      if (item.type === 'image') images.push({ type: 'image', data: item.data, mimeType: item.mimeType });
      else lines.push(`Result: ${item.text}`);
    }
    if (result.timedOut)
      lines.unshift(
        `Timed out after ${timeoutMs} ms and was interrupted. Pass a larger timeout_ms, or run long work as a ` +
          `script with run_command background: true.`,
      );
    if (result.cancelled) lines.unshift('Cancelled.');
    const omitted = result.omittedResults;
    if (omitted !== undefined) {
      lines.push(
        `${omitted.count} more result(s) (${omitted.bytes} bytes) were left out: a call returns at most ` +
          `${MAX_CODE_RESULTS} results and ${MAX_CODE_RESULT_BYTES / 1024 / 1024} MiB of them. Save large outputs ` +
          `to files (savefig, to_csv) and read or list them instead.`,
      );
    }
    if (result.error !== null) lines.push(`${result.error.name}: ${result.error.value}`, result.error.traceback);
    const oom = result.outOfMemory;
    if (oom !== undefined && result.stateLost)
      lines.push(
        `The interpreter was restarted because it ran out of memory (${describeMemoryLimit(oom)}): variables and ` +
          `imports from earlier calls are gone.`,
      );
    else if (oom !== undefined) lines.push(outOfMemoryNote(oom));
    if (result.stateLost && oom === undefined)
      lines.push('The interpreter was restarted: variables and imports from earlier calls are gone.');
    // Only when asked: a plain call does no more than it did.
    const linked = args.files === undefined ? { links: [], note: undefined } : await linkFiles(sandbox, args.files);
    if (linked.note !== undefined) lines.push(linked.note);
    const text =
      [renderStream('stdout', result.stdout), renderStream('stderr', result.stderr), ...lines]
        .filter(Boolean)
        .join('\n') || '(no output)';
    return {
      text,
      images,
      links: linked.links,
      isError: result.error !== null || result.timedOut || result.cancelled || oom !== undefined,
      structured: {
        stdout: result.stdout.text,
        stderr: result.stderr.text,
        results: result.results.map((r) =>
          r.type === 'text'
            ? { type: 'text' as const, text: r.text }
            : { type: 'image' as const, mime_type: r.mimeType },
        ),
        ...(omitted === undefined ? {} : { results_omitted: { count: omitted.count, bytes: omitted.bytes } }),
        error: result.error,
        timed_out: result.timedOut,
        state_lost: result.stateLost,
        duration_ms: result.durationMs,
        ...(oom === undefined ? {} : { out_of_memory: { memory_limit_bytes: oom.limitBytes } }),
      },
    };
  },
});
