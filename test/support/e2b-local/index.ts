/**
 * A local E2B-compatible service for tests and local runs: the real `e2b` and `@e2b/code-interpreter` SDKs talk
 * to it over HTTP on 127.0.0.1 (`E2B_API_URL` and `E2B_SANDBOX_URL` both pointing here), and it runs real
 * processes, one namespace and directory per sandbox. One port serves the control plane (control-plane.ts)
 * and, told apart by the `E2b-Sandbox-Id` header, each sandbox's envd and interpreter (sandbox-traffic.ts).
 * Sandboxes pause and resume (sandboxes.ts) and snapshots hold their files (snapshots.ts).
 *
 * Each sandbox has a network of its own with only loopback in it: it reaches what its network settings
 * (`allow_internet_access`, `network`, `PUT /sandboxes/{id}/network`; network-config.ts) allow, through the
 * agent's egress listener and the server's own egress proxy in this process, with E2B's semantics
 * (sandbox-network.ts says how, and what differs). Names are resolved by the proxy (`resolver`); the hosts'
 * certificates are checked against Node's trust store and `upstreamCa`.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';

import { createEgressProxy } from '../../../functions/mcp/egress/proxy';
import { createNameResolver } from '../../../functions/mcp/egress/resolver';
import { type Logger, SILENT_LOGGER } from '../../../functions/mcp/log';
import { ControlPlane, type ControlRoute, controlRouteOf, type Fault, type PauseSupport } from './control-plane';
import type { Flavor } from './interpreter-loader';
import { type Lifecycle, SandboxRegistry } from './sandboxes';
import { INTERPRETER_PORT, isSandboxPath, portOf, serveSandboxTraffic, signerOf } from './sandbox-traffic';
import { namesOf, SnapshotStore, snapshotIdOf } from './snapshots';

export { type ControlRoute, type Fault, NO_ANSWER, type PauseSupport, type Reply } from './control-plane';
export type { Flavor } from './interpreter-loader';
export type { SandboxProcess } from './sandbox-runtime';
export type { Lifecycle } from './sandboxes';

export interface LocalE2BOptions {
  /** The API key clients must send (random by default). */
  apiKey?: string;
  /** `alibaba`: Alibaba Cloud's E2B-compatible service (no `GET /v2/sandboxes`; charts only as files). */
  flavor?: Flavor;
  /** Where sandbox directories go (a fresh temporary directory, removed on stop, by default). */
  root?: string;
  /** The port on 127.0.0.1 (0: any free one). */
  port?: number;
  /**
   * Pausing: `memory` (the default; E2B, and Alibaba Cloud per account), `files` (a team without memory
   * snapshots: a pause or an autoPause that would keep memory is refused 400), `none` (no persistence: the pause
   * and resume routes answer 404, autoPause is refused 400, and there are no snapshots).
   */
  pause?: PauseSupport;
  /** Whether the snapshot routes are served (true by default; false, or `pause: 'none'`: 404). */
  snapshots?: boolean;
  /** The DNS servers (`host:port`) the egress proxy asks for sandboxes' destinations (the host's by default). */
  resolver?: readonly string[];
  /** Certificates (PEM) trusted for the hosts' TLS where the proxy ends a sandbox's TLS, besides Node's own. */
  upstreamCa?: readonly string[];
  /** Where the egress proxy's lines go (refusals are `warn`). @default nowhere */
  logger?: Logger;
}

/** A sandbox as the service holds it. */
export interface LocalSandboxInfo {
  sandboxId: string;
  templateId: string;
  metadata: Record<string, string>;
  /** The end of the lease; for a paused sandbox, the moment it paused. */
  endAt: Date;
  state: 'running' | 'paused';
  /** For a paused sandbox: whether its memory was kept (its processes frozen) or only its files. */
  memory?: boolean;
  lifecycle: Lifecycle;
}

/** A snapshot as the service holds it. */
export interface LocalSnapshotInfo {
  snapshotId: string;
  names: string[];
  /** The sandbox it was taken from. */
  sandboxId: string;
}

