/** One session's E2B sandbox behind the Sandbox interface: commands, code, files, and the lease. */
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';

import type { Clock } from '../../clock';
import { AppError, isAppError } from '../../errors';
import { CodeResults } from '../code-results';
import { OutputCapture } from '../output-capture';
import { tooLargeToRead } from '../read-limit';
import type {
  BackgroundProcess,
  CallControls,
  CodeError,
  FileEntry,
  ListFilesRequest,
  ListFilesResult,
  PreviewInfo,
  ProcessLogPage,
  ReadFileResult,
  RunCodeRequest,
  RunCodeResult,
  RunCommandRequest,
  RunCommandResult,
  Sandbox,
  SandboxInfo,
  StartBackgroundRequest,
  StdinWrite,
} from '../types';
import { createE2BBackgroundProcesses, type E2BBackgroundProcesses } from './background';
import { saveOpenFigures } from './charts';
import { toE2BAppError } from './errors';
import { Lease, type LeaseTerms } from './lease';
import type { E2BErrorClasses, E2BSandboxApi } from './sdk';
import { shellQuote } from './shell';

/** The working directory of E2B's templates. */
export const E2B_WORKDIR = '/home/user';
/**
 * Kills what running cells started, then interrupts the kernels (SIGINT, as Jupyter does). The pattern is
 * written `ipykernel_launche[r]` so that it does not match the shell running this very script.
 */
const INTERRUPT_KERNELS =
  't(){ for c in $(pgrep -P "$1"); do t "$c"; kill -KILL "$c" 2>/dev/null; done; }; ' +
  'for k in $(pgrep -f \'ipykernel_launche[r]\'); do t "$k"; kill -INT "$k" 2>/dev/null; done; true';
/** Grace beyond the in-sandbox `timeout -k 2` before the server kills the command itself. */
const COMMAND_BACKSTOP_MS = 5_000;

/** The output callbacks of a command or an execution: each chunk into its capture, and on to the live output. */
function intoCaptures(stdout: OutputCapture, stderr: OutputCapture, onOutput: CallControls['onOutput']) {
  return {
    onStdout: (text: string): void => {
      stdout.push(Buffer.from(text, 'utf8'));
      onOutput?.('stdout', text);
    },
    onStderr: (text: string): void => {
      stderr.push(Buffer.from(text, 'utf8'));
      onOutput?.('stderr', text);
    },
  };
}

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
}

/** A sandbox on E2B. */
export class E2BSandbox implements Sandbox {
  readonly id: string;
  private readonly createdAt = new Date().toISOString();
  private gone = false;
  private killed = false;
  private readonly lease: Lease;

  private readonly background: E2BBackgroundProcesses;

