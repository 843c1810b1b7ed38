/**
 * The one request a cold instance answers before its core (SDK, tools, sandboxes, web `Request`/`Response`) is
 * loaded: a plain `initialize` POSTed to `/mcp` without a session (early-answers.ts). So a client
 * connects at about the cost of bare Node, and the core loads while the client reads the answer. index.ts asks
 * only while the core is not loaded; once it is, every request is the core's.
 *
 * Stateless: the answer carries a newly minted signed session id, and nothing is kept. The core opens that id on
 * the session's next request like any id it does not hold (legacy-lane.ts), told by `mintedEarly` that
 * it is new. A request is answered only when it passes the core's gates with the same functions (Host, token,
 * Accept, Content-Type, size: http/origin.ts, http/auth.ts, http/post-gates.ts, node-listener.ts), has no Origin
 * (CORS is the core's) and names no other protocol version; anything else is handed on, with the body if it
 * was read. An answer takes from the credential's rate of new sessions (sessions/initialize-rate.ts), shared with the
 * core; past it the request is handed on too, and the core refuses it (429, from the one table).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { ANONYMOUS_PRINCIPAL, type BearerVerifier } from '../http/auth';
import type { RequestBody } from '../http/context';
import { hasDuplicateHost, readBody, requestIdOf } from '../http/node-listener';
import { isHostAllowed, type OriginPolicy } from '../http/origin';
import { acceptsMcpAnswers, isJsonContentType } from '../http/post-gates';
import { logRequest } from '../http/request-log';
import type { Logger } from '../log';
import type { InitializeRate } from '../sessions/initialize-rate';
import { type SignedIdCodec, toSessionTag } from '../sessions/session-id';
import { earlyInitializeResponse, readEarlyInitialize } from './early-answers';
import { HTTP_PROTOCOL_VERSIONS, negotiateVersion } from './versions';

export interface EarlyListenerOptions {
  ids: SignedIdCodec;
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  policy: OriginPolicy;
  /** MCP_MAX_BODY_BYTES. */
  maxBodyBytes: number;
  /** The credentials' rate of new sessions (MCP_INITIALIZE_BURST, MCP_INITIALIZE_PER_MIN), the core's own. @default none */
  initializeRate?: InitializeRate;
  /** Told each id this path minted, so that the core opens it as a new session (index.ts hands it on). */
  onMinted: (id: string) => void;
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader?: string;
  logger: Logger;
  /** @default Date.now */
  now?: () => number;
}

/** Answered here, or to be handed to the core, with the body when it was read. */
export type EarlyOutcome = { answered: true } | { answered: false; body?: RequestBody };

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** The early path: answers, or leaves to the core; it never writes to `res` unless it answers. */
export type EarlyListener = (req: IncomingMessage, res: ServerResponse) => Promise<EarlyOutcome>;

export function createEarlyListener(options: EarlyListenerOptions): EarlyListener {
  const { ids, logger, now = Date.now } = options;
  return async (req, res) => {
    const principal = admit(req, options);
    if (principal === undefined) return { answered: false };
    const started = performance.now();
    const body = await readBody(req, options.maxBodyBytes);
    if (body === undefined || body.tooLarge) return { answered: false, body };
    let request;
    try {
      request = readEarlyInitialize(JSON.parse(body.text) as unknown);
    } catch {
      return { answered: false, body };
    }
    if (request === undefined) return { answered: false, body };
    if ((options.initializeRate?.take(principal, now()) ?? 0) > 0) return { answered: false, body };
    const minted = ids.mint('session', principal, now());
    options.onMinted(minted.id);
    res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': minted.id });
    res.end(`event: message\ndata: ${earlyInitializeResponse(request)}\n\n`);
    // The request line the core would log (http/request-log.ts), with the fields its 2025 lane adds.
    const line = {
      requestId: requestIdOf(req, options.requestIdHeader),
      method: 'POST',
      path: '/mcp',
      status: 200,
      durationMs: performance.now() - started,
    };
    logRequest(logger, line, {
      mcp_method: 'initialize',
      era: 'legacy',
      session: toSessionTag(minted.id),
      protocol_version: negotiateVersion(request.requestedVersion),
    });
    return { answered: true };
  };
}

/**
 * The principal of a request the early path may take, or `undefined`: a POST to `/mcp` without a session, from
 * a 2025-era client (no other version header), that passes the core's gates without CORS.
 */
function admit(req: IncomingMessage, options: EarlyListenerOptions): string | undefined {
  const { headers } = req;
  if (
    req.method !== 'POST' ||
    req.url !== '/mcp' ||
    headers.origin !== undefined ||
    headers['mcp-session-id'] !== undefined
  )
    return undefined;
  if (hasDuplicateHost(req) || !isHostAllowed(headers.host ?? null, options.policy)) return undefined;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && (typeof version !== 'string' || !HTTP_PROTOCOL_VERSIONS.includes(version)))
    return undefined;
  if (!acceptsMcpAnswers(headers.accept) || !isJsonContentType(headers['content-type'])) return undefined;
  if (options.verifier === undefined) return ANONYMOUS_PRINCIPAL;
  const check = options.verifier.check(headers.authorization ?? null);
  return check.ok ? check.principal : undefined;
}
