/**
 * Background processes of a local sandbox: each in its own process group (inside the sandbox, beside its
 * other processes), output to a capped log in the workspace directory (which the sandbox user cannot touch),
 * stdin kept open for `write_stdin`, and all of them killed with the sandbox.
 */
import { mkdir } from 'node:fs/promises';

import { AppError } from '../../errors';
import { extentOfSegments } from '../log-segments';
import { ProcessLog, segmentsIn } from '../process-log';
import type { BackgroundProcess, ProcessLogPage } from '../types';
import { toSpawnError } from './process-group';
import type { SandboxProcess } from './supervisor';

/** How long `signal` waits to report the process gone. */
const SIGNAL_WAIT_MS = 2_000;

interface Entry {
  readonly id: string;
  readonly command: string;
  readonly startedAt: string;
  readonly child: SandboxProcess;
  readonly log: ProcessLog;
  exitCode: number | null;
  /** The signal that ended it, once exited (null when it exited by itself). */
  signal: NodeJS.Signals | null;
  /** True once the process exited and all its output is in the log. */
  exited: boolean;
  /** Settles when `exited` turns true. */
  readonly done: Promise<void>;
}

export class LocalBackgroundProcesses {
  private readonly entries = new Map<string, Entry>();
  private next = 1;

  constructor(private readonly logDir: string) {}

  /** Starts `command` with `spawn` (given a stdin to keep open). */
  async start(command: string, spawn: () => SandboxProcess): Promise<BackgroundProcess> {
    await mkdir(this.logDir, { recursive: true, mode: 0o700 });
    // Ids continue after those an earlier instance left logs for. Read `next` only after the await: starts
    // running side by side must each get their own id.
    const logged = await this.loggedIds();
    this.next = Math.max(this.next, ...logged.map((id) => Number(id.slice(1)) + 1));
    const id = `p${this.next++}`;
    const log = ProcessLog.create(this.logDir, id);
    const child = spawn();
    child.stdout.on('data', (chunk: Buffer) => void log.append(chunk));
    child.stderr.on('data', (chunk: Buffer) => void log.append(chunk));
    child.stdin?.on('error', () => undefined);
    // Exited only once everything it wrote is in the log: its byte count is final when it says "exited".
    const done = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (code, signal) => resolve([code, signal]))).then(async ([code, signal]) => {
      await log.flushed();
      entry.exitCode = code;
      entry.signal = code === null ? signal : null;
      entry.exited = true;
    });
    const entry: Entry = { id, command, startedAt: new Date().toISOString(), child, log, exitCode: null, signal: null, exited: false, done };
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(toSpawnError(err)));
    });
    this.entries.set(id, entry);
    return this.describe(entry);
  }

  /** This instance's processes, and those an earlier instance left logs for (which ended with it). */
  async list(): Promise<BackgroundProcess[]> {
    const mine = [...this.entries.values()].map((entry) => this.describe(entry));
    // One directory read for all of them: each earlier log's size is its segments' extent.
    const logs = await segmentsIn(this.logDir);
    const left = [...logs.keys()]
      .filter((id) => !this.entries.has(id))
      .map((id) => ({
        id,
        command: '(started by an earlier server instance)',
        startedAt: '',
        state: 'exited' as const,
        exitCode: null,
        signal: null,
        outputBytes: extentOfSegments(logs.get(id) ?? []).totalBytes,
      }));
    return [...left, ...mine].sort((a, b) => Number(a.id.slice(1)) - Number(b.id.slice(1)));
  }

  async read(id: string, offset: number | undefined, limitBytes: number): Promise<ProcessLogPage> {
    const entry = this.entries.get(id);
    if (entry !== undefined) return entry.log.read(offset, limitBytes);
    // The log of a process an earlier instance started is still here.
    const left = /^p\d+$/.test(id) ? await ProcessLog.open(this.logDir, id) : undefined;
    return (left ?? this.find(id).log).read(offset, limitBytes);
  }

  private async loggedIds(): Promise<string[]> {
    return [...(await segmentsIn(this.logDir)).keys()];
  }

  async signal(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess> {
    const entry = this.find(id);
    if (!entry.exited) {
      entry.child.signal(signal);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([entry.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, SIGNAL_WAIT_MS)))]);
      clearTimeout(timer);
    }
    return this.describe(entry);
  }

  async writeStdin(id: string, input: string): Promise<void> {
    const entry = this.find(id);
    if (entry.exited || entry.child.stdin === null || entry.child.stdin.destroyed) {
      throw new AppError('invalid_input', `Process ${id} has exited; it reads no more input.`);
    }
    await new Promise<void>((resolve) => entry.child.stdin?.write(input, () => resolve()));
  }

  hasRunning(): boolean {
    return [...this.entries.values()].some((entry) => !entry.exited);
  }

  /** Kills every background process group (the sandbox is ending or letting go). */
  stopAll(): void {
    for (const entry of this.entries.values()) {
      if (!entry.exited) entry.child.signal('SIGKILL');
    }
  }

  private find(id: string): Entry {
    const entry = this.entries.get(id);
    if (entry === undefined) throw new AppError('not_found', `No background process "${id}" in this sandbox; manage_process with action "list" shows them.`);
    return entry;
  }

  private describe(entry: Entry): BackgroundProcess {
    return {
      id: entry.id,
      command: entry.command,
      startedAt: entry.startedAt,
      state: entry.exited ? 'exited' : 'running',
      exitCode: entry.exitCode,
      signal: entry.signal,
      outputBytes: entry.log.totalBytes,
    };
  }
}
