/**
 * One sandbox's namespace and its agent. `bwrap` gives the sandbox its own PID, mount, UTS and IPC namespace:
 * the host's / read-only, its own /home/user and /tmp (bound from `<dir>/home/user` and `<dir>/tmp`), its own
 * /proc and /dev, no capabilities (so root in the sandbox cannot remount anything writable), the service's
 * root of sandbox directories hidden. Inside, under bwrap's init (pid 1), runs agent.js (pid 2): it starts
 * processes and does file operations on request, over the framing of agent-protocol.ts. Killing the
 * namespace's init (bwrap's pid 1) makes the kernel kill and reap everything in it; `--die-with-parent` does
 * the same when this Node process dies.
 *
 * Processes run as the user running the service (root in CI) without capabilities; HOME, USER and the
 * paths are E2B's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join, sep } from 'node:path';

import { encodeFrame, type Frame, FrameDecoder } from './agent-protocol';

/** A process running in a sandbox (pids are the sandbox's own). */
export interface SandboxProcess {
  readonly pid: number; // inside the sandbox
  onStdout(listener: (chunk: Buffer) => void): void;
  onStderr(listener: (chunk: Buffer) => void): void;
  write(data: Buffer): void;
  closeStdin(): void;
  kill(signal: NodeJS.Signals): void;
  readonly exited: Promise<{ exitCode: number | null; signal: string | null }>;
}

/** Starts `argv` in the sandbox with stdin open; `env` is added to the sandbox's base environment. */
export type SpawnInSandbox = (
  argv: string[],
  opts: { cwd: string; env: Record<string, string> },
) => Promise<SandboxProcess>;

/** A request the agent refused: a Connect code for filesystem calls, an HTTP status for file transfers. */
export class AgentError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'AgentError';
  }
}

export interface StartProcessOptions {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The complete environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Whether stdin is a pipe (otherwise /dev/null). */
  readonly stdin: boolean;
}

export interface RuntimeOptions {
  readonly sandboxId: string;
  /** `<root>/<id>`: holds `home/user` and `tmp`. */
  readonly dir: string;
  /** The service's root of sandbox directories, hidden from the sandbox when it would be visible. */
  readonly root: string;
  /** The environment every process starts from. */
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Bounds the agent's start-up. */
  readonly startTimeoutMs?: number;
}

/** The agent and what else the sandbox runs from this directory (the interpreter's kernel). */
const CODE_DIR = __dirname;
const AGENT_PATH = join(CODE_DIR, 'agent.js');

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir + sep);
}

/** bwrap's arguments for a sandbox in `dir`. */
function bwrapArgs(options: RuntimeOptions): string[] {
  const args = [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-ipc',
    '--hostname',
    options.sandboxId,
  ];
  args.push('--ro-bind', '/', '/', '--tmpfs', '/home');
  args.push('--bind', join(options.dir, 'home', 'user'), '/home/user', '--bind', join(options.dir, 'tmp'), '/tmp');
  args.push('--proc', '/proc', '--dev', '/dev');
  // Other sandboxes' directories stay out of sight (under /tmp or /home they already are).
  if (!isUnder(options.root, '/tmp') && !isUnder(options.root, '/home')) args.push('--tmpfs', options.root);
  // Node and this code must stay visible, read-only, where the sandbox has its own /home and /tmp.
  for (const dir of [dirname(dirname(process.execPath)), CODE_DIR]) {
    if (isUnder(dir, '/home') || isUnder(dir, '/tmp')) args.push('--ro-bind', dir, dir);
  }
  args.push(
    '--cap-drop',
    'ALL',
    '--new-session',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--chdir',
    '/home/user',
    '--info-fd',
    '3',
  );
  args.push('--', process.execPath, AGENT_PATH, options.sandboxId);
  return args;
}

type Exit = { exitCode: number | null; signal: string | null };

/** A process started through the agent. */
export class AgentProcess implements SandboxProcess {
  private readonly listeners: { stdout: Array<(chunk: Buffer) => void>; stderr: Array<(chunk: Buffer) => void> } = {
    stdout: [],
    stderr: [],
  };
  /** Output that arrived before anyone listened (it is handed to the first listener). */
  private readonly early: { stdout: Buffer[]; stderr: Buffer[] } = { stdout: [], stderr: [] };
  private settle!: (exit: Exit) => void;
  readonly exited: Promise<Exit>;
  private exitInfo: Exit | undefined;

