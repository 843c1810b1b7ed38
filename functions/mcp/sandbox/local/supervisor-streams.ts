/**
 * Forwarded TCP connections (streams) through a sandbox's supervisor, from the server's side: the supervisor
 * connects to 127.0.0.1:<port> inside the sandbox's own network and relays the bytes as frames
 * (supervisor-frames.ts), so the server never enters the sandbox's network and the sandbox never holds a host
 * socket. What the supervisor says comes from inside the sandbox: bytes it sends beyond the window are a broken
 * rule (the supervisor is killed, as for an oversized frame), and frames for keys that are not open streams are
 * ignored, as frames for unknown processes are.
 */
import { EventEmitter } from 'node:events';

import { ACCEPTED_KEY, Kind, MAX_ACCEPTED_STREAMS, STREAM_CHUNK_BYTES, STREAM_WINDOW_BYTES } from './supervisor-frames';

/** What a stream needs of its supervisor. */
export interface StreamLink {
  send(kind: number, key: number, fd: number, payload?: Buffer): void;
  /** True while the supervisor's stdin holds more than it should (it is not reading): hold what would go there. */
  backlogged(): boolean;
  /** It sent more than the window allows. */
  misbehaved(): void;
  /** The last open stream ended (the supervisor may go idle). */
  settled(): void;
  /** A process of the sandbox connected to the egress listener: the stream is open. */
  accepted?(stream: SandboxStream): void;
}

/**
 * One TCP connection inside the sandbox, carried by its supervisor. Events: `connect`; `refused` (an errno name:
 * nothing accepts there, or the supervisor went); `data` (a Buffer: call `consumed` once it was passed on, or no
 * more comes after STREAM_WINDOW_BYTES); `end` (the sandbox's side sends no more); `drain` (after `write`
 * returned false, writing may go on); `close` (over both ways, after `refused` too; once).
 */
export class SandboxStream extends EventEmitter {
  private state: 'connecting' | 'open' | 'closed' = 'connecting';
  /** Bytes sent into the sandbox that the supervisor has not acknowledged yet. */
  private unacked = 0;
  /** Bytes received from the sandbox that were not consumed yet. */
  private held = 0;
  private sentEof = false;
  private gotEof = false;
  private wantsDrain = false;

  constructor(
    private readonly link: StreamLink,
    readonly key: number,
    private readonly forget: (stream: SandboxStream) => void,
    /** Accepted from inside: open from the start. */
    open = false,
  ) {
    super();
    if (open) this.state = 'open';
  }

  /** True once over (closed, refused, or ended both ways). */
  get closed(): boolean {
    return this.state === 'closed';
  }

  /**
   * Sends bytes into the sandbox (allowed while connecting: the supervisor holds them until connected). False
   * when the window is full or the supervisor's stdin is backed up: wait for `drain`.
   */
  write(chunk: Buffer): boolean {
    if (this.state === 'closed' || this.sentEof) return false;
    for (let offset = 0; offset < chunk.length; offset += STREAM_CHUNK_BYTES) {
      const part = chunk.subarray(offset, offset + STREAM_CHUNK_BYTES);
      this.unacked += part.length;
      this.link.send(Kind.Data, this.key, 0, part);
    }
    if (this.mayWrite()) return true;
    this.wantsDrain = true;
    return false;
  }

  /** No more bytes go into the sandbox (a half close: the sandbox's side may still send). */
  end(): void {
    if (this.state === 'closed' || this.sentEof) return;
    this.sentEof = true;
    this.link.send(Kind.Eof, this.key, 0);
    this.finishIfDone();
  }

  /** Ends the stream at once, both ways. */
  destroy(): void {
    if (this.state === 'closed') return;
    this.link.send(Kind.Close, this.key, 0);
    this.close();
  }

  /** `bytes` of what came out of the sandbox were passed on: the supervisor may send that many more. */
  consumed(bytes: number): void {
    if (this.state === 'closed' || bytes <= 0) return;
    const n = Math.min(bytes, this.held);
    this.held -= n;
    this.link.send(Kind.Ack, this.key, 0, Buffer.from(String(n)));
  }

