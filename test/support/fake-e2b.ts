/**
 * A loopback fake of E2B's control plane (the REST API the SDK calls to create, renew and kill sandboxes).
 * It records every request and answers from per-route scripts. Envd (the in-sandbox daemon, ConnectRPC) is
 * not implemented: point E2B_SANDBOX_URL here and every envd call gets a plain HTTP error, so it fails fast.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

import { SETTLE_MS } from './processes';

/** One request the fake received. */
export interface RecordedRequest {
  readonly route: Route;
  readonly method: string;
  readonly path: string;
  /** Lower-cased, as node:http gives them. */
  readonly headers: IncomingHttpHeaders;
  /** The JSON body, parsed; `undefined` when there was none or it was not JSON. */
  readonly body: unknown;
  /** `performance.now()` when the request arrived. */
  readonly atMs: number;
}

/** What the fake answers. A function body is called with the request (for ids echoing the template). */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** `create`: POST /sandboxes; `kill`: DELETE /sandboxes/{id}; `timeout`: POST /sandboxes/{id}/timeout; `envd`: anything else. */
export type Route = 'create' | 'kill' | 'timeout' | 'other-api' | 'envd';

export interface FakeE2B {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** The requests of one route. */
  of(route: Route): RecordedRequest[];
  /** Queues replies for `route`; once the queue is empty, the route's default answers. */
  script(route: Route, ...replies: Reply[]): void;
  /** Replaces the default reply of `route` (`undefined` restores the built-in one). */
  setDefault(route: Route, reply: Reply | undefined): void;
  /** Forgets recorded requests, scripts and defaults. */
  reset(): void;
  /** Resolves once `done(requests)` holds; rejects (naming what was seen) after `timeoutMs`. */
  waitFor(done: (requests: readonly RecordedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** A 201 answer to a create, shaped like E2B's (`envdVersion` must be >= 0.1.0 for the SDK). */
export function created(sandboxId: string, templateId = 'code-interpreter-v1'): Reply {
  return {
    status: 201,
    body: { sandboxID: sandboxId, templateID: templateId, clientID: 'fake-client', envdVersion: '0.2.0', envdAccessToken: 'fake-envd-access-token' },
  };
}

/** An E2B-style error answer. */
export function apiError(status: number, message: string, headers?: Record<string, string>): Reply {
  return { status, headers, body: { code: status, message } };
}

function routeOf(method: string, path: string): Route {
  if (method === 'POST' && path === '/sandboxes') return 'create';
  if (method === 'DELETE' && /^\/sandboxes\/[^/]+$/.test(path)) return 'kill';
  if (method === 'POST' && /^\/sandboxes\/[^/]+\/timeout$/.test(path)) return 'timeout';
  if (path.startsWith('/sandboxes') || path.startsWith('/v2/') || path.startsWith('/templates')) return 'other-api';
  return 'envd';
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startFakeE2B(): Promise<FakeE2B> {
  const requests: RecordedRequest[] = [];
  const queues = new Map<Route, Reply[]>();
  const defaults = new Map<Route, Reply>();
  const listeners = new Set<() => void>();
  let createCount = 0;

  const builtIn = (route: Route, body: unknown): Reply => {
    switch (route) {
      case 'create': {
        createCount += 1;
        const template = (body as { templateID?: unknown } | undefined)?.templateID;
        return created(`sbx-fake-${createCount}`, typeof template === 'string' ? template : undefined);
      }
      case 'kill':
      case 'timeout':
        return { status: 204 };
      case 'other-api':
        return apiError(404, 'not implemented by the fake');
      case 'envd':
        // Not a ConnectRPC answer: the SDK maps it to an error at once, with no retry.
        return { status: 404, headers: { 'content-type': 'text/plain' }, body: 'fake envd: not implemented' };
    }
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const method = req.method ?? 'GET';
      const path = new URL(req.url ?? '/', 'http://fake').pathname;
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const route = routeOf(method, path);
      requests.push({ route, method, path, headers: req.headers, body, atMs: performance.now() });
      const reply = queues.get(route)?.shift() ?? defaults.get(route) ?? builtIn(route, body);
      const text = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      const type = reply.body === undefined || typeof reply.body === 'string' ? 'text/plain' : 'application/json';
      res.writeHead(reply.status, { 'content-type': type, ...reply.headers });
      res.end(text);
      for (const listener of [...listeners]) listener();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    of: (route) => requests.filter((r) => r.route === route),
    script(route, ...replies) {
      queues.set(route, [...(queues.get(route) ?? []), ...replies]);
    },
    setDefault(route, reply) {
      if (reply === undefined) defaults.delete(route);
      else defaults.set(route, reply);
    },
    reset() {
      requests.length = 0;
      queues.clear();
      defaults.clear();
    },
    waitFor(done, timeoutMs = SETTLE_MS) {
      return new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (!done(requests)) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          const seen = requests.map((r) => `${r.method} ${r.path}`).join(', ') || 'nothing';
          reject(new Error(`fake E2B: condition not met within ${timeoutMs} ms; saw: ${seen}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An E2B control plane that accepts every request and never answers it. */
export interface SilentE2B {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Requests received (and held) so far. */
  received(): number;
  stop(): Promise<void>;
}

/** Starts a control plane that holds every request unanswered. */
export async function startSilentE2B(): Promise<SilentE2B> {
  const held: unknown[] = [];
  const server: Server = createServer((_req, res) => held.push(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => held.length,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