  constructor(private readonly options: E2BSandboxOptions) {
    this.id = options.api.sandboxId;
    this.lease = new Lease(options.lease, options.clock, (ms) => options.api.setTimeout(ms), options.priorLeaseEnd);
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
    const { api, errors, clock } = this.options;
    const cwd = this.resolve(req.cwd ?? '.');
    return this.call(
      `running a command in ${cwd}`,
      async () => {
        let stdinFile = '/dev/null';
        if (req.stdin !== undefined) {
          stdinFile = `/tmp/.mcp-stdin-${randomBytes(8).toString('hex')}`;
          await api.writeFile(stdinFile, toArrayBuffer(Buffer.from(req.stdin, 'utf8')));
        }
        const seconds = Math.max(1, Math.ceil(req.timeoutMs / 1000));
        // `timeout -k` stops the command inside the sandbox even if this server is gone by then. With `exec`
        // the command's pid is timeout's, which leads a process group of everything the command starts.
        const cleanup = req.stdin === undefined ? '' : `rm -f ${stdinFile}; `;
        const script = `exec timeout -k 2 ${seconds} bash -c ${shellQuote(cleanup + req.command)} < ${stdinFile}`;
        const stdout = new OutputCapture(this.options.maxOutputBytes);
        const stderr = new OutputCapture(this.options.maxOutputBytes);
        const started = clock.now();
        const handle = await api.startCommand(script, {
          cwd,
          envs: req.env,
          timeoutMs: req.timeoutMs + COMMAND_BACKSTOP_MS * 2,
          ...intoCaptures(stdout, stderr, req.onOutput),
        });
        let timedOut = false;
        let cancelled = false;
        let lastResort: NodeJS.Timeout | undefined;
        const stop = (): void => {
          // SIGTERM to `timeout` reaches the whole group; then SIGKILL the group. Killing only the
          // process E2B knows (handle.kill) would orphan its children, so that is the last resort.
          void api
            .startCommand(
              `kill -TERM ${handle.pid} 2>/dev/null; sleep 2; kill -KILL -- -${handle.pid} 2>/dev/null; true`,
              { timeoutMs: 15_000 },
            )
            .catch(() => undefined);
          lastResort ??= setTimeout(() => void handle.kill().catch(() => false), COMMAND_BACKSTOP_MS);
        };
        const backstop = setTimeout(() => {
          timedOut = true;
          stop();
        }, req.timeoutMs + COMMAND_BACKSTOP_MS);
        const onAbort = (): void => {
          cancelled = true;
          stop();
        };
        if (req.signal?.aborted) onAbort();
        else req.signal?.addEventListener('abort', onAbort, { once: true });
        let exitCode: number | null = null;
        try {
          exitCode = (await handle.wait()).exitCode;
        } catch (err: unknown) {
          // A non-zero exit is a normal result, not an error.
          if (err instanceof errors.CommandExitError) exitCode = err.exitCode;
          else if (!timedOut && !cancelled) throw err;
        } finally {
          clearTimeout(backstop);
          clearTimeout(lastResort);
          req.signal?.removeEventListener('abort', onAbort);
        }
        const durationMs = Math.round(clock.now() - started);
        // 124: `timeout` stopped it; 137: it ignored SIGTERM and `-k` killed it.
        if (!cancelled && (exitCode === 124 || exitCode === 137) && durationMs >= seconds * 1000 - 50) timedOut = true;
        if (timedOut || cancelled) exitCode = null;
        return {
          exitCode,
          signal: timedOut || cancelled ? 'SIGKILL' : null,
          stdout: stdout.result(),
          stderr: stderr.result(),
          timedOut,
          cancelled,
          durationMs,
        };
      },
      req.timeoutMs + COMMAND_BACKSTOP_MS * 2,
    );
  }

