/** One session's E2B sandbox behind the Sandbox interface: commands, code, files, and the lease. */
import { posix } from 'node:path';

import type { Clock } from '../../clock';
import { AppError, isAppError } from '../../errors';
import { CodeResults } from '../code-results';
import type { SleepState } from '../records';
import { RunToCompletion } from '../run-to-completion';
import type {
  BackgroundProcess,
  CodeError,
  FileSource,
  ListFilesRequest,
  ListFilesResult,
  NativeFileUrl,
  PreviewInfo,
  ProcessLogPage,
  ReadFileResult,
  ReceivedFile,
  ReceiveFileRequest,
  RunCodeRequest,
  RunCodeResult,
  RunCommandRequest,
  RunCommandResult,
  Sandbox,
  SandboxInfo,
  SleepMode,
  StartBackgroundRequest,
  StdinWrite,
} from '../types';
import { createE2BBackgroundProcesses, type E2BBackgroundProcesses } from './background';
import { saveOpenFigures } from './charts';
import { toE2BAppError } from './errors';
import { openE2BFile, receiveE2BFile } from './file-streams';
import { listE2BFiles, readE2BFile, writeE2BFile } from './files';
import { Lease, type LeaseTerms } from './lease';
import { commandBusyMs, runE2BCommand } from './run-command';
import type { E2BErrorClasses, E2BSandboxApi } from './sdk';

/** The working directory of E2B's templates. */
export const E2B_WORKDIR = '/home/user';
/**
 * Kills what running cells started, then interrupts the kernels (SIGINT, as Jupyter does). The pattern is
 * written `ipykernel_launche[r]` so that it does not match the shell running this very script.
 */
const INTERRUPT_KERNELS =
  't(){ for c in $(pgrep -P "$1"); do t "$c"; kill -KILL "$c" 2>/dev/null; done; }; ' +
  'for k in $(pgrep -f \'ipykernel_launche[r]\'); do t "$k"; kill -INT "$k" 2>/dev/null; done; true';
export interface E2BSandboxOptions {
  api: E2BSandboxApi;
  errors: E2BErrorClasses;
  /** E2B_TEMPLATE, for messages. */
  template: string;
  /** For scrubbing SDK messages. */
  apiKey: string | undefined;
  /** The lease terms (the session idle TTL); the sandbox was created or connected with `lease.lengthMs`. */
  lease: LeaseTerms;
  /** For a sandbox created on a first lease (`lease`): the idle TTL's terms, taken on `confirmLease()`. */
  confirmedLease?: LeaseTerms;
  /** For a sandbox found and connected to: its lease end before this instance connected. */
  priorLeaseEnd?: Date;
  maxOutputBytes: number;
  /** How the service returns charts (E2B_CHARTS). */
  charts: 'inline' | 'files';
  clock: Clock;
  /** The sandbox tag of its key (the record catalog's name for it). */
  tag: string;
  /** Set when it was paused and this connection woke it. */
  woke?: SleepState;
  /** How it sleeps, and what keeps its record. */
  sleep: E2BSleepHooks;
}

/** How one E2B sandbox sleeps, and what is told of its life. */
export interface E2BSleepHooks {
  /** How it was created to sleep (`off`: it is killed when idle). */
  readonly mode: SleepMode;
  /** Pauses it, with its memory or its files only; false when it was paused already. */
  pause(keepMemory: boolean): Promise<boolean>;
  /** It went to sleep. */
  onSleep?(state: SleepState): Promise<void>;
  /** Its lease was renewed (it is in use). */
  onUsed?(): void;
  /** It was killed. */
  onKill?(): Promise<void>;
}

/** A sandbox on E2B. */
export class E2BSandbox implements Sandbox {
  readonly id: string;
  readonly tag: string;
  readonly woke?: SleepState;
  private readonly createdAt = new Date().toISOString();
  private gone = false;
  private killed = false;
  private readonly lease: Lease;

  private readonly background: E2BBackgroundProcesses;

  constructor(private readonly options: E2BSandboxOptions) {
    this.id = options.api.sandboxId;
    this.tag = options.tag;
    if (options.woke !== undefined) this.woke = options.woke;
    const renew = async (ms: number): Promise<void> => {
      await options.api.setTimeout(ms);
      options.sleep.onUsed?.();
    };
    this.lease = new Lease(options.lease, options.clock, renew, options.priorLeaseEnd);
    this.background = createE2BBackgroundProcesses(options.api, options.errors, options.clock);
  }

  confirmLease(): void {
    if (this.options.confirmedLease !== undefined) this.lease.lengthen(this.options.confirmedLease);
  }

  startBackground(req: StartBackgroundRequest): Promise<BackgroundProcess> {
    const cwd = this.resolve(req.cwd ?? '.');
    return this.call(`starting a background process in ${cwd}`, () =>
      this.background.start(req.command, { cwd, env: req.env }),
    );
  }