/** One request the service received. */
export interface RecordedRequest {
  /** A control-plane route, `api` for other control-plane paths, `envd` or `interpreter` for sandbox traffic. */
  readonly route: ControlRoute | 'api' | 'envd' | 'interpreter';
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  readonly sandboxId?: string;
  /** Lower-cased, as node:http gives them. */
  readonly headers: IncomingHttpHeaders;
  /**
   * A control-plane request's JSON body (create's `templateID`, `timeout`, `metadata`), set once the body has
   * arrived (a request the service answered has it). `undefined` for sandbox traffic, and for a body that was
   * empty or not JSON.
   */
  readonly body?: unknown;
}

export interface LocalE2B {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly apiKey: string;
  /** E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL for an SDK client. */
  env(): Record<string, string>;
  /** The live sandboxes, running or paused. */
  sandboxes(): LocalSandboxInfo[];
  /** The snapshots, newest first. */
  snapshots(): LocalSnapshotInfo[];
  /** Where a sandbox's `/home/user/...` or `/tmp/...` is on the host (a paused sandbox's too). */
  hostPath(sandboxId: string, sandboxPath: string): string;
  /** Queues one-shot faults for a control-plane route (an answer, or `NO_ANSWER`), used before anything else. */
  fault(route: ControlRoute, ...faults: Fault[]): void;
  /**
   * Answers every request on `route` with `fault` from now on (once the one-shot faults queued by `fault` are
   * used up), until called again with `undefined`: E2B that keeps answering 429, or keeps hanging.
   */
  standingFault(route: ControlRoute, fault: Fault | undefined): void;
  /** Kills a sandbox as E2B would (lease end, OOM), running or paused: gone everywhere. */
  killSandbox(sandboxId: string): Promise<void>;
  /**
   * Pauses a running sandbox as the end of its lease would, without waiting for it: with its memory or only its
   * files (by default as its lifecycle says, `autoPauseMemory`; files only with `pause: 'files'`). Rejects when
   * the service's `pause` option does not offer it; resolves false when the sandbox was paused already.
   */
  pauseSandbox(sandboxId: string, options?: { memory?: boolean }): Promise<boolean>;
  /** Makes a sandbox's envd and interpreter unreachable (connections in flight dropped, new ones 502); it still
   * runs (or stays paused, and unreachable once resumed). */
  cutEnvd(sandboxId: string): void;
  /** Every request so far, in arrival order. */
  requests(): ReadonlyArray<RecordedRequest>;
  /**
   * Kills every sandbox, running or paused (no process left), and stops serving, dropping held requests; removes
   * the snapshots and the root it made.
   */
  stop(): Promise<void>;
}