  async runCode(req: RunCodeRequest): Promise<RunCodeResult> {
    const { api, clock } = this.options;
    const stdout = new OutputCapture(this.options.maxOutputBytes);
    const stderr = new OutputCapture(this.options.maxOutputBytes);
    const started = clock.now();
    let cancelled = false;
    const partial = (timedOut: boolean, error: CodeError | null, results = new CodeResults()): RunCodeResult => ({
      stdout: stdout.result(),
      stderr: stderr.result(),
      results: results.results,
      ...(results.omitted === undefined ? {} : { omittedResults: results.omitted }),
      error,
      timedOut,
      cancelled,
      stateLost: false,
      durationMs: Math.round(clock.now() - started),
    });
    // Cancel and timeout = Jupyter's interrupt: what the cell started is killed, then the kernel gets SIGINT
    // (its state stays). Without it the cell would run on and hold up the next call.
    const interrupt = (): Promise<unknown> =>
      api
        .startCommand(INTERRUPT_KERNELS, { timeoutMs: 15_000 })
        .then((h) => h.wait())
        .catch(() => undefined);
    const onAbort = (): void => {
      cancelled = true;
      void interrupt();
    };
    if (req.signal?.aborted) onAbort();
    else req.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.call(
        `running ${req.language} code`,
        async () => {
          const results = new CodeResults();
          const execution = await api.runCode(req.code, {
            language: req.language,
            envs: req.env,
            timeoutMs: req.timeoutMs,
            ...intoCaptures(stdout, stderr, req.onOutput),
            onResult: (result) => {
              if (result.png !== undefined) results.add({ type: 'image', mimeType: 'image/png', data: result.png });
              else if (result.jpeg !== undefined)
                results.add({ type: 'image', mimeType: 'image/jpeg', data: result.jpeg });
              else if (result.text !== undefined) results.add({ type: 'text', text: result.text });
            },
            // An answer line too long to hold (output or a result): counted with the results left out.
            onDropped: (bytes) => results.omit(bytes),
          });
          if (this.options.charts === 'files' && req.language === 'python' && !cancelled)
            for (const chart of await saveOpenFigures(api)) results.add(chart);
          return partial(false, execution.error ?? null, results);
        },
        req.timeoutMs,
      );
    } catch (err: unknown) {
      if (cancelled) return partial(false, null);
      if (isAppError(err, 'sandbox_timeout')) {
        await interrupt();
        return partial(true, null);
      }
      const noInterpreter = isAppError(err, 'not_found') || isAppError(err, 'sandbox_gone');
      if (noInterpreter && (await api.exists('/').catch(() => false))) {
        // The sandbox answers, but nothing listens for code: the template has no interpreter.
        this.gone = false;
        throw new AppError(
          'sandbox_error',
          `The E2B template "${this.options.template}" has no code interpreter, so run_code cannot run here; use run_command, or set E2B_TEMPLATE to code-interpreter-v1 (or a template built on it).`,
          { cause: err },
        );
      }
      throw err;
    } finally {
      req.signal?.removeEventListener('abort', onAbort);
    }
  }

  async readFile(path: string, maxBytes: number): Promise<ReadFileResult> {
    const target = this.resolve(path);
    return this.call(`reading ${target}`, async () => {
      const info = await this.options.api.getInfo(target);
      if (info.type === 'dir')
        throw new AppError('invalid_input', `${target} is a directory; use list_files to see what it holds.`);
      if (info.size > maxBytes) throw tooLargeToRead(target, `${info.size} bytes`, maxBytes);
      // The sandbox can grow the file after the check: never more than the limit is read.
      const bytes = Buffer.from(await this.options.api.readFile(target, maxBytes));
      if (bytes.length > maxBytes) throw tooLargeToRead(target, `over ${maxBytes} bytes`, maxBytes);
      return { path: target, bytes, sizeBytes: bytes.length };
    });
  }

  async writeFile(path: string, data: Buffer): Promise<{ path: string; created: boolean }> {
    const target = this.resolve(path);
    return this.call(`writing ${target}`, async () => {
      const existed = await this.options.api.exists(target);
      await this.options.api.writeFile(target, toArrayBuffer(data));
      return { path: target, created: !existed };
    });
  }

  async listFiles(req: ListFilesRequest): Promise<ListFilesResult> {
    const target = this.resolve(req.path);
    return this.call(`listing ${target}`, async () => {
      const info = await this.options.api.getInfo(target);
      if (info.type !== 'dir')
        throw new AppError('invalid_input', `${target} is not a directory; use read_file to read it.`);
      const found = await this.options.api.listFiles(target, req.depth);
      const entries: FileEntry[] = [];
      for (const entry of found) {
        const rel = posix.relative(target, entry.path);
        if (rel === '' || rel.startsWith('..')) continue;
        if (!req.includeHidden && rel.split('/').some((part) => part.startsWith('.'))) continue;
        const type =
          entry.type === 'dir'
            ? 'directory'
            : entry.type === 'symlink'
              ? 'symlink'
              : entry.type === 'file'
                ? 'file'
                : 'other';
        entries.push({
          path: type === 'directory' ? `${rel}/` : rel,
          type,
          size: entry.size,
          mtime: entry.modifiedTime?.toISOString() ?? '',
        });
      }
      entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      return { path: target, entries: entries.slice(0, req.maxEntries), truncated: entries.length > req.maxEntries };
    });
  }

  async preview(port: number): Promise<PreviewInfo> {
    const url = `https://${this.options.api.getHost(port)}`;
    const probe = await this.runCommand({
      command: `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null`,
      timeoutMs: 3_000,
    });
    return { url, listening: probe.exitCode === 0, reachable: true };
  }

  /** Lets go: the microVM keeps running until its lease ends, for this session to re-attach. */
  async release(): Promise<void> {
    this.gone = true;
  }

  /** Kills the microVM; also after it was found gone, in case only the path to it failed. */
  async kill(): Promise<void> {
    if (this.killed) return;
    this.killed = true;
    this.gone = true;
    await this.options.api.kill().catch(() => undefined);
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

function toArrayBuffer(data: Buffer): ArrayBuffer {
  const copy = new ArrayBuffer(data.byteLength);
  new Uint8Array(copy).set(data);
  return copy;
}
