/**
 * One connection of a preview, from accept to close: the HTTP front. What the client sends is framed
 * (request-framing.ts) and every request head judged (preview-auth.ts) before any byte of it goes into the
 * sandbox; the first one admitted asks for the sandbox's side (a stream through its supervisor), and the two are
 * pumped into each other with the stream's window (supervisor-streams.ts) holding each way. After a request that
 * upgraded the connection (a WebSocket) the client's bytes pass unread. What the sandbox sends is never read.
 *
 * A refusal before anything went in is answered at once. A refusal of a later request on the connection
 * (keep-alive, pipelining) must not cut into the answers of the requests before it, which the front does not
 * read: the refused request never goes in, the sandbox's side is half-closed (its app sees the client end), what
 * the app still sends reaches the client, and the refusal follows once the app ended its side, within
 * PREVIEW_DRAIN_MS (else the connection just closes). Every answer closes the connection, and what the client
 * still sends is read and dropped for LINGER_MS, so that closing does not reset the answer away.
 */
import type { Socket } from 'node:net';

import { judgeHead, type PreviewGate, type PreviewStatus, toAnswer } from './preview-auth';
import { PREVIEW_MAX_HEAD_BYTES, RequestFramer } from '../../request-framing';
import type { SandboxStream } from './supervisor-streams';

/** How long a new connection may take to send its first request's head, and any later head once begun (then 408). */
export const PREVIEW_HEAD_TIMEOUT_MS = 10_000;
/** How long a refused later request waits for the app to finish the answers before it and end its side. */
export const PREVIEW_DRAIN_MS = 10_000;
/** How long a connection stays open after its answer, dropping what the client still sends. */
const LINGER_MS = 2_000;

/** Starts a timer; the returned function cancels it. Injected by tests. */
export type StartTimer = (ms: number, fire: () => void) => () => void;

