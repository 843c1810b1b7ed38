/**
 * Background processes in an E2B sandbox, started through envd. Everything that must outlive this server
 * runs inside the microVM, in one shell script per process (`launchScript`): the command in a session of its
 * own (so that a signal reaches everything it started), its output written unbuffered into log segments
 * (`log-segments.ts`, the same policy as the local backend), its pid, exit status and any signal we sent in
 * files beside the log. So another server instance can list, read and stop what this one started.
 */
import type { Clock } from '../../clock';
import { AppError } from '../../errors';
import { extentOfSegments, groupSegments, LOG_SEGMENT_BYTES, type LogExtent, pageOf, type SegmentFile, segmentRanges } from '../log-segments';
import type { BackgroundProcess, ProcessLogPage } from '../types';
import type { E2BErrorClasses, E2BSandboxApi } from './sdk';
import { shellQuote } from './shell';

/** Where the logs live inside the sandbox. */
const LOG_DIR = '/tmp/.mcp-processes';
/** Background commands stream for as long as this (the process itself is not limited). */
const STREAM_LIMIT_MS = 24 * 3600 * 1000;
/** How long `signal` waits to report the process gone. */
const SIGNAL_WAIT_MS = 2_000;
/** How often a log page is re-read when the log rotated under the read. */
const READ_ATTEMPTS = 3;

type Handle = Awaited<ReturnType<E2BSandboxApi['startCommand']>>;

interface Entry {
  readonly id: string;
  readonly command: string;
  readonly startedAt: string;
  readonly handle: Handle;
  /** Settles once the script has ended (the command exited and its output is written). */
  readonly ended: Promise<void>;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  exited: boolean;
}

/**
 * The script that runs process `id`: `setsid` makes the command the leader of its own process group (fd 3
 * carries the script's stdin to it, since a background job's stdin is otherwise /dev/null); when it exits,
 * its status is written and whatever it left in its group is killed, as on the local backend. The output goes
 * through `head -c` per segment, made unbuffered by `stdbuf` (GNU head would hold a quiet process's output
 * in its buffer until it exits), and a full segment deletes the one before it.
 */
export function launchScript(id: string, command: string): string {
  const base = `${LOG_DIR}/${id}`;
  const writer =
    `{ w=head; command -v stdbuf >/dev/null && w='stdbuf -o0 head'; k=0; ` +
    `while :; do $w -c ${LOG_SEGMENT_BYTES} > ${base}.log.$k; ` +
    `[ "$(stat -c %s ${base}.log.$k)" -lt ${LOG_SEGMENT_BYTES} ] && break; k=$((k+1)); rm -f ${base}.log.$((k-2)); done; cat > /dev/null; }`;
  return (
    `mkdir -p ${LOG_DIR} && exec 3<&0 && ` +
    `{ setsid bash -c ${shellQuote(command)} <&3 3<&- 2>&1 & p=$!; echo $p > ${base}.pid; exec 3<&-; ` +
    `wait $p; echo $? > ${base}.exit; kill -KILL -- -$p 2>/dev/null; } | ${writer}`
  );
}

export class E2BBackgroundProcesses {
  private readonly entries = new Map<string, Entry>();
  private next = 1;

  constructor(
    private readonly api: E2BSandboxApi,
    private readonly errors: E2BErrorClasses,
    private readonly clock: Clock,
  ) {}

  async start(command: string, cwd: string, env: Record<string, string> | undefined): Promise<BackgroundProcess> {
    // Ids continue after those an earlier instance started in this sandbox. Read `next` only after the
    // await: starts running side by side must each get their own id.
    const logged = [...(await this.logs()).keys()];
    this.next = Math.max(this.next, ...logged.map((id) => Number(id.slice(1)) + 1));
    const id = `p${this.next++}`;
    const handle = await this.api.startCommand(launchScript(id, command), { cwd, envs: env, stdin: true, timeoutMs: STREAM_LIMIT_MS });
    const ended = handle.wait().then(
      () => this.recordExit(id),
      async (err: unknown) => (err instanceof this.errors.CommandExitError ? this.recordExit(id) : undefined),
    );
    const entry: Entry = { id, command, startedAt: new Date(this.clock.now()).toISOString(), handle, ended, exitCode: null, signal: null, exited: false };
    this.entries.set(id, entry);
    return this.describe(entry, { totalBytes: 0, droppedBytes: 0 });
  }

  /** This instance's processes, and those an earlier instance started (they may still run in the microVM). */
  async list(): Promise<BackgroundProcess[]> {
    const logs = await this.logs();
    const mine = [...this.entries.values()].map((entry) => this.describe(entry, extentOfSegments(logs.get(entry.id) ?? [])));
    const earlier = [...logs.keys()].filter((id) => !this.entries.has(id));
    const left = await Promise.all(
      earlier.map(async (id): Promise<BackgroundProcess> => {
        const status = await this.statusOf(id);
        return {
          id,
          command: '(started by an earlier server instance)',
          startedAt: '',
          state: status === undefined ? 'running' : 'exited',
          exitCode: status?.code ?? null,
          signal: status?.signal ?? null,
          outputBytes: extentOfSegments(logs.get(id) ?? []).totalBytes,
        };
      }),
    );
    return [...left, ...mine].sort((a, b) => Number(a.id.slice(1)) - Number(b.id.slice(1)));
  }

