/**
 * The one request a cold instance answers before its core (SDK, tools, sandboxes) is loaded: a plain `initialize`
 * POSTed to `/mcp` without a session. So a client connects at about the cost of bare Node, and the core loads
 * while the client reads the answer; index.ts asks here only while the core is not loaded.
 *
 * Stateless: the answer carries a newly minted signed session id, and nothing is kept. The core opens that id on the
 * session's next request like any id it does not hold (protocol/legacy-lane.ts), told by `onMinted` that it is new.
 * Only what the answer depends on is read (the request id and the protocol version), and the answer is built from
 * the data the SDK servers are built from (protocol/server-identity.ts), byte for byte what the core would write.
 * A request is answered only when it passes the core's gates with the same functions (Host, token, Accept,
 * Content-Type, size), has no Origin (CORS is the core's), names no other protocol version and is a plain
 * `initialize` (no `_meta`) with the members the SDK requires; anything else is handed on, with the body if it was
 * read. An answer takes from the credential's rate of new sessions, shared with the core; past it the request is
 * handed on too, and the core refuses it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import type { BearerVerifier } from './http/auth';
import type { RequestBody } from './http/context';
import { runMcpGates } from './http/mcp-gates';
import { hasDuplicateHost, readBody, requestIdOf } from './http/node-listener';
import type { OriginPolicy } from './http/origin';
import { logRequest } from './http/request-log';
import type { Logger } from './log';
import { isObject, readPlainMessage } from './protocol/plain-message';
import { legacyCapabilities, SERVER_INFO, SERVER_INSTRUCTIONS } from './protocol/server-identity';
import { HTTP_PROTOCOL_VERSIONS, negotiateVersion } from './protocol/versions';
import type { InitializeRate } from './sessions/initialize-rate';
import { type SignedIdCodec, toSessionTag } from './sessions/session-id';

export interface EarlyListenerOptions {
  ids: SignedIdCodec;
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  policy: OriginPolicy;
  /** MCP_MAX_BODY_BYTES. */
  maxBodyBytes: number;
  /** The credentials' rate of new sessions (MCP_INITIALIZE_BURST, MCP_INITIALIZE_PER_MIN), the core's own. */
  initializeRate?: InitializeRate;
  /** Told each id minted here, so that the core opens it as a new session. */
  onMinted: (id: string) => void;
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader?: string;
  /** The server keeps MCP tasks (Config's `taskRoot`): `initialize` says so, as the core's does. */
  tasks: boolean;
  logger: Logger;
  /** @default Date.now */
  now?: () => number;
}

/** Answered here, or to be handed to the core, with the body when it was read. */
export type EarlyOutcome = { answered: true } | { answered: false; body?: RequestBody };

/** The early path: answers, or leaves to the core; it never writes to `res` unless it answers. */
export type EarlyListener = (req: IncomingMessage, res: ServerResponse) => Promise<EarlyOutcome>;

/** An initialize request answered here. */
export interface EarlyInitialize {
  readonly id: string | number;
  /** The version the client asked for (not necessarily one the server speaks). */
  readonly requestedVersion: string;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

export function createEarlyListener(options: EarlyListenerOptions): EarlyListener {
  const { ids, logger, now = Date.now } = options;
  return async (req, res) => {
    const principal = await admit(req, options);
    if (principal === undefined) return { answered: false };
    const started = performance.now();
    const body = await readBody(req, options.maxBodyBytes);
    if (body === undefined || body.tooLarge) return { answered: false, body };
    let request: EarlyInitialize | undefined;
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
    res.end(`event: message\ndata: ${earlyInitializeResponse(request, options.tasks)}\n\n`);
    // The request line the core would log, with the fields its 2025 lane adds.
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
 * a 2025-era client (no other version header), without CORS, that passes the core's gates (static tokens only:
 * an OAuth access token is the core's to check).
 */
async function admit(req: IncomingMessage, options: EarlyListenerOptions): Promise<string | undefined> {
  const { headers } = req;
  if (req.method !== 'POST' || req.url !== '/mcp' || headers.origin !== undefined) return undefined;
  if (headers['mcp-session-id'] !== undefined || hasDuplicateHost(req)) return undefined;
  const version = headers['mcp-protocol-version'];
  if (version !== undefined && (typeof version !== 'string' || !HTTP_PROTOCOL_VERSIONS.includes(version)))
    return undefined;
  const header = (name: string): string | undefined => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const verdict = await runMcpGates('POST', header, { policy: options.policy, verifier: options.verifier });
  return verdict.kind === 'pass' ? verdict.principal : undefined;
}

/** `value` as an initialize request answered here, or `undefined` to let the core answer it. */
export function readEarlyInitialize(value: unknown): EarlyInitialize | undefined {
  const message = readPlainMessage(value);
  if (message?.method !== 'initialize' || message.id === undefined || message.params === undefined) return undefined;
  // `_meta` may claim the 2026-07-28 envelope: which lane serves it is the core's to decide.
  if ('_meta' in message.params) return undefined;
  const { protocolVersion, capabilities, clientInfo } = message.params;
  if (typeof protocolVersion !== 'string' || !isObject(capabilities) || !isObject(clientInfo)) return undefined;
  if (typeof clientInfo.name !== 'string' || typeof clientInfo.version !== 'string') return undefined;
  return { id: message.id, requestedVersion: protocolVersion };
}

/** The JSON-RPC response to `request`, serialized as the SDK's server and transport write it. */
export function earlyInitializeResponse(request: EarlyInitialize, tasks: boolean): string {
  const result = {
    protocolVersion: negotiateVersion(request.requestedVersion),
    capabilities: legacyCapabilities(tasks),
    serverInfo: SERVER_INFO,
    instructions: SERVER_INSTRUCTIONS,
  };
  return JSON.stringify({ result, jsonrpc: '2.0', id: request.id });
}
