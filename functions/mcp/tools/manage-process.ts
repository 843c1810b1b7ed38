/** `manage_process`: list, read the logs of, signal, and write to background processes. */
import * as z from 'zod';

import { AppError } from '../errors';
import type { BackgroundProcess } from '../sandbox/types';
import { defineTool } from './tool';

const SIGNALS = ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'] as const;
/** Bytes of log returned by default. */
const DEFAULT_LOG_BYTES = 64 * 1024;

const Input = z.strictObject({
  action: z.enum(['list', 'logs', 'kill', 'write_stdin']).describe('What to do.'),
  process_id: z
    .string()
    .min(1)
    .max(32)
    .optional()
    .describe('The process (from run_command with background: true); needed for logs, kill and write_stdin.'),
  signal: z
    .enum(SIGNALS)
    .default('SIGTERM')
    .describe('For kill: the signal, sent to the process and everything it started.'),
  input: z.string().max(1_000_000).optional().describe('For write_stdin: the text to write (add "\\n" to end a line).'),
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('For logs: the byte offset to read from (next_offset of the last page); default: the tail.'),
  limit_bytes: z
    .number()
    .int()
    .min(1)
    .max(1_048_576)
    .default(DEFAULT_LOG_BYTES)
    .describe('For logs: at most this many bytes.'),
});

const Process = z.object({
  process_id: z.string(),
  command: z.string(),
  started_at: z.string(),
  state: z.enum(['running', 'exited']),
  exit_code: z.number().int().nullable(),
  signal: z
    .string()
    .nullable()
    .describe(
      'The signal that ended it ("SIGKILL", "SIGTERM"…); null while it runs or when it exited by itself (then ' +
        'exit_code says how).',
    ),
  output_bytes: z.number().int().describe('Bytes of output (stdout and stderr) written so far, kept or not.'),
});

const Output = z.object({
  action: z.string(),
  processes: z.array(Process).optional(),
  process: Process.optional(),
  log: z
    .object({
      text: z.string(),
      offset: z.number().int(),
      next_offset: z.number().int(),
      total_bytes: z.number().int(),
      dropped_bytes: z.number().int(),
    })
    .optional(),
  pending_bytes: z
    .number()
    .int()
    .optional()
    .describe('For write_stdin: bytes of the input the process has not read yet (0: all of it went in).'),
});

const toProcess = (p: BackgroundProcess) => ({
  process_id: p.id,
  command: p.command,
  started_at: p.startedAt,
  state: p.state,
  exit_code: p.exitCode,
  signal: p.signal,
  output_bytes: p.outputBytes,
});
const ending = (p: BackgroundProcess): string =>
  p.exitCode !== null ? ` (exit ${p.exitCode})` : p.signal !== null ? ` (killed by ${p.signal})` : '';
const describe = (p: BackgroundProcess): string =>
  `${p.id} ${p.state}${ending(p)}, ${p.outputBytes} bytes of output: ${p.command}`;

export const manageProcessTool = defineTool({
  name: 'manage_process',
  title: 'Manage background processes',
  description:
    'Manage processes started with run_command background: true. list: all of them; logs: their output (the ' +
    'tail, or a page from offset); ' +
    'kill: send a signal to the process and everything it started; write_stdin: write text to its standard input.',
  input: Input,
  output: Output,
  annotations: { destructiveHint: true },
  async run(args, ctx) {
    const sandbox = await ctx.sandbox.get();
    if (args.action === 'list') {
      const processes = await sandbox.listBackground();
      const text = processes.length === 0 ? 'No background processes.' : processes.map(describe).join('\n');
      return { text, structured: { action: 'list', processes: processes.map(toProcess) } };
    }
    const id = args.process_id;
    if (id === undefined)
      throw new AppError(
        'invalid_input',
        `Give process_id for action "${args.action}"; action "list" shows the processes.`,
      );
    switch (args.action) {
      case 'logs': {
        const page = await sandbox.readBackgroundLog(id, { offset: args.offset, limitBytes: args.limit_bytes });
        const more = page.nextOffset < page.totalBytes ? ` More follows: continue with offset ${page.nextOffset}.` : '';
        const dropped = page.droppedBytes > 0 ? ` The first ${page.droppedBytes} bytes are no longer kept.` : '';
        const head = `${id}: bytes ${page.offset}-${page.nextOffset} of ${page.totalBytes}.${more}${dropped}`;
        return {
          text: `${head}\n${page.text}`,
          structured: {
            action: 'logs',
            log: {
              text: page.text,
              offset: page.offset,
              next_offset: page.nextOffset,
              total_bytes: page.totalBytes,
              dropped_bytes: page.droppedBytes,
            },
          },
        };
      }
      case 'kill': {
        const process = await sandbox.signalBackground(id, args.signal);
        const text =
          process.state === 'running'
            ? `Sent ${args.signal}; ${id} is still running (try SIGKILL).`
            : process.signal !== null
              ? `Sent ${args.signal}. Killed by ${process.signal}. ${describe(process)}.`
              : `Sent ${args.signal}; ${describe(process)}.`;
        return { text, structured: { action: 'kill', process: toProcess(process) } };
      }
      case 'write_stdin': {
        if (args.input === undefined) throw new AppError('invalid_input', 'Give input for action "write_stdin".');
        const bytes = Buffer.byteLength(args.input);
        const written = await sandbox.writeBackgroundStdin(id, args.input);
        if (written.state === 'written')
          return { text: `Wrote ${bytes} bytes to ${id}.`, structured: { action: 'write_stdin', pending_bytes: 0 } };
        return {
          text:
            `${id} has taken ${bytes - written.pendingBytes} of the ${bytes} bytes so far; the rest goes in as it ` +
            `reads. Another write_stdin is refused until it has read them all.`,
          structured: { action: 'write_stdin', pending_bytes: written.pendingBytes },
        };
      }
      default: {
        const unknown: never = args.action;
        throw new AppError('invalid_input', `Unknown action ${String(unknown)}.`);
      }
    }
  },
});
