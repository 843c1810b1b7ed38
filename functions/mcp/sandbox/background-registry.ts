/**
 * The background processes of one sandbox, whatever the backend: the table of them, their ids (`p1`, `p2`, …,
 * continuing after those whose logs an earlier server instance left), what `list`, `signal` and `write_stdin`
 * report, and the rule that a process is "exited" only once all its output is in its log. The output is kept
 * as `log-segments.ts` says (the tail, true byte counts); how a process is started, signalled and fed, and
 * where its log lives, is the backend's (`BackgroundBackend`).
 */
import type { Clock } from '../clock';
import { AppError } from '../errors';
import { extentOfSegments, type SegmentFile } from './log-segments';
import type { BackgroundProcess, ProcessLogPage, StdinWrite } from './types';

/** How long `signal` waits to report the process gone. */
const SIGNAL_WAIT_MS = 2_000;
/** How long `writeStdin` waits for the process to read its input before saying the rest is pending. */
const STDIN_WAIT_MS = 2_000;
/** The shape of every id; nothing else names a log. */
const PROCESS_ID = /^p\d+$/;

/** How a process ended: its exit code, or (code `null`) the signal that ended it; both `null` when not known. */
export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** One process a backend started: how it is observed, signalled and fed. */
export interface BackgroundHandle {
  /**
   * Settles once the process has exited and all its output is in its log, with how it ended; or with
   * `undefined` when its end cannot be observed (it is then reported running).
   */
  readonly ended: Promise<ExitStatus | undefined>;
  /** Bytes of output so far, where this server writes the log itself; `undefined`: its segments tell. */
  outputBytes(): number | undefined;
  /** Sends `signal` to the process and everything it started. */
  signal(signal: NodeJS.Signals): Promise<void>;
  /** Writes to its stdin: settles once all of it went in (true) or the process reads no more (false). */
  writeStdin(input: string): Promise<boolean>;
  /** Bytes of input written earlier that the process has not taken yet (0 when none wait). */
  stdinBacklog(): number;
}

/** What a backend does for the registry. `How` is what starting a process takes beside its command. */
export interface BackgroundBackend<How, Handle extends BackgroundHandle> {
  /** The log segments there are, by process id (this instance's and an earlier one's). */
  logs(): Promise<Map<string, SegmentFile[]>>;
  /**
   * Starts `command` as process `id`, its output into log `id`; keeps `started` (its command, at most
   * STARTED_COMMAND_CHARS, and when) beside the log for a later instance to list.
   */
  launch(id: string, command: string, how: How, started: StartedRecord): Promise<Handle>;
  /** What `launch` kept of process `id`, started by an earlier instance; `undefined` when nothing was kept. */
  earlierStart(id: string): Promise<StartedRecord | undefined>;
  /** A page of log `id` (`handle`: this instance started it); `undefined` when there is no such log. */
  readLog(
    id: string,
    handle: Handle | undefined,
    offset: number | undefined,
    limitBytes: number,
  ): Promise<ProcessLogPage | undefined>;
  /** How a process an earlier instance started stands: how it ended, or `undefined` while it runs. */
  earlierStatus(id: string): Promise<ExitStatus | undefined>;
}

/** What is kept of a process beside its log: its command (the start of it) and when it started. */
export interface StartedRecord {
  readonly command: string;
  /** ISO 8601. */
  readonly startedAt: string;
}

/** The most of a command kept beside its log. */
export const STARTED_COMMAND_CHARS = 1024;

/** A started record as the file beside the log holds it: the time, a newline, the command. */
export function toStartedText({ command, startedAt }: StartedRecord): string {
  return `${startedAt}\n${command.slice(0, STARTED_COMMAND_CHARS)}`;
}

/** The started record in `text`, if it is one. */
export function parseStartedText(text: string): StartedRecord | undefined {
  const newline = text.indexOf('\n');
  const startedAt = text.slice(0, newline);
  if (newline < 0 || !/^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(startedAt)) return undefined;
  return { startedAt, command: text.slice(newline + 1, newline + 1 + STARTED_COMMAND_CHARS) };
}

interface Entry<Handle> {
  readonly id: string;
  readonly command: string;
  readonly startedAt: string;
  readonly handle: Handle;
  /** Set once the process has exited (and all its output is in the log). */
  status: ExitStatus | undefined;
  /** Settles when the handle's `ended` does. */
  readonly done: Promise<void>;
}

/** A sandbox's background processes over `backend`; `clock` dates them and times `signal`'s wait. */
export class BackgroundRegistry<How, Handle extends BackgroundHandle> {
  private readonly entries = new Map<string, Entry<Handle>>();
  private next = 1;

  constructor(
    private readonly backend: BackgroundBackend<How, Handle>,
    private readonly clock: Clock,
  ) {}

