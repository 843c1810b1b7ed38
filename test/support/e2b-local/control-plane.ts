/**
 * E2B's control plane, the part SDK 2.50.0 uses for sandboxes (its `paths` types in
 * node_modules/e2b/dist/index.d.ts): create (201 `Sandbox`; `autoPause`, `autoPauseMemory`, `autoResume` recorded),
 * get (`SandboxDetail` with `state` and `lifecycle`), list (`GET /v2/sandboxes` with the metadata, state, template,
 * startedAfter, order, limit and nextToken queries, `X-Next-Token`, running and paused sandboxes; and the
 * deprecated `GET /sandboxes`, running ones only, as E2B's), connect (a running sandbox's TTL only extended, 200;
 * a paused one resumed, 201), timeout (TTL set from now), kill (running or paused), pause (204; 409 when paused
 * already, which the SDK turns into `false`), the deprecated resume (201; 409 when running), the network settings
 * (create's `allow_internet_access` and `network`, reported by get; `PUT /sandboxes/{id}/network` replaces the
 * egress ones of a running sandbox, 204, 409 when paused; checked as network-config.ts says), and snapshots
 * (`POST /sandboxes/{id}/snapshots`, `GET /snapshots`, and `DELETE /templates/{id}` as the SDK's
 * `deleteSnapshot` sends it). `X-API-Key` is required; errors are `{code, message}` JSON (the SDK reads `code`
 * to tell a 404). Scripted faults answer (or hold the request unanswered) before anything else.
 *
 * What the service offers: the `alibaba` flavor does not serve `/v2/sandboxes` (404). `pause: 'files'` models a
 * team without memory snapshots: a pause or an autoPause that would keep memory is refused 400 with E2B's shape
 * for a feature not enabled for the team (`error_code` and a message). `pause: 'none'` models a service without
 * persistence: the pause and resume routes are not served (404 `Not Found`, which the SDK's `pause` turns into
 * SandboxNotFoundError) and `autoPause` is refused 400; nor are snapshots. `snapshots: false`: the snapshot routes
 * are not served (404).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { readBody } from './connect';
import type { Flavor } from './interpreter-loader';
import { createNetworkSettings, NetworkConfigError, networkDetail, updatedNetworkSettings } from './network-config';
import { ENVD_VERSION, type Lifecycle, type LocalSandbox, SandboxGoneError, type SandboxRegistry } from './sandboxes';
import { namesOf, type SnapshotRecord, SnapshotNameError, type SnapshotStore, snapshotIdOf } from './snapshots';

export type ControlRoute =
  | 'create'
  | 'connect'
  | 'list'
  | 'get'
  | 'timeout'
  | 'kill'
  | 'pause'
  | 'resume'
  | 'network'
  | 'snapshot'
  | 'snapshots'
  | 'deleteSnapshot';

/**
 * What the service offers for pausing: `memory` (E2B with memory snapshots), `files` (filesystem-only pauses), or
 * `none` (no persistence).
 */
export type PauseSupport = 'memory' | 'files' | 'none';

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
  if (pathname === '/sandboxes' && method === 'POST') return { route: 'create' };
  if ((pathname === '/v2/sandboxes' || pathname === '/sandboxes') && method === 'GET') return { route: 'list' };
  if (pathname === '/snapshots' && method === 'GET') return { route: 'snapshots' };
  if (/^\/templates\/[^/]+$/.test(pathname) && method === 'DELETE') return { route: 'deleteSnapshot' };
  const match = /^\/sandboxes\/([^/]+)(\/[a-z]+)?$/.exec(pathname);
  if (match !== null) {
    const sandboxId = decodeURIComponent(match[1]!);
    const tail = match[2];
    if (tail === undefined && method === 'GET') return { route: 'get', sandboxId };
    if (tail === undefined && method === 'DELETE') return { route: 'kill', sandboxId };
    if (tail === '/connect' && method === 'POST') return { route: 'connect', sandboxId };
    if (tail === '/timeout' && method === 'POST') return { route: 'timeout', sandboxId };
    if (tail === '/pause' && method === 'POST') return { route: 'pause', sandboxId };
    if (tail === '/resume' && method === 'POST') return { route: 'resume', sandboxId };
    if (tail === '/network' && method === 'PUT') return { route: 'network', sandboxId };
    if (tail === '/snapshots' && method === 'POST') return { route: 'snapshot', sandboxId };
    return { route: 'api', sandboxId };
  }
  return { route: 'api' };
}

