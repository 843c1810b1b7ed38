/**
 * E2B's control plane, the part SDK 2.51.0 uses for sandboxes (its `paths` types in
 * node_modules/e2b/dist/index.d.ts): create (`POST /v2/sandboxes`, 201 `Sandbox`, always secured; and the
 * deprecated `POST /sandboxes`), get (`SandboxDetail`), list (`GET /v2/sandboxes` with the metadata, state,
 * template, startedAfter, order, limit and nextToken queries, `X-Next-Token`; and the deprecated
 * `GET /sandboxes`), connect (`POST /v2/sandboxes/{id}/connect`, and the deprecated `/sandboxes/{id}/connect`:
 * TTL only extended), timeout (TTL set from now), kill. `X-API-Key` is required; errors are `{code, message}`
 * JSON (the SDK reads `code` to tell a 404). Scripted faults answer (or hold the request unanswered) before
 * anything else. The `alibaba` flavor does not serve the listing `GET /v2/sandboxes` (404).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { readBody } from './connect';
import type { Flavor } from './interpreter-loader';
import { ENVD_VERSION, type LocalSandbox, type SandboxRegistry } from './sandboxes';

export type ControlRoute = 'create' | 'connect' | 'list' | 'get' | 'timeout' | 'kill';

/** A scripted answer. */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * A scripted non-answer: the request is taken and held open, unanswered, until the client gives up or the
 * service stops (a control plane that hangs, for the SDK's request timeout).
 */
export const NO_ANSWER = Object.freeze({ hold: true } as const);

/** What a scripted fault does: answer with a `Reply`, or hold the request (`NO_ANSWER`). */
export type Fault = Reply | typeof NO_ANSWER;

/** The template that does not exist (for tests of that path). */
export const MISSING_TEMPLATE = 'missing-template';
const CLIENT_ID = '6532622b';

/** Which route a control-plane request is, and the sandbox it names. */
export function controlRouteOf(method: string, pathname: string): { route: ControlRoute | 'api'; sandboxId?: string } {
  if ((pathname === '/v2/sandboxes' || pathname === '/sandboxes') && method === 'POST') return { route: 'create' };
  if ((pathname === '/v2/sandboxes' || pathname === '/sandboxes') && method === 'GET') return { route: 'list' };
  const connect = /^\/v2\/sandboxes\/([^/]+)\/connect$/.exec(pathname);
  if (connect !== null && method === 'POST') return { route: 'connect', sandboxId: decodeURIComponent(connect[1]!) };
  const match = /^\/sandboxes\/([^/]+)(\/[a-z]+)?$/.exec(pathname);
  if (match !== null) {
    const sandboxId = decodeURIComponent(match[1]!);
    const tail = match[2];
    if (tail === undefined && method === 'GET') return { route: 'get', sandboxId };
    if (tail === undefined && method === 'DELETE') return { route: 'kill', sandboxId };
    if (tail === '/connect' && method === 'POST') return { route: 'connect', sandboxId };
    if (tail === '/timeout' && method === 'POST') return { route: 'timeout', sandboxId };
    return { route: 'api', sandboxId };
  }
  return { route: 'api' };
}

export interface ControlPlaneOptions {
  readonly apiKey: string;
  readonly flavor: Flavor;
  readonly registry: SandboxRegistry;
  /** The next scripted fault for `route`, if any. */
  readonly nextFault: (route: ControlRoute) => Fault | undefined;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  if (body === undefined) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const data = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(data.length), ...headers });
  res.end(data);
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const raw = await readBody(req);
  if (raw.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ApiError(400, 'Error when parsing request: invalid JSON body');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ApiError(400, 'Error when parsing request: the body must be a JSON object');
  return value as Record<string, unknown>;
}

function stringMap(value: unknown, name: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value) || Object.values(value).some((v) => typeof v !== 'string')) {
    throw new ApiError(400, `Error when parsing request: ${name} must be an object of strings`);
  }
  return { ...(value as Record<string, string>) };
}

function seconds(value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new ApiError(400, 'Error when parsing request: timeout must be a non-negative integer');
  return value;
}

/** The `Sandbox` schema (create and connect). */
function sandboxJson(sandbox: LocalSandbox): Record<string, unknown> {
  return {
    templateID: sandbox.templateId,
    sandboxID: sandbox.id,
    alias: sandbox.templateId,
    clientID: CLIENT_ID,
    envdVersion: ENVD_VERSION,
    ...(sandbox.accessToken === undefined ? {} : { envdAccessToken: sandbox.accessToken }),
    trafficAccessToken: null,
    domain: null,
  };
}

/** The `ListedSandbox` schema. */
function listedJson(sandbox: LocalSandbox): Record<string, unknown> {
  return {
    templateID: sandbox.templateId,
    alias: sandbox.templateId,
    sandboxID: sandbox.id,
    clientID: CLIENT_ID,
    startedAt: sandbox.startedAt.toISOString(),
    endAt: sandbox.endAt.toISOString(),
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 1024,
    metadata: sandbox.metadata,
    state: 'running',
    envdVersion: ENVD_VERSION,
    volumeMounts: [],
  };
}