export const REAL_TIMER: StartTimer = (ms, fire) => {
  const timer = setTimeout(fire, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export interface PreviewConnectionOptions {
  /** What its requests must show. */
  readonly gate: PreviewGate;
  /** The sandbox's side, asked for once, when the first request is admitted; undefined when no supervisor runs. */
  readonly connect: () => Promise<SandboxStream | undefined>;
  /** @default PREVIEW_MAX_HEAD_BYTES */
  readonly maxHeadBytes?: number;
  /** @default PREVIEW_HEAD_TIMEOUT_MS */
  readonly headTimeoutMs?: number;
  /** @default setTimeout, unref'd */
  readonly timer?: StartTimer;
}

/** Serves `socket` (accepted paused, with allowHalfOpen) as a preview connection until it closes. */
export function servePreviewConnection(socket: Socket, options: PreviewConnectionOptions): void {
  new PreviewConnection(socket, options).start();
}

class PreviewConnection {
  private readonly framer: RequestFramer;
  private readonly timer: StartTimer;
  /** The sandbox's side, once asked for (`asked`) and given. */
  private stream: SandboxStream | undefined;
  private asked = false;
  /** Bytes for the sandbox while its side is being asked for. */
  private readonly queued: Buffer[] = [];
  /** The client ended its side. */
  private clientEnded = false;
  /** Nothing more goes in: a request was refused (its answer is `owed` until the app ended its side) or answered. */
  private refused = false;
  private owed: Buffer | undefined;
  private answered = false;
  /** Whether the first request was a HEAD (a 502 for it then has no body). */
  private firstBodyless = false;
  private stopHeadTimer: (() => void) | undefined;
  private stopDrainTimer: (() => void) | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly options: PreviewConnectionOptions,
  ) {
    this.framer = new RequestFramer(options.maxHeadBytes ?? PREVIEW_MAX_HEAD_BYTES);
    this.timer = options.timer ?? REAL_TIMER;
  }

  start(): void {
    const { socket } = this;
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.once('end', () => this.clientEnd());
    socket.once('close', () => {
      this.stopHeadTimer?.();
      this.stopDrainTimer?.();
      this.stream?.destroy();
    });
    this.headDeadline(true);
    socket.resume();
  }

  private read(chunk: Buffer): void {
    // Refused: what the client still sends is dropped.
    if (this.refused) return;
    const out: Buffer[] = [];
    for (const part of this.framer.push(chunk)) {
      if (part.kind === 'bytes') {
        out.push(part.bytes);
        continue;
      }
      this.send(out.splice(0));
      if (part.kind === 'bad') return this.refuse(part.status);
      const verdict = judgeHead(part.head, this.options.gate);
      if (verdict.kind === 'answer') return this.refuse(verdict.status, verdict.headers, verdict.bodyless);
      out.push(verdict.head);
      if (!this.asked) {
        this.firstBodyless = part.head.method === 'HEAD';
        this.ask();
      }
    }
    this.send(out);
    this.headDeadline(false);
  }

  /** The first head's deadline runs from the start; a later one's from its first byte. */
  private headDeadline(first: boolean): void {
    const running = this.stopHeadTimer !== undefined;
    const due = first || (this.asked ? this.framer.midHead : true);
    if (due && !running)
      this.stopHeadTimer = this.timer(this.options.headTimeoutMs ?? PREVIEW_HEAD_TIMEOUT_MS, () => this.refuse(408));
    if (!due && running) {
      this.stopHeadTimer?.();
      this.stopHeadTimer = undefined;
    }
  }

  /** Asks for the sandbox's side; the client is not read until it is connected. */
  private ask(): void {
    this.asked = true;
    this.socket.pause();
    this.options.connect().then(
      (stream) => (stream === undefined ? this.unreachable() : this.attach(stream)),
      () => this.unreachable(),
    );
  }

  private attach(stream: SandboxStream): void {
    const { socket } = this;
    if (socket.destroyed) {
      stream.destroy();
      return;
    }
    // Refused (or the supervisor gone) before it was handed over.
    if (stream.closed) return this.unreachable();
    this.stream = stream;
    stream.once('connect', () => socket.resume());
    // Nothing was sent to the client yet: it can still be told why.
    stream.once('refused', () => this.unreachable());
    stream.on('drain', () => socket.resume());
    stream.on('data', (chunk: Buffer) => socket.write(chunk, () => stream.consumed(chunk.length)));
    stream.once('end', () => {
      if (this.owed !== undefined) this.answer(this.owed);
      else socket.end();
    });
    // Over both ways (or reset inside): what was written still reaches the client, then the socket goes.
    stream.once('close', () => {
      if (socket.destroyed || this.answered) return;
      if (!socket.writableEnded) socket.end();
      if (socket.writableFinished) socket.destroy();
      else socket.once('finish', () => socket.destroy());
    });
    this.send(this.queued.splice(0));
    if (this.refused || this.clientEnded) stream.end();
  }

  /** Into the sandbox (or queued until its side is given); the client is paused while the stream's window is full. */
  private send(parts: Buffer[]): void {
    if (parts.length === 0) return;
    const bytes = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
    if (this.stream === undefined) this.queued.push(bytes);
    else if (!this.stream.write(bytes)) this.socket.pause();
  }

  private clientEnd(): void {
    this.clientEnded = true;
    if (this.refused) return;
    // Ended in the middle of a head: it never goes in.
    if (this.framer.midHead) return this.refuse(400);
    if (!this.asked) {
      // Nothing to say to a client that sent nothing.
      this.stopHeadTimer?.();
      this.socket.destroy();
      return;
    }
    this.stream?.end();
  }

  /** Refuses the request being read: answered now when nothing went in yet, else once the app ended its side. */
  private refuse(status: PreviewStatus, headers: readonly string[] = [], bodyless = false): void {
    if (this.refused) return;
    this.refused = true;
    this.stopHeadTimer?.();
    this.stopHeadTimer = undefined;
    const answer = toAnswer(status, headers, bodyless);
    if (!this.asked) return this.answer(answer);
    this.owed = answer;
    this.stream?.end();
    // Read (and dropped) meanwhile: a client that still sends must not stall the app's answers.
    this.socket.resume();
    this.stopDrainTimer = this.timer(PREVIEW_DRAIN_MS, () => {
      this.stream?.destroy();
      this.socket.end();
    });
  }

  /** The sandbox's side could not be had; nothing came from it, so the client is told. */
  private unreachable(): void {
    if (this.answered || this.socket.destroyed) return;
    this.refused = true;
    this.answer(toAnswer(502, [], this.firstBodyless));
  }

  /** Writes a closing answer; what the client still sends is read and dropped for a while. */
  private answer(bytes: Buffer): void {
    const { socket } = this;
    if (this.answered || socket.destroyed) return;
    this.answered = true;
    this.stopDrainTimer?.();
    this.stream?.destroy();
    socket.end(bytes);
    socket.resume();
    const stop = this.timer(LINGER_MS, () => socket.destroy());
    socket.once('close', stop);
  }
}
