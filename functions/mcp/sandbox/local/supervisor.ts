/**
 * A sandbox's supervisor, from the server's side: the one process started through the launcher (cgroups,
 * rlimits, the sandbox's user, bubblewrap), which then starts each process of the sandbox (commands,
 * background processes, scripts, the Python kernel) with a fork inside it, and relays their descriptors
 * over its stdin/stdout (supervisor-source.ts has the frames), and carries a preview's connections into the
 * sandbox's network (supervisor-streams.ts). Everything it says comes from inside the sandbox: frames are
 * bounded and checked, and a supervisor that misbehaves is killed.
 */
import type { ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';

import { AppError } from '../../errors';
import type { LaunchSpec } from './launch';
import { signalGroup, spawnGroup, startFailureDetail, toSpawnError } from './process-group';
import { type ProcessCarrier, SandboxProcess, type SpawnRequest } from './supervised-process';
import { encodeFrameHeader, HEADER_BYTES, Kind, MAX_FRAME_BYTES } from './supervisor-frames';
import { type SandboxStream, StreamTable } from './supervisor-streams';

/**
 * Bytes queued for the supervisor's stdin past which streams and process inputs hold what they would send (it is
 * not reading: stopped, or taken over); a window alone would not bound this, since the supervisor says how much
 * it took. A backlog that stays above it for UNRESPONSIVE_MS without shrinking gets the supervisor killed.
 */
const MAX_STDIN_BACKLOG_BYTES = 1024 * 1024;
/** Time for the supervisor to start and say it is ready. */
const START_TIMEOUT_MS = 15_000;
/**
 * How long a process may outlive its SIGKILL before the supervisor counts as stuck (a process of the sandbox
 * can stop it: it runs as the same user) and is killed with everything it started.
 */
const UNRESPONSIVE_MS = 5_000;
/**
 * How long a supervisor with nothing of its own running (no command, background process or Python kernel)
 * stays: it holds ~6 MiB, and starting it again costs the next call ~70 ms.
 */
const IDLE_MS = 60_000;

export interface SupervisorOptions {
  /** @default UNRESPONSIVE_MS */
  unresponsiveMs?: number;
  /** @default IDLE_MS */
  idleMs?: number;
  /**
   * Takes each connection a process of the sandbox makes to its egress listener (launched with SANDBOX_EGRESS_PORT).
   * @default none: such connections are closed
   */
  outbound?: (stream: SandboxStream) => void;
}

/** A running supervisor. */
export class Supervisor implements ProcessCarrier {
  private readonly processes = new Map<number, SandboxProcess>();
  private readonly probes = new Map<number, (listening: boolean) => void>();
  private readonly streams: StreamTable;
  private nextKey = 1;
  private pending: Buffer[] = [];
  private gone = false;
  private readonly goneListeners: Array<() => void> = [];
  private idleTimer: NodeJS.Timeout | undefined;
  /** Watches a backlog above MAX_STDIN_BACKLOG_BYTES: one that does not shrink within unresponsiveMs kills. */
  private stallTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly child: ChildProcess,
    /** @internal How long a stopped process may take to be reported gone (UNRESPONSIVE_MS). */
    readonly unresponsiveMs: number,
    private readonly idleMs: number,
    outbound: ((stream: SandboxStream) => void) | undefined,
  ) {
    this.streams = new StreamTable({
      send: (kind, key, fd, payload) => this.send(kind, key, fd, payload),
      backlogged: () => this.backlogged(),
      misbehaved: () => this.kill(),
      settled: () => this.touch(),
      ...(outbound === undefined
        ? {}
        : {
            accepted: (stream: SandboxStream) => {
              clearTimeout(this.idleTimer);
              outbound(stream);
            },
          }),
    });
    child.stdout?.on('data', (chunk: Buffer) => this.read(chunk));
    child.stdin?.on('error', () => undefined);
    child.stdin?.on('drain', () => {
      this.streams.drained();
      for (const proc of [...this.processes.values()]) proc.drained();
    });
    child.once('exit', () => this.end());
    child.once('error', () => this.end());
  }

  /** Starts the supervisor `spec` launches and waits until it is ready. */
  static async start(spec: LaunchSpec, options: SupervisorOptions = {}): Promise<Supervisor> {
    let child: ChildProcess;
    try {
      child = spawnGroup(spec, ['pipe', 'pipe', 'pipe']);
    } catch (err: unknown) {
      throw toSpawnError(err);
    }
    const stderr: Buffer[] = [];
    const collect = (chunk: Buffer): void => {
      if (stderr.length < 20) stderr.push(chunk);
    };
    child.stderr?.on('data', collect);
    const supervisor = new Supervisor(
      child,
      options.unresponsiveMs ?? UNRESPONSIVE_MS,
      options.idleMs ?? IDLE_MS,
      options.outbound,
    );
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('timeout')), START_TIMEOUT_MS);
        supervisor.readyListener = () => {
          clearTimeout(timer);
          resolve();
        };
        supervisor.onGone(() => {
          clearTimeout(timer);
          reject(new Error('exited'));
        });
      });
    } catch (err: unknown) {
      supervisor.kill();
      const said = startFailureDetail(Buffer.concat(stderr).toString('utf8'));
      throw new AppError(
        'sandbox_error',
        `The sandbox could not start: its supervisor needs Python 3 inside the sandbox (LOCAL_SANDBOX_PYTHON)${said}.`,
        { cause: err },
      );
    } finally {
      supervisor.readyListener = undefined;
    }
    // Its own complaints after start-up are not ours to keep.
    child.stderr?.off('data', collect).resume();
    supervisor.idleFromNow();
    return supervisor;
  }

  private readyListener: (() => void) | undefined;

  /** True until the supervisor exits. */
  get alive(): boolean {
    return !this.gone;
  }

  /** About to be used: the idle countdown starts again (a spawn after a few awaits finds it still there). */
  touch(): void {
    if (!this.gone && this.processes.size === 0 && this.streams.size === 0) this.idleFromNow();
  }

  /** Starts a process; listen for `spawn` or `error` on it. */
  spawn(request: SpawnRequest): SandboxProcess {
    const key = this.nextKey++;
    const proc = new SandboxProcess(this, key, request);
    if (this.gone) {
      queueMicrotask(() => proc.fail(goneError()));
      return proc;
    }
    this.processes.set(key, proc);
    clearTimeout(this.idleTimer);
    this.send(
      Kind.Spawn,
      key,
      0,
      Buffer.from(
        JSON.stringify({
          argv: request.argv,
          cwd: request.cwd,
          env: request.env,
          stdin: request.stdin === true,
          channel: request.channel === true,
        }),
      ),
    );
    return proc;
  }

  /** True when something inside the sandbox accepts TCP connections on 127.0.0.1:`port` within a second. */
  probe(port: number): Promise<boolean> {
    if (this.gone) return Promise.resolve(false);
    const key = this.nextKey++;
    return new Promise((resolve) => {
      this.probes.set(key, resolve);
      this.send(Kind.Probe, key, 0, Buffer.from(String(port)));
    });
  }

  /**
   * Opens a TCP connection to 127.0.0.1:`port` inside the sandbox, carried by the supervisor (a preview's
   * forwarded connection); listen for `connect` or `refused` on it. An open stream keeps the supervisor from
   * going idle.
   */
  connect(port: number): SandboxStream {
    const stream = this.streams.open(this.nextKey++, port);
    if (this.gone) queueMicrotask(() => this.streams.endAll());
    else clearTimeout(this.idleTimer);
    return stream;
  }

  /** Kills the supervisor and, with it, every process of the sandbox it started. */
  kill(): void {
    if (this.child.pid !== undefined) signalGroup(this.child.pid, 'SIGKILL');
    this.end();
  }

  /** Calls `listener` once the supervisor is gone. */
  onGone(listener: () => void): void {
    if (this.gone) listener();
    else this.goneListeners.push(listener);
  }

  /** @internal A frame to the supervisor. */
  send(kind: number, key: number, fd: number, payload?: Buffer): void {
    const stdin = this.child.stdin;
    if (this.gone || stdin === null) return;
    const header = encodeFrameHeader(kind, key, fd, payload?.length ?? 0);
    if (payload === undefined || payload.length === 0) stdin.write(header);
    else {
      // Header and payload in one write of the socket, without copying the payload behind the header.
      stdin.cork();
      stdin.write(header);
      stdin.write(payload);
      process.nextTick(() => stdin.uncork());
    }
    if (this.backlogged()) this.watchBacklog();
  }

  /** @internal True while its stdin holds more than MAX_STDIN_BACKLOG_BYTES: it is not reading. */
  backlogged(): boolean {
    return (this.child.stdin?.writableLength ?? 0) > MAX_STDIN_BACKLOG_BYTES;
  }

  /** A supervisor whose backlog stays high (stopped, or taken over and not reading) is killed. */
  private watchBacklog(): void {
    if (this.stallTimer !== undefined) return;
    let before = this.child.stdin?.writableLength ?? 0;
    const check = (): void => {
      this.stallTimer = undefined;
      if (this.gone || !this.backlogged()) return;
      const now = this.child.stdin?.writableLength ?? 0;
      if (now >= before) {
        this.kill();
        return;
      }
      before = now;
      this.stallTimer = setTimeout(check, this.unresponsiveMs);
      this.stallTimer.unref();
    };
    this.stallTimer = setTimeout(check, this.unresponsiveMs);
    this.stallTimer.unref();
  }

  private read(chunk: Buffer): void {
    this.pending.push(chunk);
    let buffer = this.pending.length === 1 ? chunk : Buffer.concat(this.pending);
    while (buffer.length >= HEADER_BYTES) {
      const size = buffer.readUInt32BE(0);
      if (size > MAX_FRAME_BYTES) {
        this.kill();
        return;
      }
      if (buffer.length < HEADER_BYTES + size) break;
      this.frame(
        buffer.readUInt8(4),
        buffer.readUInt32BE(5),
        buffer.readUInt8(9),
        buffer.subarray(HEADER_BYTES, HEADER_BYTES + size),
      );
      // A frame that broke a rule killed it: nothing after it counts.
      if (this.gone) return;
      buffer = buffer.subarray(HEADER_BYTES + size);
    }
    this.pending = buffer.length === 0 ? [] : [buffer];
  }

  private frame(kind: number, key: number, fd: number, payload: Buffer): void {
    if (kind === Kind.Probed) {
      const resolve = this.probes.get(key);
      this.probes.delete(key);
      resolve?.(payload.toString() === '1');
      return;
    }
    if (kind === Kind.Spawned && key === 0) {
      this.readyListener?.();
      return;
    }
    if (this.streams.receive(kind, key, payload)) return;
    const proc = this.processes.get(key);
    if (proc === undefined) return;
    if (kind === Kind.Ack) {
      const bytes = Number(payload.toString('latin1'));
      if (Number.isSafeInteger(bytes) && bytes > 0) proc.acknowledged(fd, bytes);
    } else if (kind === Kind.Data) proc.deliver(fd, Buffer.from(payload));
    else if (kind === Kind.Eof) proc.deliver(fd, undefined);
    else if (kind === Kind.Spawned) this.spawned(proc, payload);
    else if (kind === Kind.Exit) {
      this.forget(key);
      const { code, signal } = parseJson(payload) as { code?: unknown; signal?: unknown };
      proc.finish(
        typeof code === 'number' ? code : null,
        typeof signal === 'string' && signal in osConstants.signals ? (signal as NodeJS.Signals) : null,
      );
    }
  }

  private spawned(proc: SandboxProcess, payload: Buffer): void {
    const said = parseJson(payload) as { pid?: unknown; error?: unknown; message?: unknown };
    if (typeof said.pid === 'number') {
      proc.pid = said.pid;
      proc.emit('spawn');
      return;
    }
    this.forget(proc.key);
    const err = Object.assign(new Error(typeof said.message === 'string' ? said.message : 'spawn failed'), {
      code: typeof said.error === 'string' ? said.error : 'EIO',
    });
    proc.fail(err);
  }

  private forget(key: number): void {
    this.processes.delete(key);
    this.touch();
  }

  /**
   * Goes after idleMs with nothing of its own running. What a process left running outside its group (setsid,
   * a daemon) goes with it, as it would with the sandbox.
   */
  private idleFromNow(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.processes.size === 0 && this.streams.size === 0) this.kill();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private end(): void {
    if (this.gone) return;
    this.gone = true;
    clearTimeout(this.idleTimer);
    clearTimeout(this.stallTimer);
    for (const proc of this.processes.values()) {
      if (proc.pid === undefined) proc.fail(goneError());
      else proc.finish(null, 'SIGKILL');
    }
    this.processes.clear();
    for (const resolve of this.probes.values()) resolve(false);
    this.probes.clear();
    this.streams.endAll();
    for (const listener of this.goneListeners.splice(0)) listener();
  }
}

function goneError(): Error {
  return Object.assign(new Error('the sandbox supervisor exited'), { code: 'ESRCH' });
}

function parseJson(payload: Buffer): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(payload.toString('utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
