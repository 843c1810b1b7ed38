/**
 * The cold instance's first `initialize` requests, answered on plain `node:http` before the core (SDK,
 * tools, sandboxes, web `Request`/`Response`) is loaded: a cold start costs about what bare Node costs
 * (issue 7's target). index.ts uses it only until the core is loaded.
 *
 * It answers only what it can answer exactly as the core would: a POST to `/mcp` that passes the same gates
 * (Host, bearer token, Accept, Content-Type, size) and carries a plain initialize request
 * (protocol/early-initialize.ts), with no Origin (CORS is the core's) and no session. Everything else is
 * handed on, with the body when it was read. The session it starts is plain data (sessions/fresh-sessions.ts)
 * until its next request, which builds the SDK session in the core.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { Logger } from '../log';
import { earlyInitializeResponse, negotiateVersion, readEarlyInitialize } from '../protocol/early-initialize';
import { HTTP_PROTOCOL_VERSIONS } from '../protocol/versions';
import type { FreshSessions } from '../sessions/fresh-sessions';
import { type SignedIdCodec, toSessionTag } from '../sessions/session-id';
import { ANONYMOUS_PRINCIPAL, type BearerVerifier } from './auth';
import type { RequestBody } from './context';
import { hasDuplicateHost, readBody, requestIdOf } from './node-listener';
import { isHostAllowed, type OriginPolicy } from './origin';

export interface EarlyListenerOptions {
  ids: SignedIdCodec;
  fresh: FreshSessions;
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  policy: OriginPolicy;
  /** MCP_MAX_SESSIONS: beyond it the core decides (eviction, 503). */
  maxSessions: number;
  /** MCP_MAX_BODY_BYTES. */
  maxBodyBytes: number;
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader?: string;
  logger: Logger;
  /** @default Date.now */
  now?: () => number;
}

/** Answered here, or to be handed to the core (with the body when it was read). */
export type EarlyOutcome = { answered: true } | { answered: false; body?: RequestBody };

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' };

/** Creates the listener; it never writes to `res` unless it answers. */
export function createEarlyListener(options: EarlyListenerOptions): (req: IncomingMessage, res: ServerResponse) => Promise<EarlyOutcome> {
  const { ids, fresh, logger, now = Date.now } = options;
  return async (req, res) => {
    const principal = admit(req, options);
    if (principal === undefined || fresh.size >= options.maxSessions) return { answered: false };
    const started = performance.now();
    const body = await readBody(req, options.maxBodyBytes);
    if (body === undefined || body.tooLarge) return { answered: false, body };
    let request;
    try {
      request = readEarlyInitialize(JSON.parse(body.text));
    } catch {
      request = undefined;
    }
    if (request === undefined) return { answered: false, body };
    const version = negotiateVersion(request.requestedVersion);
    const nowMs = now();
    const minted = ids.mint('session', principal, nowMs);
    fresh.add({ id: minted.id, key: minted.key, principal, protocolVersion: version, capabilities: request.capabilities, clientInfo: request.clientInfo, createdMs: nowMs });
    res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': minted.id });
    res.end(`event: message\ndata: ${earlyInitializeResponse(request)}\n\n`);
    logger.info('request', {
      request_id: requestIdOf(req, options.requestIdHeader),
      method: 'POST',
      path: '/mcp',
      status: 200,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      mcp_method: 'initialize',
      era: 'legacy',
      session: toSessionTag(minted.id),
      protocol_version: version,
    });
    return { answered: true };
  };
}

/**
 * The principal of a request the early path may take, or `undefined`: the request is not a session-less
 * POST to `/mcp` of a 2025-era client that passes the core's gates without CORS.
 */
function admit(req: IncomingMessage, options: EarlyListenerOptions): string | undefined {
  const { headers } = req;
  if (req.method !== 'POST' || req.url !== '/mcp') return undefined;
  if (headers.origin !== undefined || headers['mcp-session-id'] !== undefined) return undefined;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && (typeof version !== 'string' || !HTTP_PROTOCOL_VERSIONS.includes(version))) return undefined;
  const accept = headers.accept ?? '';
  if (!/application\/json/i.test(accept) || !/text\/event-stream/i.test(accept)) return undefined;
  if (!/^application\/json\s*(;|$)/i.test(headers['content-type'] ?? '')) return undefined;
  if (hasDuplicateHost(req) || !isHostAllowed(headers.host ?? null, options.policy)) return undefined;
  if (options.verifier === undefined) return ANONYMOUS_PRINCIPAL;
  const check = options.verifier.check(headers.authorization ?? null);
  return check.ok ? check.principal : undefined;
}
