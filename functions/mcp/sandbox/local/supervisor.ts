/**
 * A sandbox's supervisor, from the server's side: the one process started through the launcher (cgroups,
 * rlimits, the sandbox's user, bubblewrap), which then starts each process of the sandbox (commands,
 * background processes, scripts, the Python kernel) with a fork inside it, and relays their descriptors
 * over its stdin/stdout (supervisor-source.ts has the frames), and carries a preview's connections into the
 * sandbox's network (supervisor-streams.ts). Everything it says comes from inside the sandbox: frames are
 * bounded and checked, and a supervisor that misbehaves is killed.
 */
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Duplex, PassThrough, Writable } from 'node:stream';
import { constants as osConstants } from 'node:os';

import { AppError } from '../../errors';
import type { LaunchSpec } from './launch';
import { signalGroup, spawnGroup, startFailureDetail, toSpawnError } from './process-group';
import {
  encodeFrame,
  HEADER_BYTES,
  Kind,
  MAX_FRAME_BYTES,
  STREAM_CHUNK_BYTES,
  STREAM_WINDOW_BYTES,
} from './supervisor-frames';
import { type SandboxStream, StreamTable } from './supervisor-streams';

/**
 * Bytes queued for the supervisor's stdin past which streams and process inputs hold what they would send (it is
 * not reading: stopped, or taken over); a window alone would not bound this, since the supervisor says how much
 * it took. A backlog that stays above it for UNRESPONSIVE_MS without shrinking gets the supervisor killed.
 */
const MAX_STDIN_BACKLOG_BYTES = 1024 * 1024;
/** Time for the supervisor to start and say it is ready. */
const START_TIMEOUT_MS = 15_000;
/** Time between SIGTERM and SIGKILL for a process group. */
const KILL_GRACE_MS = 500;
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
}

/** What to start inside the sandbox. */
export interface SpawnRequest {
  /** The program and its arguments (found on the sandbox's PATH). */
  readonly argv: readonly string[];
  /** Working directory as the sandbox sees it. */
  readonly cwd: string;
  /** The whole environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Give the process a stdin to write to (else /dev/null). */
  readonly stdin?: boolean;
  /** A socket on the process's fd 3, both ways (the Python kernel's control channel). */
  readonly channel?: boolean;
}

/**
 * One process of the sandbox, the leader of its own process group. Events: `spawn`; `error` (it could not
 * start); `exit` and then `close` (code, signal), both once it exited and its output was read.
 */
export class SandboxProcess extends EventEmitter {
  readonly stdin: Writable | null;
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  /** fd 3, when asked for. */
  readonly channel: Duplex | null;
  /** Its pid inside the sandbox (set once started). */
  pid: number | undefined;
  /** True once it exited (or never started). */
  ended = false;
  private channelIn: PassThrough | undefined;
  /** Per output fd (1–3): bytes received and not yet acknowledged (at most the window, or the supervisor is killed). */
  private readonly held = new Map<number, number>();
  /** Output fds whose acknowledgement waits until their stream drains (its reader is slower than the process). */
  private readonly draining = new Set<number>();
  /** Per input fd (0, 3): bytes sent and not yet acknowledged by the supervisor (written into the process). */
  private readonly inFlight = new Map<number, number>();
  /** Per input fd: the rest of a write waiting for room in its window. */
  private readonly blocked = new Map<number, () => void>();

  constructor(
    private readonly supervisor: Supervisor,
    readonly key: number,
    request: SpawnRequest,
  ) {
    super();
    this.stdin = request.stdin === true ? this.writerFor(0) : null;
    if (request.channel === true) {
      const incoming = new PassThrough();
      const out = this.writerFor(3);
      this.channelIn = incoming;
      this.channel = new Duplex({
        read: () => undefined,
        write: (chunk: Buffer, _enc, done) => out.write(chunk, done),
        final: (done) => out.end(done),
      });
      incoming.on('data', (chunk: Buffer) => this.channel?.push(chunk));
      incoming.on('end', () => this.channel?.push(null));
    } else {
      this.channel = null;
    }
  }

  /** Sends `signal` to the process's group. */
  signal(signal: NodeJS.Signals): void {
    if (this.ended) return;
    this.supervisor.send(Kind.Signal, this.key, 0, Buffer.from(String(osConstants.signals[signal])));
  }

  /**
   * SIGTERM to the group, then SIGKILL after `graceMs` unless it has exited; a supervisor that does not
   * report it gone soon after is killed, and the process with it.
   */
  stop(graceMs = KILL_GRACE_MS): void {
    if (this.ended) return;
    this.signal(graceMs <= 0 ? 'SIGKILL' : 'SIGTERM');
    const timers = [
      ...(graceMs <= 0 ? [] : [setTimeout(() => this.signal('SIGKILL'), graceMs)]),
      setTimeout(() => this.supervisor.kill(), Math.max(graceMs, 0) + this.supervisor.unresponsiveMs),
    ];
    for (const timer of timers) timer.unref();
    const clear = (): void => timers.forEach(clearTimeout);
    this.once('exit', clear);
    this.once('error', clear);
  }