  listBackground(): Promise<BackgroundProcess[]> {
    return this.call('listing background processes', () => this.background.list());
  }

  readBackgroundLog(id: string, options: { offset?: number; limitBytes: number }): Promise<ProcessLogPage> {
    return this.call(`reading the log of ${id}`, () => this.background.read(id, options.offset, options.limitBytes));
  }

  signalBackground(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess> {
    return this.call(`signalling ${id}`, () => this.background.signal(id, signal));
  }

  writeBackgroundStdin(id: string, input: string): Promise<StdinWrite> {
    return this.call(`writing to ${id}`, () => this.background.writeStdin(id, input));
  }

  hasRunningBackground(): boolean {
    return !this.gone && this.background.hasRunning();
  }

  info(): SandboxInfo {
    return {
      id: this.id,
      backend: 'e2b',
      workdir: E2B_WORKDIR,
      isolation: 'e2b-microvm',
      network: 'enabled',
      createdAt: this.createdAt,
    };
  }

  isGone(): boolean {
    return this.gone;
  }

  /** The lease is renewed on use by every instance, so its end tells whether another one used the sandbox. */
  async lastUseElsewhereMs(): Promise<number | undefined> {
    if (this.gone) return undefined;
    const end = await this.options.api.leaseEnd().catch(() => undefined);
    return end === undefined ? undefined : this.lease.lastUseElsewhereMs(end);
  }

  async runCommand(req: RunCommandRequest): Promise<RunCommandResult> {
    const cwd = this.resolve(req.cwd ?? '.');
    return this.call(
      `running a command in ${cwd}`,
      () => runE2BCommand(this.options, req, cwd),
      commandBusyMs(req.timeoutMs),
    );
  }

  async runCode(req: RunCodeRequest): Promise<RunCodeResult> {
    const { api, clock, maxOutputBytes } = this.options;
    const run = new RunToCompletion({ maxOutputBytes, onOutput: req.onOutput, now: () => clock.now() });
    const partial = (timedOut: boolean, error: CodeError | null, results = new CodeResults()): RunCodeResult => ({
      ...run.output(),
      results: results.results,
      ...(results.omitted === undefined ? {} : { omittedResults: results.omitted }),
      error,
      timedOut,
      cancelled: run.cancelled,
      stateLost: false,
      durationMs: run.elapsedMs(),
    });
    // Cancel and timeout = Jupyter's interrupt: what the cell started is killed, then the kernel gets SIGINT
    // (its state stays). Without it the cell would run on and hold up the next call.
    const interrupt = (): Promise<unknown> =>
      api
        .startCommand(INTERRUPT_KERNELS, { timeoutMs: 15_000 })
        .then((h) => h.wait())
        .catch(() => undefined);
    // The execution's own deadline is the interpreter's (execute.ts): only a cancel is armed here.
    run.arm({ signal: req.signal, stop: () => void interrupt() });
    try {
      return await this.call(
        `running ${req.language} code`,
        async () => {
          const { error, results } = await this.execute(req, run);
          return partial(false, error, results);
        },
        req.timeoutMs,
      );
    } catch (err: unknown) {
      if (run.cancelled) return partial(false, null);
      if (isAppError(err, 'sandbox_timeout')) {
        await interrupt();
        return partial(true, null);
      }
      const noInterpreter = isAppError(err, 'not_found') || isAppError(err, 'sandbox_gone');
      if (noInterpreter && (await api.exists('/').catch(() => false))) {
        // The sandbox answers, but nothing listens for code: the template has no interpreter.
        this.gone = false;
        throw new AppError('sandbox_error', noInterpreterMessage(this.options.template), { cause: err });
      }
      throw err;
    } finally {
      run.disarm();
    }
  }

  /** Sends the code to the interpreter, its output into `run`; with E2B_CHARTS=files, Python's open figures too. */
  private async execute(
    req: RunCodeRequest,
    run: RunToCompletion,
  ): Promise<{ error: CodeError | null; results: CodeResults }> {
    const { api } = this.options;
    const results = new CodeResults();
    const execution = await api.runCode(req.code, {
      language: req.language,
      envs: req.env,
      timeoutMs: req.timeoutMs,
      ...run.callbacks(),
      onResult: (result) => {
        if (result.png !== undefined) results.add({ type: 'image', mimeType: 'image/png', data: result.png });
        else if (result.jpeg !== undefined) results.add({ type: 'image', mimeType: 'image/jpeg', data: result.jpeg });
        else if (result.text !== undefined) results.add({ type: 'text', text: result.text });
      },
      // An answer line too long to hold (output or a result): counted with the results left out.
      onDropped: (bytes) => results.omit(bytes),
    });
    if (this.options.charts === 'files' && req.language === 'python' && !run.cancelled)
      for (const chart of await saveOpenFigures(api)) results.add(chart);
    return { error: execution.error ?? null, results };
  }

  async readFile(path: string, maxBytes: number): Promise<ReadFileResult> {
    const target = this.resolve(path);
    return this.call(`reading ${target}`, () => readE2BFile(this.options.api, target, maxBytes));
  }

  async writeFile(path: string, data: Buffer): Promise<{ path: string; created: boolean }> {
    const target = this.resolve(path);
    return this.call(`writing ${target}`, () => writeE2BFile(this.options.api, target, data));
  }

  async listFiles(req: ListFilesRequest): Promise<ListFilesResult> {
    const target = this.resolve(req.path);
    return this.call(`listing ${target}`, () => listE2BFiles(this.options.api, target, req));
  }

  async openFile(path: string): Promise<FileSource> {
    const target = this.resolve(path);
    return this.call(`opening ${target}`, () => openE2BFile(this.options.api, target));
  }

  async receiveFile(req: ReceiveFileRequest): Promise<ReceivedFile> {
    const target = this.resolve(req.path);
    return this.call(`writing ${target}`, () => receiveE2BFile(this.options.api, target, req));
  }

  async nativeFileUrl(path: string, mode: 'download' | 'upload', expiresS: number): Promise<NativeFileUrl | undefined> {
    const target = this.resolve(path);
    const url = await this.call('signing a file URL', () => this.options.api.signedFileUrl(target, mode, expiresS));
    if (url === undefined) return undefined;
    return mode === 'download'
      ? { url, method: 'GET' }
      : {
          url,
          method: 'POST',
          note: 'POST the bytes with Content-Type: application/octet-stream (or as multipart/form-data field "file").',
        };
  }

  async preview(port: number): Promise<PreviewInfo> {
    const url = `https://${this.options.api.getHost(port)}`;
    const probe = await this.runCommand({
      command: `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null`,
      timeoutMs: 3_000,
    });
    return { url, listening: probe.exitCode === 0, reachable: true };
  }

  /** Lets go: the microVM keeps running until its lease ends (then E2B pauses it), for its owner to re-attach. */
  async release(): Promise<void> {
    this.gone = true;
  }

  /**
   * Puts it to sleep: paused with its memory or its files, as it was created to; killed when it does not sleep.
   * A pause that fails (the service unreachable) leaves it to E2B, which pauses it when its lease ends.
   */
  async sleep(): Promise<SleepState | undefined> {
    const { mode } = this.options.sleep;
    if (this.killed || mode === 'off') {
      await this.kill();
      return undefined;
    }
    this.gone = true;
    const state: SleepState = { sinceMs: this.options.clock.now(), memory: mode === 'memory', stopped: [] };
    try {
      await this.options.sleep.pause(mode === 'memory');
    } catch (err: unknown) {
      // Gone, or a service without pause that answers 404 (then it is killed rather than left to run its lease out).
      const { SandboxNotFoundError, NotFoundError } = this.options.errors;
      if (err instanceof SandboxNotFoundError || err instanceof NotFoundError) {
        await this.kill();
        return undefined;
      }
    }
    await this.options.sleep.onSleep?.(state);
    return state;
  }

  /** Kills the microVM; also after it was found gone, in case only the path to it failed. */
  async kill(): Promise<void> {
    if (this.killed) return;
    this.killed = true;
    this.gone = true;
    await this.options.api.kill().catch(() => undefined);
    await this.options.sleep.onKill?.();
  }

  /** Relative paths are under /home/user; the whole microVM is the sandbox, so absolute paths are allowed. */
  private resolve(path: string): string {
    if (path.includes('\0')) throw new AppError('invalid_input', 'Path contains a NUL byte.');
    return posix.normalize(path.startsWith('/') ? path : posix.join(E2B_WORKDIR, path));
  }

  /**
   * Runs an SDK operation that may take `busyForMs`: renews the lease when due (or when it would end during
   * the operation), and maps every SDK error in one place.
   */
  private async call<T>(operation: string, fn: () => Promise<T>, busyForMs = 0): Promise<T> {
    if (this.gone || this.killed) {
      throw new AppError(
        'sandbox_gone',
        'The sandbox is gone, so files and state from it are gone. The next call starts a fresh sandbox.',
      );
    }
    try {
      return await this.lease.use(busyForMs, fn);
    } catch (err: unknown) {
      const mapped = toE2BAppError(err, this.options.errors, {
        operation,
        template: this.options.template,
        apiKey: this.options.apiKey,
      });
      if (isAppError(mapped, 'sandbox_gone')) this.gone = true;
      throw mapped;
    }
  }
}

/** run_code's error where the template has no code interpreter. */
function noInterpreterMessage(template: string): string {
  return (
    `The E2B template "${template}" has no code interpreter, so run_code cannot run here; use run_command, ` +
    'or set E2B_TEMPLATE to code-interpreter-v1 (or a template built on it).'
  );
}
