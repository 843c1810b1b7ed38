/**
 * The SDK on the wire, for both eras: every request is served through a fresh SDK server built for it, by one
 * `createMcpHandler` (2026-07-28 requests natively, 2025-era ones through the SDK's stateless serving), except a
 * plain request inside a 2025 session, which a server kept connected for such requests answers
 * (protocol/legacy-exchange.ts: the same answer with less work). The lanes decide first which session or
 * credential a request belongs to and hand that over as its binding; the server serving the request reads it
 * back when its handlers run, so its tools act on the right sandbox.
 */
import { type CallToolResult, createMcpHandler, type ServerContext } from '@modelcontextprotocol/server';

import type { IncomingRequest, RequestContext, RequestLogFields } from '../http/context';
import type { Logger } from '../log';
import type { TableEntry } from '../sessions/sandbox-table';
import type { HandleCheck } from '../sessions/entry-lookup';
import type { RequestOrigin } from '../files/file-urls';
import type { TaskControls } from '../tasks/task-runner';
import { createServerSlots, exchangeableRequest, serveExchange } from './legacy-exchange';
import { createProtocolServer, type ProtocolServerOptions, type ResourceHandlers } from './server-factory';
import type { EraTasks } from './task-methods';

/** What a lane knows of a request before the SDK serves it. */
export interface RequestBinding {
  readonly principal: string;
  /** The 2025 session the request belongs to (none for `initialize`). */
  readonly session?: TableEntry;
  /** A 2026-07-28 tool call's `sandbox` handle, as the lane checked it before the SDK saw the call. */
  readonly handle?: { readonly value: unknown; readonly check: HandleCheck };
  /** Where the request came to, read when needed: file URLs made for it start there (files/file-urls.ts). */
  readonly origin?: () => RequestOrigin;
  /** The request's log fields, for what only the call learns (the 2026-07-28 handle's tag). */
  readonly log?: RequestLogFields;
}

/** A lane: serves a POST whose body the endpoint read and parsed. */
export interface PostLane {
  handlePost(req: IncomingRequest, body: unknown, ctx: RequestContext): Promise<Response>;
}

/** Serves one request (its body already parsed) through the SDK, bound to `binding`. */
export type ServeMcp = (req: IncomingRequest, body: unknown, binding: RequestBinding) => Promise<Response>;

/** A tool call, with the request's binding; with `controls`, a task's call, which runs on after its request. */
export type BoundCall = (
  name: string,
  args: unknown,
  ctx: ServerContext,
  binding: RequestBinding,
  controls?: TaskControls,
) => Promise<CallToolResult>;

/** The resources methods, with the request's binding. */
export interface BoundResources {
  readonly templates: ResourceHandlers['templates'];
  list(ctx: ServerContext, binding: RequestBinding): ReturnType<ResourceHandlers['list']>;
  read(uri: string, ctx: ServerContext, binding: RequestBinding): ReturnType<ResourceHandlers['read']>;
}

/** One era's server, its handlers taking the request's binding. */
export type EraServer = Omit<ProtocolServerOptions, 'call' | 'resources' | 'tasks'> & {
  call: BoundCall;
  resources: BoundResources;
  /** Its tasks methods, for the credential `principal()` names. @default no tasks */
  tasks?: (principal: () => string) => EraTasks;
};

export interface EraServers {
  legacy: EraServer;
  modern: EraServer;
}

/**
 * Interval of the `:` keep-alive comments on every open response stream, in both eras: proxies and load
 * balancers cut a stream that stays silent too long, and a long tool call may print nothing for minutes.
 */
export const SSE_KEEP_ALIVE_MS = 10_000;

/**
 * `req` as a web `Request`, for the SDK, which takes nothing else: itself when it is one, else a new one with its
 * method, URL and headers (no body: the context carries it). With `signal`, always a new one that carries it.
 */
export function webRequestOf(req: IncomingRequest, signal?: AbortSignal): Request {
  if (signal === undefined && req instanceof Request) return req;
  return new Request(req.url, { method: req.method, headers: req.headers, ...(signal !== undefined && { signal }) });
}

/** Servers of the 2025 era kept connected between requests, at most (protocol/legacy-exchange.ts). */
const IDLE_LEGACY_SERVERS = 64;

/** Creates the one SDK handler, and the function the lanes serve through. */
export function createMcpServing(servers: EraServers, logger: Logger): ServeMcp {
  const bindings = new WeakMap<Request, RequestBinding>();
  /** A server for `era` whose handlers act for the request `binding()` names when they run. */
  const build = (era: keyof EraServers, binding: () => RequestBinding) => {
    const { call, resources, tasks, ...rest } = servers[era];
    return createProtocolServer({
      ...rest,
      ...(tasks !== undefined && { tasks: tasks(() => binding().principal) }),
      call: (name, args, ctx, controls) => call(name, args, ctx, binding(), controls),
      resources: {
        templates: resources.templates,
        list: (ctx) => resources.list(ctx, binding()),
        read: (uri, ctx) => resources.read(uri, ctx, binding()),
      },
    });
  };
  const legacySlots = createServerSlots(
    (binding: () => RequestBinding) => build('legacy', binding),
    IDLE_LEGACY_SERVERS,
  );
  const handler = createMcpHandler(
    ({ era, requestInfo }) => {
      const binding = requestInfo === undefined ? undefined : bindings.get(requestInfo);
      if (binding === undefined) throw new Error('a request reached the SDK without its binding');
      return build(era, () => binding);
    },
    // Always a stream: in 'auto' mode a call that prints nothing sends no byte until its result (no keep-alive
    // either), and a proxy may cut it.
    {
      legacy: 'stateless',
      responseMode: 'sse',
      keepAliveMs: SSE_KEEP_ALIVE_MS,
      onerror: (err) => logger.debug('protocol error', { error: err.message }),
    },
  );
  return (req, body, binding) => {
    // Inside a 2025 session (the lane found it), a plain request is answered over its own exchange.
    const request = binding.session === undefined ? undefined : exchangeableRequest(req, body, servers.legacy.versions);
    if (request !== undefined) return serveExchange(legacySlots, binding, request, SSE_KEEP_ALIVE_MS);
    const web = webRequestOf(req);
    bindings.set(web, binding);
    return handler.fetch(web, { parsedBody: body });
  };
}