  /**
   * Output of fd `fd` arrived (1, 2 or 3), or it ended (`undefined`). It is acknowledged once its stream took it
   * without going over its high-water mark, else when the stream drains: a reader slower than the process holds
   * the process (its pipe fills), never the server's memory. More than the window unacknowledged breaks the rule.
   */
  deliver(fd: number, data: Buffer | undefined): void {
    const stream = this.outputStream(fd);
    if (stream === undefined || stream.writableEnded) return;
    if (data === undefined) {
      stream.end();
      return;
    }
    const held = (this.held.get(fd) ?? 0) + data.length;
    this.held.set(fd, held);
    if (held > STREAM_WINDOW_BYTES) {
      this.supervisor.kill();
      return;
    }
    if (stream.write(data)) this.acknowledge(fd);
    else if (!this.draining.has(fd)) {
      this.draining.add(fd);
      stream.once('drain', () => {
        this.draining.delete(fd);
        this.acknowledge(fd);
      });
    }
  }

  /** @internal The supervisor wrote `bytes` of input fd `fd` into the process: that many more may go. */
  acknowledged(fd: number, bytes: number): void {
    const inFlight = this.inFlight.get(fd);
    if (inFlight === undefined) return;
    this.inFlight.set(fd, Math.max(0, inFlight - bytes));
    this.unblock(fd);
  }

  /** @internal The supervisor's stdin drained: input held back by its backlog may go. */
  drained(): void {
    for (const fd of [...this.blocked.keys()]) this.unblock(fd);
  }

  private outputStream(fd: number): PassThrough | undefined {
    return fd === 1 ? this.stdout : fd === 2 ? this.stderr : fd === 3 ? this.channelIn : undefined;
  }

  private acknowledge(fd: number): void {
    const held = this.held.get(fd) ?? 0;
    if (held === 0 || this.ended) return;
    this.held.set(fd, 0);
    this.supervisor.send(Kind.Ack, this.key, fd, Buffer.from(String(held)));
  }

  private unblock(fd: number): void {
    const resume = this.blocked.get(fd);
    if (resume === undefined) return;
    this.blocked.delete(fd);
    resume();
  }

  /**
   * Sends `chunk` to input fd `fd` in pieces, each only while the fd's window has room and the supervisor's
   * stdin is not backed up; `done` once all of it went (or the process ended: the rest is dropped).
   */
  private sendInput(fd: number, chunk: Buffer, done: (err?: Error | null) => void): void {
    let offset = 0;
    const next = (): void => {
      while (offset < chunk.length) {
        if (this.ended) {
          // The process is gone: the rest goes nowhere (a writer that must know looks at `ended`).
          done();
          return;
        }
        const room = STREAM_WINDOW_BYTES - (this.inFlight.get(fd) ?? 0);
        if (room <= 0 || this.supervisor.backlogged()) {
          this.blocked.set(fd, next);
          return;
        }
        const part = chunk.subarray(offset, offset + Math.min(room, STREAM_CHUNK_BYTES));
        offset += part.length;
        this.inFlight.set(fd, (this.inFlight.get(fd) ?? 0) + part.length);
        this.supervisor.send(Kind.Data, this.key, fd, part);
      }
      done();
    };
    next();
  }

  /** It exited (or the supervisor went, taking it along). */
  finish(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.end()) return;
    this.emit('exit', code, signal);
    // Like a child process's: once everything it wrote has been read (a stream nobody reads is drained).
    const streams = [this.stdout, this.stderr, ...(this.channelIn === undefined ? [] : [this.channelIn])];
    void Promise.all(
      streams.map((stream) =>
        stream.readableEnded
          ? undefined
          : new Promise<void>((resolve) => {
              stream.once('end', resolve);
              if (stream.readableFlowing !== true) stream.resume();
            }),
      ),
    ).then(() => this.emit('close', code, signal));
  }

  /** It could not start. */
  fail(err: Error): void {
    if (this.end() && this.listenerCount('error') > 0) this.emit('error', err);
  }

  /** Marks it ended and closes its streams; false when it already was. */
  private end(): boolean {
    if (this.ended) return false;
    this.ended = true;
    for (const fd of [1, 2, 3]) this.deliver(fd, undefined);
    // Writes waiting for room end: their input goes nowhere now.
    for (const fd of [...this.blocked.keys()]) this.unblock(fd);
    this.stdin?.destroy();
    return true;
  }

  private writerFor(fd: number): Writable {
    this.inFlight.set(fd, 0);
    return new Writable({
      write: (chunk: Buffer, _enc, done) => this.sendInput(fd, chunk, done),
      final: (done) => {
        if (!this.ended) this.supervisor.send(Kind.Eof, this.key, fd);
        done();
      },
    });
  }
}

/** A running supervisor. */
export class Supervisor {
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
  ) {
    this.streams = new StreamTable({
      send: (kind, key, fd, payload) => this.send(kind, key, fd, payload),
      backlogged: () => this.backlogged(),
      misbehaved: () => this.kill(),
      settled: () => this.touch(),
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
    const supervisor = new Supervisor(child, options.unresponsiveMs ?? UNRESPONSIVE_MS, options.idleMs ?? IDLE_MS);
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
    if (this.gone) return;
    this.child.stdin?.write(encodeFrame(kind, key, fd, payload));
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