/** The `SandboxDetail` schema. */
function detailJson(sandbox: LocalSandbox): Record<string, unknown> {
  return {
    ...listedJson(sandbox),
    ...(sandbox.accessToken === undefined ? {} : { envdAccessToken: sandbox.accessToken }),
    allowInternetAccess: null,
    domain: null,
  };
}

/**
 * The `metadata` query: `key=value&...` whose keys and values are URL-encoded once more (the SDK encodes each
 * pair, then the whole string).
 */
function metadataFilter(query: string | null): Array<[string, string]> {
  if (query === null || query === '') return [];
  const decode = (s: string): string => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  return [...new URLSearchParams(query)].map(([key, value]) => [decode(key), decode(value)]);
}

export class ControlPlane {
  constructor(private readonly options: ControlPlaneOptions) {}

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const { route, sandboxId } = controlRouteOf(method, url.pathname);
    try {
      const fault = route === 'api' ? undefined : this.options.nextFault(route);
      if (fault !== undefined) {
        req.resume();
        if (!('hold' in fault)) send(res, fault.status, fault.body, fault.headers);
        return;
      }
      const key = req.headers['x-api-key'];
      if (key !== this.options.apiKey) {
        req.resume();
        throw new ApiError(401, key === undefined ? 'X-API-Key header is missing' : 'Invalid API key');
      }
      await this.serve(route, sandboxId, req, res, url);
    } catch (err) {
      const error = err instanceof ApiError ? err : new ApiError(500, err instanceof Error ? err.message : String(err));
      if (!res.headersSent) send(res, error.status, { code: error.status, message: error.message });
    }
  }

  private known(sandboxId: string | undefined): LocalSandbox {
    const sandbox = sandboxId === undefined ? undefined : this.options.registry.get(sandboxId);
    if (sandbox === undefined)
      throw new ApiError(404, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    return sandbox;
  }

  private async serve(
    route: ControlRoute | 'api',
    sandboxId: string | undefined,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
  ): Promise<void> {
    const { registry } = this.options;
    switch (route) {
      case 'create': {
        const body = await jsonBody(req);
        const templateId = body.templateID;
        if (typeof templateId !== 'string' || templateId === '')
          throw new ApiError(400, 'Error when parsing request: templateID is required');
        if (templateId === MISSING_TEMPLATE) throw new ApiError(404, `template '${templateId}' not found`);
        const sandbox = await registry.create({
          templateId,
          timeoutS: seconds(body.timeout, 15),
          metadata: stringMap(body.metadata, 'metadata'),
          envVars: stringMap(body.envVars, 'envVars'),
          // A v2 create is always secured; the deprecated one reads `secure`.
          secure: url.pathname === '/v2/sandboxes' || body.secure !== false,
        });
        send(res, 201, sandboxJson(sandbox));
        return;
      }
      case 'get':
        req.resume();
        send(res, 200, detailJson(this.known(sandboxId)));
        return;
      case 'list':
        req.resume();
        this.list(url, res);
        return;
      case 'connect': {
        const body = await jsonBody(req);
        const sandbox = this.known(sandboxId);
        registry.setTimeout(sandbox, seconds(body.timeout, 15), true);
        send(res, 200, sandboxJson(sandbox));
        return;
      }
      case 'timeout': {
        const body = await jsonBody(req);
        registry.setTimeout(this.known(sandboxId), seconds(body.timeout, 15));
        send(res, 204);
        return;
      }
      case 'kill':
        req.resume();
        this.known(sandboxId);
        await registry.kill(sandboxId!);
        send(res, 204);
        return;
      case 'api':
        req.resume();
        throw new ApiError(404, `${req.method} ${url.pathname} is not served by the local E2B service`);
    }
  }

  private list(url: URL, res: ServerResponse): void {
    const v2 = url.pathname === '/v2/sandboxes';
    if (v2 && this.options.flavor === 'alibaba') throw new ApiError(404, 'Not Found');
    const query = url.searchParams;
    const metadata = metadataFilter(query.get('metadata'));
    const states = (query.get('state') ?? '').split(',').filter((s) => s !== '');
    const template = query.get('template');
    const startedAfter = query.get('startedAfter');
    const order = query.get('order') === 'asc' ? 1 : -1;
    let sandboxes = this.options.registry
      .all()
      .filter((s) => metadata.every(([key, value]) => s.metadata[key] === value))
      .filter(() => states.length === 0 || states.includes('running'))
      .filter((s) => template === null || s.templateId === template)
      .filter((s) => startedAfter === null || s.startedAt.getTime() >= new Date(startedAfter).getTime())
      .sort((a, b) => order * (a.startedAt.getTime() - b.startedAt.getTime()) || a.id.localeCompare(b.id));
    if (!v2) {
      send(res, 200, sandboxes.map(listedJson));
      return;
    }
    const total = sandboxes.length;
    const limit = Math.min(100, Math.max(1, Number(query.get('limit') ?? 100) || 100));
    const offset = Number(Buffer.from(query.get('nextToken') ?? '', 'base64url').toString() || 0) || 0;
    sandboxes = sandboxes.slice(offset, offset + limit);
    const headers: Record<string, string> = { 'X-Total-Running': String(total) };
    if (offset + limit < total) headers['X-Next-Token'] = Buffer.from(String(offset + limit)).toString('base64url');
    send(res, 200, sandboxes.map(listedJson), headers);
  }
}
