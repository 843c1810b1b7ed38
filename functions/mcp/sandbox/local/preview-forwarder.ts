/**
 * A sandbox's previews on the host: for each sandbox port asked for, one TCP listener of the server's (on
 * LOCAL_SANDBOX_PREVIEW_HOST, 127.0.0.1 by default, an ephemeral port), whose connections are carried into the
 * sandbox's own network by its supervisor (Supervisor.connect). The server never joins that network and the
 * sandbox never gets a host socket: the kernel's namespaces stay the boundary, and all a sandbox's code sees is
 * a connection from its own 127.0.0.1.
 *
 * Bounded so that one sandbox cannot exhaust the server: at most PREVIEW_MAX_CONNECTIONS connections per
 * sandbox (later ones are closed at once), a connection holds at most a stream window of bytes each way
 * (supervisor-streams.ts), and at most PREVIEW_MAX_PORTS listeners per sandbox (the least recently asked for
 * without a connection makes room). A listener is reused by later calls for the same port, closed after
 * PREVIEW_IDLE_MS without a connection (the next call opens it again, on the same host port when it is still
 * free), and closed with everything it carries when the sandbox ends or is released.
 *
 * Its URLs carry a capability token (preview-token.ts), on loopback as on a public address: every request of every
 * connection must prove it holds one, or the cookie it is exchanged for, before any of its bytes is carried in
 * (preview-connection.ts, preview-auth.ts). With a host name per sandbox (`name`), its URLs name that instead of
 * the address, and requests must too.
 */
import { createServer, type Server, type Socket } from 'node:net';

import { type PreviewGate, PREVIEW_PARAM, previewCookieName } from './preview-auth';
import { REAL_TIMER, servePreviewConnection, type StartTimer } from './preview-connection';
import type { PreviewSigner } from './preview-token';
import type { Supervisor } from './supervisor';

/** Connections a sandbox's previews carry at once. */
export const PREVIEW_MAX_CONNECTIONS = 64;
/** Ports a sandbox's previews listen on at once (each holds a descriptor of the server's). */
export const PREVIEW_MAX_PORTS = 16;
/** How long a preview listener with no connection stays open. */
export const PREVIEW_IDLE_MS = 10 * 60_000;

export interface PreviewForwarderOptions {
  /** The address to listen on, named in the URLs unless `name` is given. */
  host: string;
  /**
   * The host name the URLs give, the sandbox's own (`<sandbox id>.<LOCAL_SANDBOX_PREVIEW_DOMAIN>`), which every
   * request must then name in its Host: a browser keeps cookies per host name, so the apps of two sandboxes never
   * share a jar. @default none: the URLs name `host`, and previews on one address share the browser's jar for it
   */
  name?: string;
  /**
   * The sandbox's supervisor while one runs. Never starts one: a new supervisor is a new network, where nothing
   * listens yet.
   */
  supervisor: () => Promise<Supervisor | undefined>;
  /** @default PREVIEW_MAX_CONNECTIONS */
  maxConnections?: number;
  /** @default PREVIEW_MAX_PORTS */
  maxPorts?: number;
  /** @default PREVIEW_IDLE_MS */
  idleMs?: number;
  /** How its URLs are signed and its requests admitted. */
  auth: PreviewAuth;
}

/** How a forwarder signs its URLs and admits requests (preview-auth.ts). */
export interface PreviewAuth {
  readonly signer: PreviewSigner;
  /** The sandbox's id: a token opens this sandbox's port only (a reset gives a new id). */
  readonly sandbox: string;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /** For tests: the header cap and deadline, and the timers (the fronts' deadlines, the listeners' idle time). */
  readonly maxHeadBytes?: number;
  readonly headTimeoutMs?: number;
  readonly timer?: StartTimer;
}

/** Every preview port of the sandbox carries connections: none can make room for another. */
export class PreviewPortsBusy extends Error {
  constructor(readonly maxPorts: number) {
    super(`all ${maxPorts} preview ports of the sandbox carry connections`);
  }
}

interface Listener {
  readonly port: number;
  readonly server: Server;
  readonly hostPort: number;
  /** The connections it accepted that are still open. */
  readonly sockets: Set<Socket>;
  /** Cancels the idle timer, while one runs. */
  cancelIdle?: () => void;
  /** Closed (idle, or to make room): the next call for its port opens another. */
  shut: boolean;
}

/** One sandbox's preview listeners. */
export class PreviewForwarder {
  /** By sandbox port, least recently asked for first (the order room is made in). */
  private readonly listeners = new Map<number, Promise<Listener>>();
  /** The listeners that are open, by sandbox port. */
  private readonly opened = new Map<number, Listener>();
  /** The host port each sandbox port was last served on, tried first when its listener opens again. */
  private readonly hostPorts = new Map<number, number>();
  private readonly sockets = new Set<Socket>();
  private readonly maxConnections: number;
  private readonly maxPorts: number;
  private readonly idleMs: number;
  private closed = false;

  constructor(private readonly options: PreviewForwarderOptions) {
    this.maxConnections = options.maxConnections ?? PREVIEW_MAX_CONNECTIONS;
    this.maxPorts = options.maxPorts ?? PREVIEW_MAX_PORTS;
    this.idleMs = options.idleMs ?? PREVIEW_IDLE_MS;
  }

  /** Connections carried now. */
  get connections(): number {
    return this.sockets.size;
  }

