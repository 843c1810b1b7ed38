/** The web-standard core's handler shape, the request it reads and the per-request context that travels with it. */
import type { RequestTrace } from '../telemetry/telemetry';

/** Fields the request log line carries; lanes fill in the MCP ones as they learn them. */
export interface RequestLogFields {
  mcp_method?: string;
  tool?: string;
  /** The tag of the 2025 session, or of the 2026-07-28 sandbox handle the call named (never either itself). */
  session?: string;
  protocol_version?: string;
  era?: 'legacy' | 'modern';
  error_code?: string;
  /** Why an OAuth access token was refused (oauth/token-verifier.ts); never the token. */
  auth_detail?: string;
}

/** A request body as the Node shell read it (at most MCP_MAX_BODY_BYTES). */
export type RequestBody = { tooLarge: true } | { tooLarge: false; text: string };

/** Per-request state shared by the wrappers of `createApp`, outermost to innermost. */
export interface RequestContext {
  /**
   * Reads the body (once; later calls get the same), as the shell does it: only when a handler past the
   * gates asks, so that nothing of a request is read before its token is checked. `undefined` when the handler
   * is given a web `Request` without the shell (the body is then the `Request`'s).
   */
  readonly readBody?: () => Promise<RequestBody | undefined>;
  /**
   * The body as it arrives, unbounded, for a handler that streams it somewhere (an upload: http/file-route.ts);
   * instead of `readBody`, never with it. Stopping early leaves the rest to be drained after the answer.
   */
  readonly bodyStream?: () => AsyncIterable<Uint8Array>;
  /** The platform's request id (FC: `x-fc-request-id`) or a random one. */
  readonly requestId: string;
  /**
   * Aborted when the client disconnects before the answer was written. The request carries no signal
   * (see node-listener.ts); a lane whose SDK cancels through `Request.signal` attaches this one.
   */
  readonly signal?: AbortSignal;
  /** The request's path, parsed once by the shell for the router and the log. */
  readonly path: string;
  /**
   * The client's address: the socket's peer, or the client a trusted proxy forwarded for (MCP_TRUSTED_PROXIES,
   * client-address.ts); `undefined` when it cannot be told (FC's front end) or without the shell. Caps what one
   * client may cost before it is authenticated (oauth/introspection.ts).
   */
  readonly peer?: string;
  /**
   * Runs `done` once the answer has been written to the end, or failed, or the client went away: the shell that
   * writes it knows when (node-listener.ts; in the tests, the in-process harness).
   */
  readonly onSent: (done: () => void) => void;
  /**
   * Runs `step`, awaited, once the answer's body has ended and before its end is written (node-listener.ts): on FC,
   * what must happen while the request is still in flight (an instance with none is frozen). Absent without the shell.
   */
  readonly beforeEnd?: (step: () => Promise<void>) => void;
  /** A stable, non-secret id of the credential that authenticated this request; set by http/mcp-gates.ts. */
  principal?: string;
  /** The request's trace, when telemetry is on (http/request-trace.ts); MCP messages run in its spans. */
  trace?: RequestTrace;
  readonly log: RequestLogFields;
}

/**
 * What the core reads of a request: its method, its URL (`http://localhost` and the target: only the path and
 * query mean anything) and its headers; a web `Request` is one. The Node shell passes a plain one, without a web
 * `Request` behind it (on Node 20 each costs an AbortSignal and more, a measurable share of a cheap call:
 * bench/PROFILE.md); the handlers that give a request to the SDK make a `Request` of it (`webRequestOf`,
 * protocol/mcp-server.ts).
 */
export interface IncomingRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
}

/** Every layer below the Node shell speaks this. */
export type FetchHandler = (req: IncomingRequest, ctx: RequestContext) => Promise<Response>;
