/**
 * Background processes in an E2B sandbox, as `background-registry.ts` keeps them, started through envd.
 * Everything that must outlive this server runs inside the microVM, in one shell script per process
 * (`launchScript`): the command in a session of its own (so that a signal reaches everything it started), its
 * output written unbuffered into log segments (`log-segments.ts`, the same policy as the local backend), its
 * pid, exit status and any signal we sent in files beside the log. So another server instance can list, read
 * and stop what this one started.
 */
import type { Clock } from '../../clock';
import { AppError } from '../../errors';
import {
  type BackgroundBackend,
  type BackgroundHandle,
  BackgroundRegistry,
  type ExitStatus,
  parseStartedText,
  STARTED_COMMAND_CHARS,
  type StartedRecord,
  toStartedText,
} from '../background-registry';
import {
  extentOfSegments,
  groupSegments,
  LOG_SEGMENT_BYTES,
  pageOf,
  type SegmentFile,
  segmentRanges,
} from '../log-segments';
import type { ProcessLogPage } from '../types';
import type { E2BErrorClasses, E2BSandboxApi } from './sdk';
import { shellQuote } from './shell';

/** Where the logs live inside the sandbox. */
const LOG_DIR = '/tmp/.mcp-processes';
/** Background commands stream for as long as this (the process itself is not limited). */
const STREAM_LIMIT_MS = 24 * 3600 * 1000;
/** How often a log page is re-read when the log rotated under the read. */
const READ_ATTEMPTS = 3;
/** The most of a status file read (an exit status or a signal number; the sandbox could make it any size). */
const STATUS_FILE_BYTES = 64;

/**
 * The script that runs process `id`: `setsid` makes the command the leader of its own process group (fd 3
 * carries the script's stdin to it, since a background job's stdin is otherwise /dev/null); when it exits,
 * its status is written and whatever it left in its group is killed, as on the local backend. The output goes
 * through `head -c` per segment, made unbuffered by `stdbuf` (GNU head would hold a quiet process's output
 * in its buffer until it exits), and a full segment deletes the one before it.
 */
export function launchScript(id: string, command: string, started?: StartedRecord): string {
  const base = `${LOG_DIR}/${id}`;
  // What a later instance lists of it (background-registry.ts): when it started, and its command's start.
  const record = started === undefined ? '' : `printf '%s' ${shellQuote(toStartedText(started))} > ${base}.cmd && `;
  const writer =
    `{ w=head; command -v stdbuf >/dev/null && w='stdbuf -o0 head'; k=0; ` +
    `while :; do $w -c ${LOG_SEGMENT_BYTES} > ${base}.log.$k; ` +
    `[ "$(stat -c %s ${base}.log.$k)" -lt ${LOG_SEGMENT_BYTES} ] && break; k=$((k+1)); rm -f ` +
    `${base}.log.$((k-2)); done; cat > /dev/null; }`;
  return (
    `mkdir -p ${LOG_DIR} && ${record}exec 3<&0 && ` +
    `{ setsid bash -c ${shellQuote(command)} <&3 3<&- 2>&1 & p=$!; echo $p > ${base}.pid; exec 3<&-; ` +
    `wait $p; echo $? > ${base}.exit; kill -KILL -- -$p 2>/dev/null; } | ${writer}`
  );
}

/** Where a background process runs, beside its command. */
export interface E2BBackgroundPlace {
  readonly cwd: string;
  readonly env: Record<string, string> | undefined;
}

/** An E2B sandbox's background processes. */
export type E2BBackgroundProcesses = BackgroundRegistry<E2BBackgroundPlace, BackgroundHandle>;

/** The background processes of the sandbox behind `api`. */
export function createE2BBackgroundProcesses(
  api: E2BSandboxApi,
  errors: E2BErrorClasses,
  clock: Clock,
): E2BBackgroundProcesses {
  return new BackgroundRegistry(new E2BBackground(api, errors), clock);
}

class E2BBackground implements BackgroundBackend<E2BBackgroundPlace, BackgroundHandle> {
  constructor(
    private readonly api: E2BSandboxApi,
    private readonly errors: E2BErrorClasses,
  ) {}

  /** The log segments in the sandbox, by process id. */
  async logs(): Promise<Map<string, SegmentFile[]>> {
    return groupSegments(await this.api.listFiles(LOG_DIR, 1).catch(() => []));
  }