  async read(id: string, offset: number | undefined, limitBytes: number): Promise<ProcessLogPage> {
    for (let attempt = 1; ; attempt += 1) {
      const segments = (await this.logs()).get(id);
      if (segments === undefined) this.find(id);
      const extent = extentOfSegments(segments ?? []);
      const { from, length } = pageOf(extent, offset, limitBytes);
      const bytes = await this.readRange(id, from, length);
      // A segment deleted between listing and reading (the log rotated): list again.
      if (bytes.length === length || attempt === READ_ATTEMPTS) {
        return { text: bytes.toString('utf8'), offset: from, nextOffset: from + bytes.length, ...extent };
      }
    }
  }

  async signal(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess> {
    const entry = this.find(id);
    if (!entry.exited) {
      // The marker says the status that follows was our signal (reported as exit code null, as locally).
      const number = signalNumber(signal);
      const base = `${LOG_DIR}/${id}`;
      const killer = await this.api.startCommand(`echo ${number} > ${base}.signal; kill -s ${number} -- -$(cat ${base}.pid) 2>/dev/null; true`, { timeoutMs: 15_000 });
      await killer.wait().catch(() => undefined);
      await Promise.race([entry.ended, this.clock.sleep(SIGNAL_WAIT_MS)]);
    }
    return this.describe(entry, extentOfSegments((await this.logs()).get(id) ?? []));
  }

  async writeStdin(id: string, input: string): Promise<void> {
    const entry = this.find(id);
    if (entry.exited) throw new AppError('invalid_input', `Process ${id} has exited; it reads no more input.`);
    await entry.handle.sendStdin(input);
  }

  hasRunning(): boolean {
    return [...this.entries.values()].some((entry) => !entry.exited);
  }

  private async recordExit(id: string): Promise<void> {
    const entry = this.entries.get(id);
    const status = await this.statusOf(id);
    if (entry === undefined) return;
    entry.exitCode = status?.code ?? null;
    entry.signal = status?.signal ?? null;
    entry.exited = true;
  }

  /**
   * How a finished process ended: its exit code, or (code `null`) the signal we sent when that is what ended
   * it (the shell's status 128 + its number); `undefined` while it runs. A status above 128 that no signal of
   * ours explains is reported as the exit code it is (the shell cannot tell it from a signal sent by others).
   */
  private async statusOf(id: string): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
    const read = (suffix: string): Promise<string | undefined> =>
      this.api.readFile(`${LOG_DIR}/${id}.${suffix}`).then(
        (bytes) => Buffer.from(bytes).toString().trim(),
        () => undefined,
      );
    const [status, sent] = await Promise.all([read('exit'), read('signal')]);
    if (status === undefined || !/^\d+$/.test(status)) return undefined;
    const code = Number(status);
    const signal = sent === undefined || code !== 128 + Number(sent) ? undefined : signalName(Number(sent));
    return signal === undefined ? { code, signal: null } : { code: null, signal };
  }

  /** The log segments in the sandbox, by process id. */
  private async logs(): Promise<Map<string, SegmentFile[]>> {
    return groupSegments(await this.api.listFiles(LOG_DIR, 1).catch(() => []));
  }

  /** Bytes `[from, from + length)` of the log, read inside the sandbox (base64 on stdout: no text decoding). */
  private async readRange(id: string, from: number, length: number): Promise<Buffer> {
    if (length === 0) return Buffer.alloc(0);
    const parts = segmentRanges(from, length).map((r) => `tail -c +${r.start + 1} ${LOG_DIR}/${id}.log.${r.index} 2>/dev/null | head -c ${r.length}`);
    let out = '';
    const reader = await this.api.startCommand(`{ ${parts.join('; ')}; } | base64 -w 0`, { timeoutMs: 30_000, onStdout: (text) => {
        out += text;
      },
    });
    await reader.wait().catch(() => undefined);
    return Buffer.from(out, 'base64');
  }

  private find(id: string): Entry {
    const entry = this.entries.get(id);
    if (entry === undefined) throw new AppError('not_found', `No background process "${id}" in this sandbox; manage_process with action "list" shows them.`);
    return entry;
  }

  private describe(entry: Entry, extent: LogExtent): BackgroundProcess {
    return {
      id: entry.id,
      command: entry.command,
      startedAt: entry.startedAt,
      state: entry.exited ? 'exited' : 'running',
      exitCode: entry.exitCode,
      signal: entry.signal,
      outputBytes: extent.totalBytes,
    };
  }
}

const SIGNALS: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGUSR1: 10, SIGUSR2: 12, SIGTERM: 15, SIGCONT: 18, SIGSTOP: 19 };

/** The name of Linux signal `number`, among those this server sends. */
function signalName(number: number): NodeJS.Signals | undefined {
  return (Object.keys(SIGNALS) as NodeJS.Signals[]).find((name) => SIGNALS[name] === number);
}

/** The Linux number of `signal` (the sandbox is Linux whatever this server runs on). */
function signalNumber(signal: NodeJS.Signals): number {
  const number = SIGNALS[signal];
  if (number === undefined) throw new AppError('invalid_input', `Signal ${signal} cannot be sent to a process in the sandbox.`);
  return number;
}