  /** @internal A frame from the supervisor for this stream. */
  receive(kind: number, payload: Buffer): void {
    if (this.state === 'closed') return;
    if (kind === Kind.Connected) {
      if (this.state !== 'connecting') return;
      if (payload.length === 0) {
        this.state = 'open';
        this.emit('connect');
        return;
      }
      // An errno name, shown as such: keep it short and plain.
      this.emit('refused', /^E[A-Z0-9]{1,20}$/.test(payload.toString('latin1')) ? payload.toString('latin1') : 'EIO');
      this.close();
    } else if (kind === Kind.Data) {
      if (this.state !== 'open' || this.gotEof) return;
      this.held += payload.length;
      if (this.held > STREAM_WINDOW_BYTES) {
        this.link.misbehaved();
        return;
      }
      this.emit('data', Buffer.from(payload));
    } else if (kind === Kind.Eof) {
      if (this.state !== 'open' || this.gotEof) return;
      this.gotEof = true;
      this.emit('end');
      this.finishIfDone();
    } else if (kind === Kind.Ack) {
      const n = Number(payload.toString('latin1'));
      if (!Number.isSafeInteger(n) || n <= 0) return;
      this.unacked = Math.max(0, this.unacked - n);
      this.drained();
    } else if (kind === Kind.Close) {
      this.close();
    }
  }

  /** @internal The supervisor's stdin drained, or an ACK came: writing may go on. */
  drained(): void {
    if (this.wantsDrain && this.state !== 'closed' && this.mayWrite()) {
      this.wantsDrain = false;
      this.emit('drain');
    }
  }

  /** @internal The supervisor went (or could not take the stream). */
  gone(): void {
    if (this.state === 'closed') return;
    if (this.state === 'connecting') this.emit('refused', 'ESRCH');
    this.close();
  }

  private mayWrite(): boolean {
    return this.unacked < STREAM_WINDOW_BYTES && !this.link.backlogged();
  }

  private finishIfDone(): void {
    if (this.sentEof && this.gotEof) this.close();
  }

  private close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.forget(this);
    this.emit('close');
  }
}

/** A supervisor's open streams. */
export class StreamTable {
  private readonly streams = new Map<number, SandboxStream>();

  constructor(private readonly link: StreamLink) {}

  get size(): number {
    return this.streams.size;
  }

  /** Asks the supervisor to connect to 127.0.0.1:`port` in the sandbox; the stream says how it went. */
  open(key: number, port: number): SandboxStream {
    const stream = new SandboxStream(this.link, key, (s) => this.forget(s));
    this.streams.set(key, stream);
    this.link.send(Kind.Connect, key, 0, Buffer.from(String(port)));
    return stream;
  }

  /**
   * A frame from the supervisor. True when it was a stream's (handled, or ignored when no such stream is open);
   * false for DATA, EOF and ACK of a key that is not a stream (a process's).
   */
  receive(kind: number, key: number, payload: Buffer): boolean {
    if (kind === Kind.Accepted) {
      this.accept(key);
      return true;
    }
    const stream = this.streams.get(key);
    if (kind === Kind.Connected || kind === Kind.Close) {
      stream?.receive(kind, payload);
      return true;
    }
    if ((kind !== Kind.Data && kind !== Kind.Eof && kind !== Kind.Ack) || stream === undefined) return false;
    stream.receive(kind, payload);
    return true;
  }

  /**
   * A connection from inside to the egress listener. A key the supervisor may not draw, one in use, or one past
   * MAX_ACCEPTED_STREAMS is closed at once; so is every one when nothing takes them.
   */
  private accept(key: number): void {
    if ((key & ACCEPTED_KEY) === 0 || this.streams.has(key)) return;
    let accepted = 0;
    for (const open of this.streams.keys()) if ((open & ACCEPTED_KEY) !== 0) accepted++;
    if (this.link.accepted === undefined || accepted >= MAX_ACCEPTED_STREAMS) {
      this.link.send(Kind.Close, key, 0);
      return;
    }
    const stream = new SandboxStream(this.link, key, (s) => this.forget(s), true);
    this.streams.set(key, stream);
    this.link.accepted(stream);
  }

  /** The supervisor's stdin drained: streams held back by it may write again. */
  drained(): void {
    for (const stream of [...this.streams.values()]) stream.drained();
  }

  /** The supervisor is gone: every stream ends. */
  endAll(): void {
    for (const stream of [...this.streams.values()]) stream.gone();
    this.streams.clear();
  }

  private forget(stream: SandboxStream): void {
    if (this.streams.get(stream.key) !== stream) return;
    this.streams.delete(stream.key);
    if (this.streams.size === 0) this.link.settled();
  }
}