  /** Starts `command` in the background (`how`: what the backend needs beside it). */
  async start(command: string, how: How): Promise<BackgroundProcess> {
    // Ids continue after those an earlier instance left logs for. Read `next` only after the await: starts
    // running side by side must each get their own id.
    const logged = [...(await this.backend.logs()).keys()];
    this.next = Math.max(this.next, ...logged.map((id) => idNumber(id) + 1));
    const id = `p${this.next++}`;
    const startedAt = new Date(this.clock.now()).toISOString();
    const handle = await this.backend.launch(id, command, how, { command, startedAt });
    const entry: Entry<Handle> = {
      id,
      command,
      startedAt,
      handle,
      status: undefined,
      done: handle.ended.then((status) => {
        if (status !== undefined) entry.status = status;
      }),
    };
    this.entries.set(id, entry);
    return this.describe(entry, handle.outputBytes() ?? 0);
  }

  /** This instance's processes, and those an earlier instance started, by id. */
  async list(): Promise<BackgroundProcess[]> {
    // One listing for all of them: a log's size is its segments' extent.
    const logs = await this.backend.logs();
    const bytesIn = (id: string): number => extentOfSegments(logs.get(id) ?? []).totalBytes;
    const mine = [...this.entries.values()].map((entry) =>
      this.describe(entry, entry.handle.outputBytes() ?? bytesIn(entry.id)),
    );
    const earlier = [...logs.keys()].filter((id) => !this.entries.has(id));
    const left = await Promise.all(
      earlier.map(async (id): Promise<BackgroundProcess> => {
        const [status, started] = await Promise.all([
          this.backend.earlierStatus(id),
          this.backend.earlierStart(id).catch(() => undefined),
        ]);
        return {
          id,
          command: started?.command ?? '(started by an earlier server instance)',
          startedAt: started?.startedAt ?? '',
          state: status === undefined ? 'running' : 'exited',
          exitCode: status?.code ?? null,
          signal: status?.signal ?? null,
          outputBytes: bytesIn(id),
        };
      }),
    );
    return [...left, ...mine].sort((a, b) => idNumber(a.id) - idNumber(b.id));
  }

  /** Reads a log: from absolute `offset` on, or (without one) its last `limitBytes`. */
  async read(id: string, offset: number | undefined, limitBytes: number): Promise<ProcessLogPage> {
    const entry = this.entries.get(id);
    // The log of a process an earlier instance started is read too.
    const page = PROCESS_ID.test(id) ? await this.backend.readLog(id, entry?.handle, offset, limitBytes) : undefined;
    if (page === undefined) throw notFound(id);
    return page;
  }

  /** Sends `signal` and waits a little for the process to go, to report how it ended. */
  async signal(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess> {
    const entry = this.find(id);
    if (entry.status === undefined) {
      await entry.handle.signal(signal);
      await Promise.race([entry.done, this.clock.sleep(SIGNAL_WAIT_MS)]);
    }
    const counted = entry.handle.outputBytes();
    return this.describe(entry, counted ?? extentOfSegments((await this.backend.logs()).get(id) ?? []).totalBytes);
  }

  /**
   * Writes `input` and waits a little for the process to take it. Refused while earlier input still waits: a
   * process that reads nothing makes the server hold one input for it, never one per call.
   */
  async writeStdin(id: string, input: string): Promise<StdinWrite> {
    const entry = this.find(id);
    const exited = (): AppError => new AppError('invalid_input', `Process ${id} has exited; it reads no more input.`);
    if (entry.status !== undefined) throw exited();
    const waiting = entry.handle.stdinBacklog();
    if (waiting > 0) {
      throw new AppError(
        'invalid_input',
        `Process ${id} has not read the ${waiting} bytes of input written before yet, so nothing more was ` +
          'written; check its logs, and write again once it has read them.',
      );
    }
    const written = entry.handle.writeStdin(input);
    const outcome = await Promise.race([written, this.clock.sleep(STDIN_WAIT_MS).then(() => 'waiting' as const)]);
    if (outcome === 'waiting') return { state: 'pending', pendingBytes: entry.handle.stdinBacklog() };
    if (!outcome || entry.status !== undefined) throw exited();
    return { state: 'written' };
  }

  hasRunning(): boolean {
    return [...this.entries.values()].some((entry) => entry.status === undefined);
  }

  /** Kills every process still running (the sandbox is ending or letting go). */
  stopAll(): void {
    for (const entry of this.entries.values()) {
      if (entry.status === undefined) void entry.handle.signal('SIGKILL').catch(() => undefined);
    }
  }

  private find(id: string): Entry<Handle> {
    const entry = this.entries.get(id);
    if (entry === undefined) throw notFound(id);
    return entry;
  }

  private describe(entry: Entry<Handle>, outputBytes: number): BackgroundProcess {
    return {
      id: entry.id,
      command: entry.command,
      startedAt: entry.startedAt,
      state: entry.status === undefined ? 'running' : 'exited',
      exitCode: entry.status?.code ?? null,
      signal: entry.status?.signal ?? null,
      outputBytes,
    };
  }
}

function idNumber(id: string): number {
  return Number(id.slice(1));
}

function notFound(id: string): AppError {
  return new AppError(
    'not_found',
    `No background process "${id}" in this sandbox; manage_process with action "list" shows them.`,
  );
}
