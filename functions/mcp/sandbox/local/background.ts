/**
 * Background processes of a local sandbox, as `background-registry.ts` keeps them: each in its own process
 * group (inside the sandbox, beside its other processes), output to a capped log in the workspace directory
 * (which the sandbox user cannot touch), stdin kept open for `write_stdin`, and all of them killed with the
 * sandbox.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Readable, Writable } from 'node:stream';

import { SYSTEM_CLOCK } from '../../clock';
import {
  type BackgroundBackend,
  type BackgroundHandle,
  BackgroundRegistry,
  type ExitStatus,
  parseStartedText,
  type StartedRecord,
  toStartedText,
} from '../background-registry';
import type { SegmentFile } from '../log-segments';
import { ProcessLog, segmentsIn } from '../process-log';
import type { ProcessLogPage } from '../types';
import { toSpawnError } from './process-group';

/** Output waiting to be written to a log past which the process is not read until the disk catches up. */
const LOG_QUEUE_BYTES = 1024 * 1024;

/** What this uses of a process the sandbox's supervisor started (`SandboxProcess`). */
export interface BackgroundChild {
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable | null;
  signal(signal: NodeJS.Signals): void;
  once(event: 'spawn', listener: () => void): unknown;
  once(event: 'error', listener: (err: Error) => void): unknown;
  once(event: 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  /** True once it exited (its input goes nowhere). */
  readonly ended: boolean;
}

/** Starts a process in the sandbox, given a stdin to keep open. */
export type SpawnBackground = () => BackgroundChild;

/** A local sandbox's background processes. */
export type LocalBackgroundProcesses = BackgroundRegistry<SpawnBackground, LocalProcess>;

/**
 * The background processes of a sandbox whose logs live in `logDir`. They run in real time whatever clock the
 * server is given, so their start dates and `signal`'s wait are the system clock's.
 */
export function createLocalBackgroundProcesses(logDir: string): LocalBackgroundProcesses {
  return new BackgroundRegistry(new LocalBackground(logDir), SYSTEM_CLOCK);
}

/** A process this server started, its output written by this server into `log`. */
interface LocalProcess extends BackgroundHandle {
  readonly log: ProcessLog;
}

class LocalBackground implements BackgroundBackend<SpawnBackground, LocalProcess> {
  constructor(private readonly logDir: string) {}

  logs(): Promise<Map<string, SegmentFile[]>> {
    return segmentsIn(this.logDir);
  }

  async launch(id: string, _command: string, spawn: SpawnBackground, started: StartedRecord): Promise<LocalProcess> {
    await mkdir(this.logDir, { recursive: true, mode: 0o700 });
    // What a later instance lists of it, once this one is gone (its sandbox woken after a sleep, say).
    await writeFile(join(this.logDir, `${id}.cmd`), toStartedText(started), { mode: 0o600 });
    const log = await ProcessLog.create(this.logDir, id);
    const child = spawn();
    // Into the log with back-pressure: while LOG_QUEUE_BYTES wait for the disk the process's streams are not
    // read, its supervisor stops acknowledging, and the process itself waits (supervisor.ts has the window).
    // Chunks go in as they arrive; only while the disk lags can one stream's run ahead of the other's waiting ones.
    const sink = new Writable({
      highWaterMark: LOG_QUEUE_BYTES,
      write: (chunk: Buffer, _enc, done) => void log.append(chunk).then(() => done()),
    });
    child.stdout.pipe(sink, { end: false });
    child.stderr.pipe(sink, { end: false });
    child.stdin?.on('error', () => undefined);
    // Ended only once everything it wrote is in the log: its byte count is final when it says "exited".
    const ended = new Promise<ExitStatus>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal: code === null ? signal : null })),
    ).then(async (status) => {
      // Everything it wrote goes into the log first: the rest of its streams, then what the sink still holds.
      await Promise.all(
        [child.stdout, child.stderr].map((stream) =>
          stream.readableEnded ? undefined : new Promise((resolve) => stream.once('end', resolve)),
        ),
      );
      await new Promise<void>((resolve) => sink.end(() => resolve()));
      await log.flushed();
      return status;
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(toSpawnError(err)));
    });
    return {
      log,
      ended,
      outputBytes: () => log.totalBytes,
      signal: async (signal) => {
        child.signal(signal);
      },
      writeStdin: async (input) => {
        const stdin = child.stdin;
        if (stdin === null || stdin.destroyed || child.ended) return false;
        await new Promise<void>((resolve) => stdin.write(input, () => resolve()));
        // The write also ends when the process does: then not all of it went in.
        return !child.ended;
      },
      stdinBacklog: () => child.stdin?.writableLength ?? 0,
    };
  }

  async readLog(
    id: string,
    handle: LocalProcess | undefined,
    offset: number | undefined,
    limitBytes: number,
  ): Promise<ProcessLogPage | undefined> {
    // The log of a process an earlier instance started is still here.
    const log = handle?.log ?? (await ProcessLog.open(this.logDir, id));
    return log?.read(offset, limitBytes);
  }

  /** Processes an earlier instance started ended with it; how is not known. */
  async earlierStatus(): Promise<ExitStatus | undefined> {
    return { code: null, signal: null };
  }

  async earlierStart(id: string): Promise<StartedRecord | undefined> {
    const text = await readFile(join(this.logDir, `${id}.cmd`), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : parseStartedText(text);
  }
}
