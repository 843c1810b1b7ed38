/** `run_command`: a shell command in the sandbox; a non-zero exit is a normal result. */
import * as z from 'zod';

import {
  argumentText,
  EnvSchema,
  OutOfMemorySchema,
  outOfMemoryNote,
  PathSchema,
  renderStream,
  TimeoutSchema,
} from './shared-schemas';
import { linkFiles, OutputFilesSchema } from './file-links';
import { defineTool } from './tool';

const Input = z.strictObject({
  command: z.string().min(1).pipe(argumentText('the command')).describe('A bash command line, run with `bash -c`.'),
  cwd: PathSchema.optional().describe('Working directory (default: the sandbox working directory).'),
  env: EnvSchema.optional(),
  timeout_ms: TimeoutSchema.optional(),
  stdin: z.string().max(4_000_000).optional().describe('Text written to the command’s standard input (default: none).'),
  background: z
    .boolean()
    .default(false)
    .describe(
      'Start it in the background (a dev server, a long job) and return its process_id at once; see ' +
        'manage_process. timeout_ms does not apply; it ends with the sandbox.',
    ),
  files: OutputFilesSchema,
});

const Output = z.object({
  exit_code: z.number().int().nullable().describe('null when the process was killed by a signal.'),
  stdout: z.string(),
  stderr: z.string(),
  stdout_bytes: z
    .number()
    .int()
    .describe('Bytes the command wrote to stdout (stdout may hold only the head and tail).'),
  stderr_bytes: z.number().int(),
  timed_out: z.boolean(),
  duration_ms: z.number().int(),
  process_id: z.string().nullable().describe('Set for background: true; pass it to manage_process.'),
  disk_full: z
    .object({ disk_limit_bytes: z.number().int().describe("The sandbox's disk limit.") })
    .optional()
    .describe(
      "Present when the sandbox's disk was full (or nearly) after the command: writes fail with ENOSPC until " +
        'files are deleted.',
    ),
  out_of_memory: OutOfMemorySchema,
});

export const runCommandTool = defineTool({
  name: 'run_command',
  title: 'Run a shell command',
  description:
    'Run a bash command in the sandbox and return its exit code, stdout and stderr. A non-zero exit code is a ' +
    'normal result. ' +
    'Output is bounded (head and tail are kept). The command and everything it started are killed at the timeout. ' +
    'With background: true it keeps running (until killed or the sandbox ends) and is managed with ' +
    'manage_process: use it for anything that may take ' +
    'longer than about 50 s (builds, test suites, servers), since most clients give up on a call after 60 s.',
  input: Input,
  output: Output,
  annotations: { destructiveHint: true, openWorldHint: true },
  taskSupport: 'optional',
  async run(args, ctx) {
    const sandbox = await ctx.sandbox.get();
    if (args.background) {
      const started = await sandbox.startBackground({ command: args.command, cwd: args.cwd, env: args.env });
      if (args.stdin !== undefined) await sandbox.writeBackgroundStdin(started.id, args.stdin);
      return {
        text:
          `Started in the background as ${started.id}. Read its output with manage_process {"action": "logs", ` +
          `"process_id": "${started.id}"}; stop it with action "kill".`,
        structured: {
          exit_code: null,
          stdout: '',
          stderr: '',
          stdout_bytes: 0,
          stderr_bytes: 0,
          timed_out: false,
          duration_ms: 0,
          process_id: started.id,
        },
      };
    }
    const timeoutMs = ctx.timeoutMs(args.timeout_ms);
    const result = await sandbox.runCommand({
      command: args.command,
      cwd: args.cwd,
      env: args.env,
      stdin: args.stdin,
      timeoutMs,
      signal: ctx.signal,
      onOutput: ctx.onOutput,
    });
    const ended = result.timedOut
      ? `Timed out after ${timeoutMs} ms; the command and its child processes were killed. Pass a larger ` +
        `timeout_ms, or run it with background: true and follow it with manage_process.`
      : result.cancelled
        ? 'Cancelled; the command and its child processes were killed.'
        : result.exitCode === null
          ? `Killed by ${result.signal ?? 'a signal'}.`
          : `Exit code ${result.exitCode}.`;
    const status = result.outOfMemory === undefined ? ended : `${outOfMemoryNote(result.outOfMemory)} ${ended}`;
    // Only when asked: a plain call does no more than it did.
    const linked = args.files === undefined ? { links: [], note: undefined } : await linkFiles(sandbox, args.files);
    const text = [
      status,
      result.diskFull?.note,
      renderStream('stdout', result.stdout),
      renderStream('stderr', result.stderr),
      linked.note,
    ]
      .filter(Boolean)
      .join('\n');
    return {
      text,
      links: linked.links,
      isError: result.timedOut || result.cancelled || result.outOfMemory !== undefined,
      structured: {
        exit_code: result.exitCode,
        stdout: result.stdout.text,
        stderr: result.stderr.text,
        stdout_bytes: result.stdout.totalBytes,
        stderr_bytes: result.stderr.totalBytes,
        timed_out: result.timedOut,
        duration_ms: result.durationMs,
        process_id: null,
        ...(result.diskFull === undefined ? {} : { disk_full: { disk_limit_bytes: result.diskFull.limitBytes } }),
        ...(result.outOfMemory === undefined
          ? {}
          : { out_of_memory: { memory_limit_bytes: result.outOfMemory.limitBytes } }),
      },
    };
  },
});