export interface ControlPlaneOptions {
  readonly apiKey: string;
  readonly flavor: Flavor;
  readonly registry: SandboxRegistry;
  readonly store: SnapshotStore;
  readonly pause: PauseSupport;
  /** Whether the snapshot routes are served. */
  readonly snapshots: boolean;
  /** The next scripted fault for `route`, if any. */
  readonly nextFault: (route: ControlRoute) => Fault | undefined;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** E2B's machine-readable `error_code`, on some refusals. */
    readonly errorCode?: string,
  ) {
    super(message);
  }
}

/** A route this service does not serve (E2B's router: 404). */
function notServed(): ApiError {
  return new ApiError(404, 'Not Found');
}

/**
 * What E2B answers for a capability not enabled for the team (its shape for `memory: false` on resume when that is
 * not enabled: 400, an `error_code`, and a message saying what still works).
 */
function memorySnapshotsDisabled(instead: string): ApiError {
  return new ApiError(
    400,
    `Memory snapshots are not enabled for this team; ${instead}`,
    'sandbox_memory_snapshots_disabled',
  );
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

function optionalBool(value: unknown, name: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new ApiError(400, `Error when parsing request: ${name} must be a boolean`);
  return value;
}

/**
 * NewSandbox's lifecycle fields, checked as E2B checks them, then against what the service offers (`pause`).
 */
function lifecycleOf(body: Record<string, unknown>, pause: PauseSupport): Lifecycle {
  const autoPause = optionalBool(body.autoPause, 'autoPause') ?? false;
  const autoPauseMemory = optionalBool(body.autoPauseMemory, 'autoPauseMemory');
  let autoResume = false;
  if (body.autoResume !== undefined && body.autoResume !== null) {
    if (typeof body.autoResume !== 'object' || Array.isArray(body.autoResume))
      throw new ApiError(400, 'Error when parsing request: autoResume must be an object');
    autoResume = optionalBool((body.autoResume as Record<string, unknown>).enabled, 'autoResume.enabled') ?? false;
  }
  const keepMemory = autoPauseMemory ?? true;
  if (!keepMemory && !autoPause) throw new ApiError(400, 'autoPauseMemory=false only applies when autoPause is true.');
  if (autoResume && !autoPause) throw new ApiError(400, 'autoResume can only be enabled when autoPause is true.');
  if (autoResume && !keepMemory)
    throw new ApiError(
      400,
      'autoPauseMemory=false takes a filesystem-only snapshot, which cannot be auto-resumed by traffic and must be ' +
        'resumed explicitly: autoResume cannot be enabled with it.',
    );
  if (autoPause && pause === 'none')
    throw new ApiError(400, 'autoPause is not supported by this service: a sandbox is killed when its timeout ends.');
  if (autoPause && keepMemory && pause === 'files')
    throw memorySnapshotsDisabled('autoPause needs autoPauseMemory: false (a filesystem-only snapshot)');
  return { onTimeout: autoPause ? 'pause' : 'kill', keepMemory, autoResume };
}

/** A `limit` and `nextToken` page of `items` (the token: the next offset, base64url). */
function page<T>(items: T[], query: URLSearchParams): { items: T[]; next: string | undefined } {
  const limit = Math.min(100, Math.max(1, Number(query.get('limit') ?? 100) || 100));
  const offset = Number(Buffer.from(query.get('nextToken') ?? '', 'base64url').toString() || 0) || 0;
  const next = offset + limit < items.length ? Buffer.from(String(offset + limit)).toString('base64url') : undefined;
  return { items: items.slice(offset, offset + limit), next };
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
    alias: sandbox.alias,
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
    alias: sandbox.alias,
    sandboxID: sandbox.id,
    clientID: CLIENT_ID,
    startedAt: sandbox.startedAt.toISOString(),
    endAt: sandbox.endAt.toISOString(),
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 1024,
    metadata: sandbox.metadata,
    state: sandbox.state,
    envdVersion: ENVD_VERSION,
    volumeMounts: [],
    lifecycle: { onTimeout: sandbox.lifecycle.onTimeout, autoResume: sandbox.lifecycle.autoResume },
  };
}

