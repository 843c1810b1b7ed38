/**
 * Background processes of a local sandbox, as `background-registry.ts` keeps them: each in its own process
 * group (inside the sandbox, beside its other processes), output to a capped log in the workspace directory
 * (which the sandbox user cannot touch), stdin kept open for `write_stdin`, and all of them killed with the
 * sandbox.
 */
import { mkdir } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';

import { SYSTEM_CLOCK } from '../../clock';
import { type BackgroundBackend, type BackgroundHandle, BackgroundRegistry, type ExitStatus } from '../background-registry';
import type { SegmentFile } from '../log-segments';
import { ProcessLog, segmentsIn } from '../process-log';
import type { ProcessLogPage } from '../types';
import { toSpawnError } from './process-group';

/** What this uses of a process the sandbox's supervisor started (`SandboxProcess`). */
export interface BackgroundChild {
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable | null;
  signal(signal: NodeJS.Signals): void;
  once(event: 'spawn', listener: () => void): unknown;
  once(event: 'error', listener: (err: Error) => void): unknown;
  once(event: 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
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

  async launch(id: string, _command: string, spawn: SpawnBackground): Promise<LocalProcess> {
    await mkdir(this.logDir, { recursive: true, mode: 0o700 });
    const log = ProcessLog.create(this.logDir, id);
    const child = spawn();
    child.stdout.on('data', (chunk: Buffer) => void log.append(chunk));
    child.stderr.on('data', (chunk: Buffer) => void log.append(chunk));
    child.stdin?.on('error', () => undefined);
    // Ended only once everything it wrote is in the log: its byte count is final when it says "exited".
    const ended = new Promise<ExitStatus>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal: code === null ? signal : null })),
    ).then(async (status) => {
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
        if (stdin === null || stdin.destroyed) return false;
        await new Promise<void>((resolve) => stdin.write(input, () => resolve()));
        return true;
      },
    };
  }

  async readLog(id: string, handle: LocalProcess | undefined, offset: number | undefined, limitBytes: number): Promise<ProcessLogPage | undefined> {
    // The log of a process an earlier instance started is still here.
    const log = handle?.log ?? (await ProcessLog.open(this.logDir, id));
    return log?.read(offset, limitBytes);
  }

  /** Processes an earlier instance started ended with it; how is not known. */
  async earlierStatus(): Promise<ExitStatus | undefined> {
    return { code: null, signal: null };
  }
}
