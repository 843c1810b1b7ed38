/**
 * One process of a sandbox as the server sees it: started by the sandbox's supervisor (supervisor.ts), which
 * relays its descriptors in frames. Output is acknowledged within its window, input sent within the
 * supervisor's; a supervisor that sends past a window is killed.
 */
import { EventEmitter } from 'node:events';
import { constants as osConstants } from 'node:os';
import { Duplex, PassThrough, Writable } from 'node:stream';

import { Kind, STREAM_CHUNK_BYTES, STREAM_WINDOW_BYTES } from './supervisor-frames';

/** Time between SIGTERM and SIGKILL for a process group. */
const KILL_GRACE_MS = 500;

/** What a process needs of the supervisor that carries it. */
export interface ProcessCarrier {
  /** How long a stopped process may take to be reported gone before the supervisor counts as stuck. */
  readonly unresponsiveMs: number;
  /** Sends a frame to the supervisor. */
  send(kind: number, key: number, fd: number, payload?: Buffer): void;
  /** True while the supervisor's stdin holds too much: it is not reading. */
  backlogged(): boolean;
  /** Kills the supervisor, and every process of the sandbox with it. */
  kill(): void;
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
    private readonly supervisor: ProcessCarrier,
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