/** The `SnapshotInfo` schema. */
function snapshotJson(record: SnapshotRecord): Record<string, unknown> {
  return { snapshotID: snapshotIdOf(record), names: namesOf(record) };
}

/** The `SandboxDetail` schema. */
function detailJson(sandbox: LocalSandbox): Record<string, unknown> {
  return {
    ...listedJson(sandbox),
    ...(sandbox.accessToken === undefined ? {} : { envdAccessToken: sandbox.accessToken }),
    ...networkDetail(sandbox.network.settings),
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
      const error =
        err instanceof ApiError
          ? err
          : err instanceof NetworkConfigError
            ? new ApiError(400, err.message)
            : err instanceof SandboxGoneError
              ? new ApiError(404, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`)
              : new ApiError(500, err instanceof Error ? err.message : String(err));
      const body = {
        code: error.status,
        message: error.message,
        ...(error.errorCode === undefined ? {} : { error_code: error.errorCode }),
      };
      if (!res.headersSent) send(res, error.status, body);
    }
  }

  /** The sandbox, running or paused; 404 when there is none. */
  private known(sandboxId: string | undefined): LocalSandbox {
    const sandbox = sandboxId === undefined ? undefined : this.options.registry.get(sandboxId);
    if (sandbox === undefined)
      throw new ApiError(404, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    return sandbox;
  }

  /** The sandbox if it is running; 404 otherwise (E2B's routes that need a running one do not see a paused one). */
  private running(sandboxId: string | undefined, message?: string): LocalSandbox {
    const sandbox = this.known(sandboxId);
    if (sandbox.state !== 'running')
      throw new ApiError(404, message ?? `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
    return sandbox;
  }

  private async serve(
    route: ControlRoute | 'api',
    sandboxId: string | undefined,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
  ): Promise<void> {
    const { registry, pause } = this.options;
    switch (route) {
      case 'create': {
        const body = await jsonBody(req);
        const templateId = body.templateID;
        if (typeof templateId !== 'string' || templateId === '')
          throw new ApiError(400, 'Error when parsing request: templateID is required');
        if (templateId === MISSING_TEMPLATE) throw new ApiError(404, `template '${templateId}' not found`);
        const lifecycle = lifecycleOf(body, pause);
        const secure = body.secure !== false;
        const network = createNetworkSettings(body, secure);
        const snapshot = this.options.snapshots ? this.options.store.resolve(templateId) : undefined;
        if (snapshot === undefined && this.options.snapshots && this.options.store.isSnapshotRef(templateId))
          throw new ApiError(404, `template '${templateId}' not found`);
        const sandbox = await registry.create({
          templateId: snapshot?.templateId ?? templateId,
          ...(snapshot === undefined ? {} : { alias: namesOf(snapshot)[0] ?? snapshot.templateId }),
          timeoutS: seconds(body.timeout, 15),
          metadata: stringMap(body.metadata, 'metadata'),
          envVars: stringMap(body.envVars, 'envVars'),
          secure,
          lifecycle,
          network,
          ...(snapshot === undefined
            ? {}
            : { snapshot: { dir: snapshot.dir, baseTemplateId: snapshot.baseTemplateId } }),
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
        const memory = optionalBool(body.memory, 'memory') ?? true;
        const sandbox = this.known(sandboxId);
        const resumed = await registry.resume(sandbox, seconds(body.timeout, 15), memory);
        send(res, resumed ? 201 : 200, sandboxJson(sandbox));
        return;
      }
      case 'resume': {
        // Deprecated (SDK 2.50 calls connect); its deprecated `autoPause` is not honoured here.
        if (pause === 'none') throw notServed();
        const body = await jsonBody(req);
        const memory = optionalBool(body.memory, 'memory') ?? true;
        const sandbox = this.known(sandboxId);
        if (sandbox.state === 'running') throw new ApiError(409, `Sandbox '${sandbox.id}' is already running`);
        await registry.resume(sandbox, seconds(body.timeout, 15), memory);
        send(res, 201, sandboxJson(sandbox));
        return;
      }
      case 'pause': {
        if (pause === 'none') throw notServed();
        const body = await jsonBody(req);
        const memory = optionalBool(body.memory, 'memory') ?? true;
        const sandbox = this.known(sandboxId);
        const alreadyPaused = new ApiError(409, `Error pausing sandbox - sandbox '${sandbox.id}' is already paused`);
        if (sandbox.state === 'paused') throw alreadyPaused;
        if (memory && pause === 'files')
          throw memorySnapshotsDisabled('pause with memory: false to keep the filesystem only');
        if (!(await registry.pause(sandbox, memory))) throw alreadyPaused;
        send(res, 204);
        return;
      }
      case 'network': {
        const body = await jsonBody(req);
        const sandbox = this.known(sandboxId);
        const settings = updatedNetworkSettings(sandbox.network.settings, body);
        if (!(await registry.updateNetwork(sandbox, settings)))
          throw new ApiError(409, `Sandbox '${sandbox.id}' is not running`);
        send(res, 204);
        return;
      }
      case 'timeout': {
        const body = await jsonBody(req);
        registry.setTimeout(this.running(sandboxId), seconds(body.timeout, 15));
        send(res, 204);
        return;
      }
      case 'kill':
        req.resume();
        this.known(sandboxId);
        await registry.kill(sandboxId!);
        send(res, 204);
        return;
      case 'snapshot': {
        if (!this.options.snapshots) throw notServed();
        const body = await jsonBody(req);
        const name = body.name;
        if (name !== undefined && name !== null && typeof name !== 'string')
          throw new ApiError(400, 'Error when parsing request: name must be a string');
        // E2B snapshots running sandboxes only.
        const sandbox = this.running(sandboxId, `Sandbox '${sandboxId}' not found or not running`);
        let record: SnapshotRecord;
        try {
          record = await this.options.store.create(
            { sandboxId: sandbox.id, baseTemplateId: sandbox.baseTemplateId },
            name ?? undefined,
            (dir) => registry.copyFiles(sandbox, dir),
          );
        } catch (err) {
          if (err instanceof SnapshotNameError) throw new ApiError(400, err.message);
          throw err;
        }
        send(res, 201, snapshotJson(record));
        return;
      }
      case 'snapshots': {
        req.resume();
        if (!this.options.snapshots) throw notServed();
        const query = url.searchParams;
        const found = this.options.store.list({ sandboxId: query.get('sandboxID'), name: query.get('name') });
        const { items, next } = page(found, query);
        send(res, 200, items.map(snapshotJson), next === undefined ? {} : { 'X-Next-Token': next });
        return;
      }
      case 'deleteSnapshot': {
        req.resume();
        if (!this.options.snapshots) throw notServed();
        const ref = decodeURIComponent(url.pathname.slice('/templates/'.length));
        if (!(await this.options.store.delete(ref))) throw new ApiError(404, `template '${ref}' not found`);
        send(res, 204);
        return;
      }
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
    // The deprecated list has no state query: it lists running sandboxes only.
    const wanted = v2 ? states : ['running'];
    const sandboxes = this.options.registry
      .all()
      .filter((s) => metadata.every(([key, value]) => s.metadata[key] === value))
      .filter((s) => wanted.length === 0 || wanted.includes(s.state))
      .filter((s) => template === null || s.templateId === template)
      .filter((s) => startedAfter === null || s.startedAt.getTime() >= new Date(startedAfter).getTime())
      .sort((a, b) => order * (a.startedAt.getTime() - b.startedAt.getTime()) || a.id.localeCompare(b.id));
    if (!v2) {
      send(res, 200, sandboxes.map(listedJson));
      return;
    }
    const { items, next } = page(sandboxes, query);
    const headers: Record<string, string> = {};
    // E2B writes it only when running sandboxes were asked for.
    if (wanted.length === 0 || wanted.includes('running'))
      headers['X-Total-Running'] = String(sandboxes.filter((s) => s.state === 'running').length);
    if (next !== undefined) headers['X-Next-Token'] = next;
    send(res, 200, items.map(listedJson), headers);
  }
}