  /**
   * The URL that reaches the sandbox's `port`: its listener's, opened on the first call. With PREVIEW_MAX_PORTS
   * open, the least recently asked for that carries no connection is closed to make room (PreviewPortsBusy when
   * none is free).
   */
  async open(port: number): Promise<string> {
    if (this.closed) throw new Error('the sandbox has ended');
    let listening = this.listeners.get(port);
    if (listening === undefined) {
      this.makeRoom();
      listening = this.listen(port);
      const started = listening;
      started.catch(() => {
        if (this.listeners.get(port) === started) this.listeners.delete(port);
      });
    } else {
      this.listeners.delete(port);
    }
    // Last: the most recently asked for.
    this.listeners.set(port, listening);
    const listener = await listening;
    if (listener.shut) return this.open(port);
    // Asked for again: its idle time starts over.
    this.idleFromNow(listener);
    const { auth } = this.options;
    const token = auth.signer.mint('url', { sandbox: auth.sandbox, port }, auth.now());
    return `${this.origin(listener.hostPort)}/?${PREVIEW_PARAM}=${token}`;
  }

  /** Closes every listener and every connection they carry. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const listening of this.listeners.values())
      void listening.then(
        (listener) => this.shut(listener),
        () => undefined,
      );
    this.listeners.clear();
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  /** `http://<name or host>:<hostPort>`, as browsers write an origin (an IPv6 address in its short form). */
  private origin(hostPort: number): string {
    const { host, name } = this.options;
    const shown = name ?? (host.includes(':') ? `[${host}]` : host);
    return new URL(`http://${shown}:${hostPort}`).origin;
  }

  private makeRoom(): void {
    if (this.listeners.size < this.maxPorts) return;
    for (const port of this.listeners.keys()) {
      const listener = this.opened.get(port);
      if (listener !== undefined && listener.sockets.size === 0) {
        this.shut(listener);
        return;
      }
    }
    throw new PreviewPortsBusy(this.maxPorts);
  }

  private async listen(port: number): Promise<Listener> {
    // Paused until the sandbox's side is connected; half-closes pass through (an HTTP client may shut its side).
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: true });
    const preferred = this.hostPorts.get(port);
    await bind(server, this.options.host, preferred ?? 0).catch((err: unknown) => {
      if (preferred === undefined) throw err;
      return bind(server, this.options.host, 0);
    });
    const hostPort = (server.address() as { port: number }).port;
    const listener: Listener = { port, server, hostPort, sockets: new Set(), shut: false };
    if (this.closed) {
      server.close();
      throw new Error('the sandbox has ended');
    }
    this.opened.set(port, listener);
    this.hostPorts.delete(port);
    this.hostPorts.set(port, hostPort);
    // Remembered for the ports asked for lately, not for every port ever asked for.
    for (const old of this.hostPorts.keys()) {
      if (this.hostPorts.size <= this.maxPorts * 4) break;
      this.hostPorts.delete(old);
    }
    server.on('connection', (socket: Socket) => this.accept(listener, socket));
    server.on('error', () => undefined);
    return listener;
  }

  /** Stops listening (what it carries goes on: only close() or the end of each connection ends those). */
  private shut(listener: Listener): void {
    listener.shut = true;
    listener.cancelIdle?.();
    listener.server.close();
    if (this.opened.get(listener.port) === listener) {
      this.opened.delete(listener.port);
      this.listeners.delete(listener.port);
    }
  }

  private accept(listener: Listener, socket: Socket): void {
    socket.on('error', () => undefined);
    if (this.closed || this.sockets.size >= this.maxConnections) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    listener.sockets.add(socket);
    listener.cancelIdle?.();
    socket.once('close', () => {
      this.sockets.delete(socket);
      listener.sockets.delete(socket);
      this.idleFromNow(listener);
    });
    const { auth } = this.options;
    // Nothing is carried in before a request proved it may be, and no stream asked of the supervisor.
    servePreviewConnection(socket, {
      gate: this.gate(listener, auth),
      connect: () => this.options.supervisor().then((supervisor) => supervisor?.connect(listener.port)),
      maxHeadBytes: auth.maxHeadBytes,
      headTimeoutMs: auth.headTimeoutMs,
      timer: auth.timer,
    });
  }

  /**
   * What a listener's requests must show: a token or cookie for this sandbox and port, from no foreign page, for its
   * name.
   */
  private gate(listener: Listener, auth: PreviewAuth): PreviewGate {
    const binding = { sandbox: auth.sandbox, port: listener.port };
    const { signer } = auth;
    return {
      cookieName: previewCookieName(listener.hostPort),
      admitToken: (token) => {
        const now = auth.now();
        const issuedMs = signer.verify('url', token, binding, now);
        if (issuedMs === undefined) return undefined;
        return {
          cookie: signer.mint('cookie', binding, issuedMs),
          maxAgeS: Math.floor((issuedMs + signer.ttlMs - now) / 1000),
        };
      },
      admitCookie: (value) => signer.verify('cookie', value, binding, auth.now()) !== undefined,
      // The sandbox's own previews (an app on one port calling its API on another), those listening now.
      allowsOrigin: (origin) => [...this.opened.values()].some((open) => this.origin(open.hostPort) === origin),
      allowsHost: (host) => {
        const { name } = this.options;
        return name === undefined || host?.toLowerCase() === `${name}:${listener.hostPort}`;
      },
    };
  }

  private idleFromNow(listener: Listener): void {
    listener.cancelIdle?.();
    if (this.closed || listener.shut || listener.sockets.size > 0) return;
    listener.cancelIdle = (this.options.auth.timer ?? REAL_TIMER)(this.idleMs, () => {
      if (listener.sockets.size === 0) this.shut(listener);
    });
  }
}

function bind(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