  async launch(
    id: string,
    command: string,
    { cwd, env }: E2BBackgroundPlace,
    started: StartedRecord,
  ): Promise<BackgroundHandle> {
    const handle = await this.api.startCommand(launchScript(id, command, started), {
      cwd,
      envs: env,
      stdin: true,
      timeoutMs: STREAM_LIMIT_MS,
    });
    // The script ends once the command has exited and its output is written; a stream that breaks otherwise
    // tells nothing (the process may still run).
    const exited = async (): Promise<ExitStatus> => (await this.statusOf(id)) ?? { code: null, signal: null };
    const ended = handle
      .wait()
      .then(exited, async (err: unknown) => (err instanceof this.errors.CommandExitError ? exited() : undefined));
    /** Input on its way to envd (one request per write). */
    let sending = 0;
    return {
      ended,
      outputBytes: () => undefined,
      signal: async (signal) => {
        // The marker says the status that follows was our signal (reported as exit code null, as locally).
        const number = signalNumber(signal);
        const base = `${LOG_DIR}/${id}`;
        const killer = await this.api.startCommand(
          `echo ${number} > ${base}.signal; kill -s ${number} -- -$(cat ${base}.pid) 2>/dev/null; true`,
          { timeoutMs: 15_000 },
        );
        await killer.wait().catch(() => undefined);
      },
      writeStdin: async (input) => {
        const bytes = Buffer.byteLength(input);
        sending += bytes;
        try {
          await handle.sendStdin(input);
        } finally {
          sending -= bytes;
        }
        return true;
      },
      stdinBacklog: () => sending,
    };
  }

  async readLog(
    id: string,
    handle: BackgroundHandle | undefined,
    offset: number | undefined,
    limitBytes: number,
  ): Promise<ProcessLogPage | undefined> {
    for (let attempt = 1; ; attempt += 1) {
      const segments = (await this.logs()).get(id);
      if (segments === undefined && handle === undefined) return undefined;
      const extent = extentOfSegments(segments ?? []);
      const { from, length } = pageOf(extent, offset, limitBytes);
      const bytes = await this.readRange(id, from, length);
      // A segment deleted between listing and reading (the log rotated): list again.
      if (bytes.length === length || attempt === READ_ATTEMPTS) {
        return { text: bytes.toString('utf8'), offset: from, nextOffset: from + bytes.length, ...extent };
      }
    }
  }

  earlierStatus(id: string): Promise<ExitStatus | undefined> {
    return this.statusOf(id);
  }

  async earlierStart(id: string): Promise<StartedRecord | undefined> {
    // A UTF-8 character takes at most 4 bytes: a kept command and its date fit in this.
    const bytes = await this.api.readFile(`${LOG_DIR}/${id}.cmd`, 4 * STARTED_COMMAND_CHARS + 64);
    return parseStartedText(Buffer.from(bytes).toString('utf8'));
  }

  /**
   * How a finished process ended: its exit code, or (code `null`) the signal we sent when that is what ended
   * it (the shell's status 128 + its number); `undefined` while it runs. A status above 128 that no signal of
   * ours explains is reported as the exit code it is (the shell cannot tell it from a signal sent by others).
   */
  private async statusOf(id: string): Promise<ExitStatus | undefined> {
    const read = (suffix: string): Promise<string | undefined> =>
      this.api.readFile(`${LOG_DIR}/${id}.${suffix}`, STATUS_FILE_BYTES).then(
        (bytes) => Buffer.from(bytes).toString().trim(),
        () => undefined,
      );
    const [status, sent] = await Promise.all([read('exit'), read('signal')]);
    if (status === undefined || !/^\d+$/.test(status)) return undefined;
    const code = Number(status);
    const signal = sent === undefined || code !== 128 + Number(sent) ? undefined : signalName(Number(sent));
    return signal === undefined ? { code, signal: null } : { code: null, signal };
  }

  /** Bytes `[from, from + length)` of the log, read inside the sandbox (base64 on stdout: no text decoding). */
  private async readRange(id: string, from: number, length: number): Promise<Buffer> {
    if (length === 0) return Buffer.alloc(0);
    const parts = segmentRanges(from, length).map(
      (r) => `tail -c +${r.start + 1} ${LOG_DIR}/${id}.log.${r.index} 2>/dev/null | head -c ${r.length}`,
    );
    // The sandbox's own tools answer: no more than the range's base64 is kept, however much they print.
    const expected = 4 * Math.ceil(length / 3);
    let out = '';
    let reader: Awaited<ReturnType<E2BSandboxApi['startCommand']>> | undefined;
    reader = await this.api.startCommand(`{ ${parts.join('; ')}; } | base64 -w 0`, {
      timeoutMs: 30_000,
      onStdout: (text) => {
        const kept = text.slice(0, expected - out.length);
        out += kept;
        // More than was asked for: stop the reader rather than take the rest.
        if (kept.length < text.length) void reader?.kill().catch(() => false);
      },
    });
    await reader.wait().catch(() => undefined);
    return Buffer.from(out, 'base64');
  }
}

const SIGNALS: Partial<Record<NodeJS.Signals, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGUSR2: 12,
  SIGTERM: 15,
  SIGCONT: 18,
  SIGSTOP: 19,
};

/** The name of Linux signal `number`, among those this server sends. */
function signalName(number: number): NodeJS.Signals | undefined {
  return (Object.keys(SIGNALS) as NodeJS.Signals[]).find((name) => SIGNALS[name] === number);
}

/** The Linux number of `signal` (the sandbox is Linux whatever this server runs on). */
function signalNumber(signal: NodeJS.Signals): number {
  const number = SIGNALS[signal];
  if (number === undefined)
    throw new AppError('invalid_input', `Signal ${signal} cannot be sent to a process in the sandbox.`);
  return number;
}