/** Keeps `req`'s JSON body on its record once it has arrived (beside whoever else reads the body). */
function recordBody(req: IncomingMessage, record: { body?: unknown }): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    try {
      if (raw !== '') record.body = JSON.parse(raw) as unknown;
    } catch {
      // Not JSON: no body on the record (the control plane answers 400 itself).
    }
  });
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export async function startLocalE2B(options: LocalE2BOptions = {}): Promise<LocalE2B> {
  const apiKey = options.apiKey ?? `e2b_local_${randomBytes(16).toString('hex')}`;
  const flavor = options.flavor ?? 'e2b';
  const ownRoot = options.root === undefined;
  const root = ownRoot ? mkdtempSync(join(tmpdir(), 'e2b-local-')) : resolve(options.root!);
  if (!ownRoot) mkdirSync(root, { recursive: true });

  const pause = options.pause ?? 'memory';
  if (!['memory', 'files', 'none'].includes(pause)) throw new Error(`pause: memory, files or none, not ${pause}`);
  const proxy = createEgressProxy({
    resolver: createNameResolver(options.resolver),
    logger: options.logger ?? SILENT_LOGGER,
    ...(options.upstreamCa === undefined ? {} : { upstreamCa: options.upstreamCa }),
  });
  const registry = new SandboxRegistry(root, flavor, { proxy, principal: 'local-e2b' });
  const store = new SnapshotStore(root);
  const faults = new Map<ControlRoute, Fault[]>();
  const standing = new Map<ControlRoute, Fault>();
  const recorded: RecordedRequest[] = [];
  const controlPlane = new ControlPlane({
    apiKey,
    flavor,
    registry,
    store,
    pause,
    snapshots: (options.snapshots ?? true) && pause !== 'none',
    nextFault: (route) => faults.get(route)?.shift() ?? standing.get(route),
  });
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const sandboxId = headerValue(req.headers, 'e2b-sandbox-id') ?? signerOf(registry, req, url);
    const forSandbox = sandboxId !== undefined || isSandboxPath(url.pathname);
    const control = forSandbox ? undefined : controlRouteOf(req.method ?? 'GET', url.pathname);
    const route = control?.route ?? (portOf(req, url.pathname) === INTERPRETER_PORT ? 'interpreter' : 'envd');
    const recordedId = sandboxId ?? control?.sandboxId;
    const path = req.url ?? '/';
    const record: RecordedRequest = {
      route,
      method: req.method ?? 'GET',
      path,
      ...(recordedId === undefined ? {} : { sandboxId: recordedId }),
      headers: { ...req.headers },
    };
    recorded.push(record);
    if (control !== undefined) recordBody(req, record as { body?: unknown });
    const served = forSandbox
      ? serveSandboxTraffic(registry, sandboxId, req, res, url)
      : controlPlane.handle(req, res, url);
    served.catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ code: 500, message: err instanceof Error ? err.message : String(err) }));
      } else res.destroy();
    });
  });
  // Streams (commands, watches) last as long as their process: no request or socket timeout.
  server.requestTimeout = 0;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolveListen());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let stopped: Promise<void> | undefined;
  return {
    url,
    apiKey,
    env: () => ({ E2B_API_KEY: apiKey, E2B_API_URL: url, E2B_SANDBOX_URL: url }),
    sandboxes: () =>
      registry.all().map((s) => ({
        sandboxId: s.id,
        templateId: s.templateId,
        metadata: { ...s.metadata },
        endAt: new Date(s.endAt),
        state: s.state,
        ...(s.state === 'paused' ? { memory: s.pausedWithMemory === true } : {}),
        lifecycle: { ...s.lifecycle },
      })),
    snapshots: () =>
      store.list().map((r) => ({ snapshotId: snapshotIdOf(r), names: namesOf(r), sandboxId: r.sandboxId })),
    hostPath(sandboxId, sandboxPath) {
      const normalized = posix.normalize(sandboxPath);
      for (const [inside, outside] of [
        ['/home/user', 'home/user'],
        ['/tmp', 'tmp'],
      ] as const) {
        if (normalized === inside || normalized.startsWith(`${inside}/`))
          return join(root, sandboxId, outside, normalized.slice(inside.length));
      }
      throw new Error(`hostPath: ${sandboxPath} is not under /home/user or /tmp`);
    },
    fault(route, ...more) {
      faults.set(route, [...(faults.get(route) ?? []), ...more]);
    },
    standingFault(route, fault) {
      if (fault === undefined) standing.delete(route);
      else standing.set(route, fault);
    },
    async killSandbox(sandboxId) {
      await registry.kill(sandboxId);
    },
    pauseSandbox(sandboxId, pauseOptions = {}) {
      const sandbox = registry.get(sandboxId);
      if (sandbox === undefined) return Promise.reject(new Error(`pauseSandbox: no live sandbox ${sandboxId}`));
      const memory = pauseOptions.memory ?? (pause === 'files' ? false : sandbox.lifecycle.keepMemory);
      if (pause === 'none' || (memory && pause === 'files'))
        return Promise.reject(new Error(`pauseSandbox: the service was started with pause: '${pause}'`));
      return registry.pause(sandbox, memory);
    },
    cutEnvd(sandboxId) {
      const sandbox = registry.get(sandboxId);
      if (sandbox === undefined) throw new Error(`cutEnvd: no sandbox ${sandboxId}`);
      sandbox.envdCut = true;
      sandbox.dropConnections();
    },
    requests: () => recorded,
    stop() {
      stopped ??= (async () => {
        const closed = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
        for (const socket of sockets) socket.destroy();
        await registry.killAll();
        await store.clear();
        await closed;
        if (ownRoot) rmSync(root, { recursive: true, force: true, maxRetries: 3 });
      })();
      return stopped;
    },
  };
}