  constructor(
    private readonly runtime: SandboxRuntime,
    readonly pid: number,
  ) {
    this.exited = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  onStdout(listener: (chunk: Buffer) => void): void {
    this.listen('stdout', listener);
  }

  onStderr(listener: (chunk: Buffer) => void): void {
    this.listen('stderr', listener);
  }

  private listen(stream: 'stdout' | 'stderr', listener: (chunk: Buffer) => void): void {
    this.listeners[stream].push(listener);
    if (this.listeners[stream].length === 1) for (const chunk of this.early[stream].splice(0)) listener(chunk);
  }

  /** @internal Output from the agent. */
  deliver(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    if (this.listeners[stream].length === 0) this.early[stream].push(chunk);
    for (const listener of this.listeners[stream]) listener(chunk);
  }

  /** @internal The process ended (or the sandbox did). */
  finish(exit: Exit): void {
    if (this.exitInfo !== undefined) return;
    this.exitInfo = exit;
    this.settle(exit);
  }

  /** Writes to stdin; resolves once written, rejects (AgentError) when stdin is not open. */
  sendStdin(data: Buffer): Promise<void> {
    return this.runtime.request({ t: 'stdin', pid: this.pid }, data).then(() => undefined);
  }

  /** Closes stdin (no error when it was not open). */
  endStdin(): Promise<void> {
    return this.runtime.request({ t: 'closeStdin', pid: this.pid }).then(() => undefined);
  }

  /** Signals the process itself (not its children); SIGKILL and SIGTERM also stop waiting for its output. */
  signal(signal: NodeJS.Signals): Promise<void> {
    return this.runtime.request({ t: 'signal', pid: this.pid, signal }).then(() => undefined);
  }

  write(data: Buffer): void {
    this.sendStdin(data).catch(() => undefined);
  }

  closeStdin(): void {
    this.endStdin().catch(() => undefined);
  }

  kill(signal: NodeJS.Signals): void {
    this.signal(signal).catch(() => undefined);
  }
}

interface Pending {
  resolve(frame: Frame): void;
  reject(err: Error): void;
}

/** A running sandbox namespace with its agent. */
export class SandboxRuntime {
  private readonly pending = new Map<number, Pending>();
  private readonly processes = new Map<number, AgentProcess>();
  private readonly deathListeners: Array<() => void> = [];
  private nextId = 1;
  private initPid: number | undefined;
  private isDead = false;
  private killing = false;
  private stderrTail = '';
  private readonly gone: Promise<void>;

