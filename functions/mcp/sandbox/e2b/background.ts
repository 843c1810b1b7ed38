/**
 * Background processes in an E2B sandbox: started through envd in the background, output to a log file
 * inside the microVM (capped: the first LOG_CAP_BYTES are kept, the rest is read and dropped, so the
 * process never blocks), stopped with its whole process tree from inside the sandbox.
 */
import { AppError } from '../../errors';
import type { BackgroundProcess, ProcessLogPage } from '../types';
import type { E2BErrorClasses, E2BSandboxApi } from './sdk';
import { shellQuote } from './shell';

/** Output kept per background process. */
const LOG_CAP_BYTES = 8 * 1024 * 1024;
/** Where the logs live inside the sandbox. */
const LOG_DIR = '/tmp/.mcp-processes';
/** Background commands stream for as long as this (the process itself is not limited). */
const STREAM_LIMIT_MS = 24 * 3600 * 1000;

type Handle = Awaited<ReturnType<E2BSandboxApi['startCommand']>>;

interface Entry {
  readonly id: string;
  readonly command: string;
  readonly startedAt: string;
  readonly handle: Handle;
  exitCode: number | null;
  exited: boolean;
}

export class E2BBackgroundProcesses {
  private readonly entries = new Map<string, Entry>();
  private next = 1;

  constructor(
    private readonly api: E2BSandboxApi,
    private readonly errors: E2BErrorClasses,
  ) {}

  async start(command: string, cwd: string, env: Record<string, string> | undefined): Promise<BackgroundProcess> {
    // Ids continue after those an earlier instance started in this sandbox.
    this.next = Math.max(this.next, ...(await this.loggedIds()).map((id) => Number(id.slice(1)) + 1));
    const id = `p${this.next++}`;
    const log = `${LOG_DIR}/${id}.log`;
    const script =
      `mkdir -p ${LOG_DIR} && { bash -c ${shellQuote(command)} 2>&1; echo $? > ${log}.exit; } ` +
      `| { head -c ${LOG_CAP_BYTES} > ${log}; cat > /dev/null; }`;
    const handle = await this.api.startCommand(script, { cwd, envs: env, stdin: true, timeoutMs: STREAM_LIMIT_MS });
    const entry: Entry = { id, command, startedAt: new Date().toISOString(), handle, exitCode: null, exited: false };
    this.entries.set(id, entry);
    void handle.wait().then(
      async () => this.recordExit(entry),
      async (err: unknown) => (err instanceof this.errors.CommandExitError ? this.recordExit(entry) : undefined),
    );
    return this.describe(entry);
  }

  /** This instance's processes, and those an earlier instance started (they may still run in the microVM). */
  async list(): Promise<BackgroundProcess[]> {
    const mine = [...this.entries.values()].map((entry) => this.describe(entry));
    const earlier = (await this.loggedIds()).filter((id) => !this.entries.has(id));
    const left = await Promise.all(
      earlier.map(async (id): Promise<BackgroundProcess> => {
        const code = await this.exitCodeOf(id);
        return { id, command: '(started by an earlier server instance)', startedAt: '', state: code === undefined ? 'running' : 'exited', exitCode: code ?? null, outputBytes: 0 };
      }),
    );
    return [...left, ...mine].sort((a, b) => Number(a.id.slice(1)) - Number(b.id.slice(1)));
  }

  async read(id: string, offset: number | undefined, limitBytes: number): Promise<ProcessLogPage> {
    if (!/^p\d+$/.test(id)) this.find(id);
    const file = await this.api.readFile(`${LOG_DIR}/${id}.log`).catch(() => undefined);
    if (file === undefined && !this.entries.has(id)) this.find(id);
    const data = Buffer.from(file ?? new Uint8Array());
    const total = data.length;
    const from = Math.max(0, Math.min(total, offset ?? total - limitBytes));
    const slice = data.subarray(from, from + limitBytes);
    return { text: slice.toString('utf8'), offset: from, nextOffset: from + slice.length, totalBytes: total, droppedBytes: 0 };
  }

  async signal(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess> {
    const entry = this.find(id);
    if (!entry.exited) {
      // Children first, then the process: envd knows only the top one.
      const tree = `t(){ for c in $(pgrep -P "$1"); do t "$c"; done; kill -s ${signal.replace(/^SIG/, '')} "$1" 2>/dev/null; }; t ${entry.handle.pid}; true`;
      const killer = await this.api.startCommand(tree, { timeoutMs: 15_000 });
      await killer.wait().catch(() => undefined);
    }
    return this.describe(entry);
  }

  async writeStdin(id: string, input: string): Promise<void> {
    const entry = this.find(id);
    if (entry.exited) throw new AppError('invalid_input', `Process ${id} has exited; it reads no more input.`);
    await entry.handle.sendStdin(input);
  }

  hasRunning(): boolean {
    return [...this.entries.values()].some((entry) => !entry.exited);
  }

  private async recordExit(entry: Entry): Promise<void> {
    entry.exited = true;
    entry.exitCode = (await this.exitCodeOf(entry.id)) ?? null;
  }

  /** The exit code a finished process left, `undefined` while it runs. */
  private async exitCodeOf(id: string): Promise<number | undefined> {
    const text = await this.api.readFile(`${LOG_DIR}/${id}.log.exit`).then(
      (bytes) => Buffer.from(bytes).toString().trim(),
      () => undefined,
    );
    return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
  }

  private async loggedIds(): Promise<string[]> {
    const entries = await this.api.listFiles(LOG_DIR, 1).catch(() => []);
    return entries.map((entry) => /^(p\d+)\.log$/.exec(entry.name)?.[1]).filter((id): id is string => id !== undefined);
  }

  private find(id: string): Entry {
    const entry = this.entries.get(id);
    if (entry === undefined) throw new AppError('not_found', `No background process "${id}" in this sandbox; manage_process with action "list" shows them.`);
    return entry;
  }

  private describe(entry: Entry): BackgroundProcess {
    return { id: entry.id, command: entry.command, startedAt: entry.startedAt, state: entry.exited ? 'exited' : 'running', exitCode: entry.exitCode, outputBytes: 0 };
  }
}
