/**
 * One sandbox's namespace and its agent. `bwrap` gives the sandbox its own PID, mount, UTS, IPC and network
 * namespace: the host's / read-only, its own /home/user and /tmp (bound from `<dir>/home/user` and `<dir>/tmp`),
 * its own /proc and /dev, only loopback for a network (the way out is the agent's egress listener, whose
 * connections come here as Duplexes: `onConnection`), no capabilities (so root in the sandbox cannot remount
 * anything writable), the service's root of sandbox directories hidden, and the files in `binds` (the trust
 * bundle) bound read-only. Inside, under bwrap's init (pid 1), runs agent.js (pid 2): it starts
 * processes and does file operations on request, over the framing of agent-protocol.ts. Killing the
 * namespace's init (bwrap's pid 1) makes the kernel kill and reap everything in it; `--die-with-parent` does
 * the same when this Node process dies. `freeze` stops everything in it (SIGSTOP, for a pause that keeps the
 * sandbox's memory, or while a snapshot copies its files) and `thaw` lets it run on (SIGCONT).
 *
 * Processes run as the user running the service (root in CI) without capabilities; HOME, USER and the
 * paths are E2B's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import type { Duplex } from 'node:stream';

import { ConnectionTable } from './agent-connections';
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
  /** Host files bound read-only inside, each over a path that exists on the host. */
  readonly binds?: readonly (readonly [string, string])[];
  /** A connection a process made to the agent's egress listener. @default destroyed: no way out */
  readonly onConnection?: (connection: Duplex) => void;
}

/** The agent and what else the sandbox runs from this directory (the interpreter's kernel). */
const CODE_DIR = __dirname;
const AGENT_PATH = join(CODE_DIR, 'agent.js');

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir + sep);
}

/** How long `freeze` waits for the processes it stopped to show as stopped (one in the kernel a while longer). */
const FREEZE_SETTLE_MS = 5_000;

/** Every process on the host by its parent (from /proc/<pid>/stat), with its state letter. */
function hostProcesses(): Map<number, { parent: number; state: string }> {
  const found = new Map<number, { parent: number; state: string }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      found.set(Number(name), { parent: Number(parent), state: state ?? '?' });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** `root` and its descendants among `processes`. */
function treeOf(root: number, processes: Map<number, { parent: number }>): Set<number> {
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, { parent }] of processes) {
      if (tree.has(parent) && !tree.has(pid)) {
        tree.add(pid);
        grew = true;
      }
    }
  }
  return tree;
}

/** bwrap's arguments for a sandbox in `dir`. */
function bwrapArgs(options: RuntimeOptions): string[] {
  const args = [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-ipc',
    '--unshare-net',
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
  for (const [source, target] of options.binds ?? []) args.push('--ro-bind', source, target);
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
  /** Whether `freeze` stopped the namespace (until `thaw`). */
  private frozen = false;
  /** Signals sent while frozen, by `pid:signal`, until the agent answers them (see `request`). */
  private readonly pendingSignals = new Map<string, Promise<Frame>>();
  private initPid: number | undefined;
  private isDead = false;
  private killing = false;
  private stderrTail = '';
  private readonly gone: Promise<void>;
  private readonly connections: ConnectionTable;

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
    this.connections = new ConnectionTable(
      (header, payload) => this.notify(header, payload),
      options.onConnection ?? ((connection) => connection.destroy()),
    );
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
      default:
        this.connections.receive(header, payload);
    }
  }

  /** A frame that needs no reply (the egress connections'); dropped once the namespace is gone. */
  private notify(header: Record<string, unknown>, payload?: Buffer): void {
    if (this.isDead) return;
    for (const chunk of encodeFrame(header, payload)) this.child.stdin!.write(chunk);
  }

  private onGone(): void {
    this.isDead = true;
    this.readyWaiter?.reject(new Error(`the sandbox agent exited: ${this.stderrTail}`));
    const err = new AgentError('unavailable', 502, 'the sandbox is not running');
    for (const pending of this.pending.values()) pending.reject(err);
    this.pending.clear();
    for (const proc of this.processes.values()) proc.finish({ exitCode: null, signal: 'SIGKILL' });
    this.processes.clear();
    this.connections.closeAll();
    for (const listener of this.deathListeners.splice(0)) listener();
  }

  /**
   * Sends a request to the agent; resolves with its reply, rejects with an AgentError. Frozen, the agent reads
   * nothing until thawed: a signal for a process that is already waiting to be sent is that one (as the kernel
   * keeps one pending signal of a kind), so that one sent again and again (the interpreter's interrupts) does not
   * pile up.
   */
  request(header: Record<string, unknown>, payload?: Buffer): Promise<Frame> {
    if (this.isDead) return Promise.reject(new AgentError('unavailable', 502, 'the sandbox is not running'));
    if (this.frozen && header.t === 'signal') {
      const key = `${String(header.pid)}:${String(header.signal)}`;
      const pending = this.pendingSignals.get(key);
      if (pending !== undefined) return pending;
      const sent = this.send(header, payload);
      this.pendingSignals.set(key, sent);
      const forget = () => this.pendingSignals.get(key) === sent && this.pendingSignals.delete(key);
      sent.then(forget, forget);
      return sent;
    }
    return this.send(header, payload);
  }

  private send(header: Record<string, unknown>, payload?: Buffer): Promise<Frame> {
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

  /**
   * The host pids of every process in the sandbox: the namespace's init and its descendants (inside a PID
   * namespace an orphan is adopted by that init, so nothing in it leaves the tree; bwrap itself, outside, is not in
   * it). Empty before the init's pid is known or once the namespace is gone.
   */
  private members(processes = hostProcesses()): Set<number> {
    if (this.initPid === undefined || this.isDead || !processes.has(this.initPid)) return new Set();
    return treeOf(this.initPid, processes);
  }

  /**
   * Freezes the sandbox: SIGSTOP to every process in its namespace, the agent and the interpreter's kernels
   * included, in rounds until a round finds no process it has not stopped yet (one may fork between the listing
   * and its stop; a process with a SIGSTOP pending forks no more), then waits (bounded) until each shows as
   * stopped in /proc. Its pipes to this service stay open: requests written meanwhile wait in them.
   */
  async freeze(): Promise<void> {
    this.frozen = true;
    const stopped = new Set<number>();
    for (;;) {
      const fresh = [...this.members()].filter((pid) => !stopped.has(pid));
      if (fresh.length === 0) break;
      for (const pid of fresh) {
        stopped.add(pid);
        try {
          process.kill(pid, 'SIGSTOP');
        } catch {
          // exited meanwhile
        }
      }
    }
    const deadline = Date.now() + FREEZE_SETTLE_MS;
    for (;;) {
      const processes = hostProcesses();
      // T: stopped, t: traced; Z and X have nothing left to stop; a pid missing from /proc has exited.
      const running = [...stopped].filter((pid) => !'TtZX'.includes(processes.get(pid)?.state ?? 'X'));
      if (running.length === 0 || Date.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Thaws what `freeze` stopped: SIGCONT to every process in the namespace. */
  thaw(): void {
    this.frozen = false;
    for (const pid of this.members()) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // exited meanwhile
      }
    }
  }

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
