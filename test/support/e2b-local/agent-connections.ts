/**
 * The service's side of the egress connections a sandbox's agent carries (the `conn`, `cdata`, `cack`, `ceof`
 * and `cclose` frames of agent-protocol.ts): each one a Node Duplex for the egress proxy. Both windows hold: what
 * comes out of the sandbox is acknowledged only as the Duplex's reader takes it, and a write waits for the agent's
 * acknowledgement once CONNECTION_WINDOW_BYTES are in flight. What the agent says comes from inside the sandbox:
 * a connection that sends beyond its window is dropped, a `conn` beyond MAX_CONNECTIONS is answered with
 * `cclose`, and frames for keys that are not open are ignored.
 */
import { Duplex } from 'node:stream';

import { CONNECTION_CHUNK_BYTES, CONNECTION_WINDOW_BYTES, MAX_CONNECTIONS } from './agent-protocol';

type Send = (header: Record<string, unknown>, payload?: Buffer) => void;

/** One connection accepted inside the sandbox. */
class AgentConnection extends Duplex {
  /** Bytes written into the sandbox that the agent has not acknowledged. */
  private unacked = 0;
  /** Bytes from the sandbox not acknowledged yet. */
  private held = 0;
  /** Of those, the bytes pushed while the reader wanted no more: acknowledged when it reads again. */
  private owed = 0;
  /** A write held until the agent acknowledges enough. */
  private waiting: ((err?: Error | null) => void) | undefined;
  /** Whether the agent's side is gone (it sent `cclose`, or we did). */
  private over = false;

  constructor(
    readonly key: number,
    private readonly send: Send,
    private readonly forget: (connection: AgentConnection) => void,
  ) {
    super({ allowHalfOpen: true });
  }

  override _read(): void {
    if (this.owed === 0) return;
    const bytes = this.owed;
    this.owed = 0;
    this.acknowledge(bytes);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    if (this.over) return done(new Error('the sandbox side of the connection closed'));
    for (let offset = 0; offset < chunk.length; offset += CONNECTION_CHUNK_BYTES)
      this.send({ t: 'cdata', key: this.key }, chunk.subarray(offset, offset + CONNECTION_CHUNK_BYTES));
    this.unacked += chunk.length;
    if (this.unacked < CONNECTION_WINDOW_BYTES) done();
    else this.waiting = done;
  }

  override _final(done: (err?: Error | null) => void): void {
    if (!this.over) this.send({ t: 'ceof', key: this.key });
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    if (!this.over) this.send({ t: 'cclose', key: this.key });
    this.over = true;
    this.forget(this);
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(new Error('the connection closed'));
    done(err);
  }

  private acknowledge(bytes: number): void {
    this.held -= bytes;
    if (!this.over) this.send({ t: 'cack', key: this.key, n: bytes });
  }

  /** @internal A frame from the agent for this connection. */
  receive(kind: string, header: Record<string, unknown>, payload: Buffer): void {
    if (this.destroyed) return;
    switch (kind) {
      case 'cdata':
        if (this.readableEnded || payload.length === 0) return;
        this.held += payload.length;
        // More than the window allows: not the agent's protocol. The connection goes.
        if (this.held > CONNECTION_WINDOW_BYTES) {
          this.destroy();
          return;
        }
        if (this.push(Buffer.from(payload))) this.acknowledge(payload.length);
        else this.owed += payload.length;
        return;
      case 'cack': {
        const n = Number(header.n);
        if (!Number.isSafeInteger(n) || n <= 0) return;
        this.unacked = Math.max(0, this.unacked - n);
        if (this.waiting !== undefined && this.unacked < CONNECTION_WINDOW_BYTES) {
          const waiting = this.waiting;
          this.waiting = undefined;
          waiting();
        }
        return;
      }
      case 'ceof':
        this.push(null);
        return;
      case 'cclose':
        this.over = true;
        this.destroy();
        return;
    }
  }
}

/** A sandbox's open egress connections. */
export class ConnectionTable {
  private readonly open = new Map<number, AgentConnection>();

  constructor(
    private readonly send: Send,
    /** A new connection from inside: serve it (or destroy it). */
    private readonly accept: (connection: Duplex) => void,
  ) {}

  /** A frame from the agent: true when it was a connection's (handled, or ignored for a key not open). */
  receive(header: Record<string, unknown>, payload: Buffer): boolean {
    const kind = header.t;
    if (kind !== 'conn' && kind !== 'cdata' && kind !== 'cack' && kind !== 'ceof' && kind !== 'cclose') return false;
    const key = header.key;
    if (typeof key !== 'number' || !Number.isSafeInteger(key) || key <= 0) return true;
    if (kind === 'conn') {
      if (this.open.has(key) || this.open.size >= MAX_CONNECTIONS) {
        this.send({ t: 'cclose', key });
        return true;
      }
      const connection = new AgentConnection(key, this.send, (c) => {
        if (this.open.get(c.key) === c) this.open.delete(c.key);
      });
      connection.on('error', () => connection.destroy());
      this.open.set(key, connection);
      this.accept(connection);
      return true;
    }
    this.open.get(key)?.receive(kind, header, payload);
    return true;
  }

  /** The agent is gone: every connection ends. */
  closeAll(): void {
    for (const connection of [...this.open.values()]) connection.receive('cclose', {}, Buffer.alloc(0));
    this.open.clear();
  }
}