  /** Starts the namespace and waits for the agent. */
  static async start(options: RuntimeOptions): Promise<SandboxRuntime> {
    const child = spawn('bwrap', bwrapArgs(options), { stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
    const runtime = new SandboxRuntime(child, options);
    try {
      await runtime.ready(options.startTimeoutMs ?? 15_000);
    } catch (err) {
      await runtime.kill();
      throw err;
    }
    return runtime;
  }

  private readyWaiter: { resolve(): void; reject(err: Error): void } | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly options: RuntimeOptions,
  ) {
    const decoder = new FrameDecoder();
    child.stdout!.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) this.onFrame(frame);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4000);
      if (process.env.E2B_LOCAL_DEBUG)
        process.stderr.write(`[e2b-local ${options.sandboxId}] ${chunk.toString('utf8')}`);
    });
    child.stdin!.on('error', () => undefined);
    let info = '';
    const infoPipe = child.stdio[3] as NodeJS.ReadableStream;
    infoPipe.on('data', (chunk: Buffer) => {
      info += chunk.toString('utf8');
      const match = /"child-pid"\s*:\s*(\d+)/.exec(info);
      if (match) this.initPid = Number(match[1]);
    });
    infoPipe.on('error', () => undefined);
    this.gone = new Promise((resolve) => {
      child.on('exit', () => resolve());
      child.on('error', (err) => {
        this.stderrTail += `\n${err.message}`;
        resolve();
      });
    });
    void this.gone.then(() => this.onGone());
  }

  private ready(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the sandbox agent did not start within ${timeoutMs} ms: ${this.stderrTail}`)),
        timeoutMs,
      );
      this.readyWaiter = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
    });
  }

  /** Whether the namespace is gone. */
  get dead(): boolean {
    return this.isDead;
  }

  /** Calls `listener` once when the namespace ends (killed or died). */
  onDeath(listener: () => void): void {
    if (this.isDead) listener();
    else this.deathListeners.push(listener);
  }

  /** The base environment plus `env`. */
  environment(env: Readonly<Record<string, string>> = {}): Record<string, string> {
    return { ...this.options.baseEnv, ...env };
  }

  private onFrame({ header, payload }: Frame): void {
    switch (header.t) {
      case 'ready':
        this.readyWaiter?.resolve();
        return;
      case 'reply': {
        const id = header.id as number;
        const pending = this.pending.get(id);
        if (pending === undefined) return;
        this.pending.delete(id);
        if (header.ok === true) pending.resolve({ header, payload });
        else pending.reject(new AgentError(String(header.code), Number(header.status), String(header.message)));
        return;
      }
      case 'out':
        this.processes.get(header.pid as number)?.deliver(header.fd === 2 ? 'stderr' : 'stdout', payload);
        return;
      case 'exit': {
        const pid = header.pid as number;
        const proc = this.processes.get(pid);
        this.processes.delete(pid);
        proc?.finish({
          exitCode: (header.code as number | null) ?? null,
          signal: (header.signal as string | null) ?? null,
        });
        return;
      }
    }
  }

  private onGone(): void {
    this.isDead = true;
    this.readyWaiter?.reject(new Error(`the sandbox agent exited: ${this.stderrTail}`));
    const err = new AgentError('unavailable', 502, 'the sandbox is not running');
    for (const pending of this.pending.values()) pending.reject(err);
    this.pending.clear();
    for (const proc of this.processes.values()) proc.finish({ exitCode: null, signal: 'SIGKILL' });
    this.processes.clear();
    for (const listener of this.deathListeners.splice(0)) listener();
  }

  /** Sends a request to the agent; resolves with its reply, rejects with an AgentError. */
  request(header: Record<string, unknown>, payload?: Buffer): Promise<Frame> {
    if (this.isDead) return Promise.reject(new AgentError('unavailable', 502, 'the sandbox is not running'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      for (const chunk of encodeFrame({ ...header, id }, payload)) this.child.stdin!.write(chunk);
    });
  }

  /** Starts a process; the returned handle buffers output until a listener is attached. */
  startProcess(options: StartProcessOptions): Promise<AgentProcess> {
    if (this.isDead) return Promise.reject(new AgentError('unavailable', 502, 'the sandbox is not running'));
    const id = this.nextId++;
    return new Promise<AgentProcess>((resolve, reject) => {
      this.pending.set(id, {
        // Registered as soon as the reply is read, before any output frame that follows it.
        resolve: (frame) => {
          const proc = new AgentProcess(this, (frame.header.result as { pid: number }).pid);
          this.processes.set(proc.pid, proc);
          resolve(proc);
        },
        reject,
      });
      const header = {
        t: 'spawn',
        id,
        cmd: options.cmd,
        args: options.args,
        cwd: options.cwd,
        env: options.env,
        stdin: options.stdin,
      };
      for (const chunk of encodeFrame(header)) this.child.stdin!.write(chunk);
    });
  }

  /** For the interpreter: `argv` with stdin open, in `cwd`, the base environment plus `env`. */
  readonly spawn: SpawnInSandbox = (argv, opts) => {
    const [cmd, ...args] = argv;
    if (cmd === undefined) return Promise.reject(new Error('empty argv'));
    return this.startProcess({ cmd, args, cwd: opts.cwd, env: this.environment(opts.env), stdin: true });
  };

  /** Kills everything in the namespace; resolves once it is gone. */
  async kill(): Promise<void> {
    if (!this.isDead && !this.killing) {
      this.killing = true;
      // The namespace's init: the kernel kills and reaps all the sandbox's processes before bwrap sees it
      // exit, so bwrap's exit means none is left. Without its pid (bwrap not that far yet), bwrap itself:
      // `--die-with-parent` takes the rest down.
      let killedInit = false;
      if (this.initPid !== undefined) {
        try {
          process.kill(this.initPid, 'SIGKILL');
          killedInit = true;
        } catch {
          // already gone
        }
      }
      if (!killedInit) this.child.kill('SIGKILL');
      else {
        const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
        void this.gone.then(() => clearTimeout(timer));
      }
    }
    await this.gone;
  }
}
