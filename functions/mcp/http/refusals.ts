/**
 * Every refusal the server answers with, in one table: its HTTP status, its body and headers, and `Retry-After`
 * whenever the refusal says when to retry. On `/mcp` (and on stdio) the body is a JSON-RPC error; on the other
 * routes, and in the Node shell before a route is known, it is a plain `{ error, message }`. Nothing else builds
 * an error body.
 */
import type { ServerResponse } from 'node:http';

import { MCP_ALLOW, mcpMethodNotAllowed } from './mcp-methods';
import { NO_OAUTH_MESSAGE } from './no-oauth';

/** JSON-RPC error codes of the refusals (the SDK answers the ones inside dispatch). */
export const RPC = Object.freeze({
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  SERVER_ERROR: -32000,
  SESSION_NOT_FOUND: -32001,
  /** 2026-07-28: a header that mirrors the body (`Mcp-Param-*`) is missing, undecodable or different. */
  HEADER_MISMATCH: -32020,
});

/** The id a JSON-RPC error echoes: the request's, or `null` when it is not known. */
export type JsonRpcId = string | number | null;

type None = Record<never, never>;

/** Each kind of refusal, with what its message names. */
interface RefusalDetails {
  // The gates of `/mcp`: Host and Origin, the token, the method, then the POST's headers, size and JSON.
  host_not_allowed: None;
  origin_not_allowed: None;
  /** `challenge`: the `WWW-Authenticate` of an OAuth resource server (oauth/resource-metadata.ts); a plain one
   * without. */
  unauthorized: { reason: 'missing' | 'invalid'; challenge?: string };
  insufficient_scope: { challenge: string; detail: string };
  auth_unavailable: { retryAfterS: number };
  /** The token could not be checked yet: its issuer's introspection is busy, or its key is not fetched yet (oauth/). */
  auth_busy: { what: 'introspection' | 'keys'; retryAfterS: number };
  mcp_method_not_allowed: { method: string };
  not_acceptable: None;
  unsupported_media_type: None;
  body_too_large: { maxBytes: number };
  /** The body did not arrive within `seconds` (http/connection-guard.ts). */
  body_timeout: { seconds: number };
  parse_error: None;
  // 2025-era sessions.
  delete_without_session: None;
  session_id_required: None;
  session_not_found: None;
  not_json_rpc: None;
  already_initialized: None;
  initialize_params: None;
  initialize_in_batch: None;
  /** `allowed`: the one version that allows batches; `version`: the session's. */
  batch_not_allowed: { allowed: string; version: string | undefined };
  // 2026-07-28: a `Mcp-Param-*` header that does not mirror its argument (`why` says how).
  param_header_mismatch: { header: string; why: string };
  // No room: a session or sandbox cap (sessions/fair-share.ts decides and words it), or the calls a credential runs.
  no_room: { status: 429 | 503; message: string; retryAfterS: number };
  too_many_calls: { running: number; max: number; retryAfterS: number };
  /** A credential past its rate of new sessions (sessions/initialize-rate.ts). */
  initialize_rate: { burst: number; perMinute: number; retryAfterS: number };
  // The error boundary.
  client_gone: None;
  internal: None;
  // A stdio line (stdio.ts); the status is what the same body would get over HTTP.
  line_not_json: None;
  line_not_json_rpc: None;
  // Plain bodies: the other routes, and the Node shell (http/node-listener.ts) before there is a web Request.
  no_route: { path: string };
  route_method_not_allowed: { allow: string };
  no_oauth: None;
  method_unsupported: { allow: string };
  duplicate_host: None;
  bad_target: None;
  internal_plain: None;
  /** A connection or request over a cap of http/connection-guard.ts: `scope` says whose. */
  over_capacity: { scope: 'server' | 'peer' | 'client'; max: number; retryAfterS: number };
}

type RefusalKind = keyof RefusalDetails;

/** Why a request (or a stdio line) is refused: `{ kind, ...details }`. */
export type HttpRefusal<K extends RefusalKind = RefusalKind> = {
  [P in K]: { readonly kind: P } & Readonly<RefusalDetails[P]>;
}[K];

/** A refusal ready for the wire. */
export interface ErrorAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** JSON text. */
  readonly body: string;
}

interface RpcRow {
  readonly status: number;
  readonly code: number;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as `Retry-After`. */
  readonly retryAfterS?: number;
}

interface PlainRow {
  readonly status: number;
  /** The body's `error`. */
  readonly error: string;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Also as `error_description`, where OAuth clients look for it. */
  readonly oauth?: true;
  /** Sent as `Retry-After`. */
  readonly retryAfterS?: number;
}

type Row = RpcRow | PlainRow;
type Rows = { readonly [K in RefusalKind]: (refusal: HttpRefusal<K>) => Row };

const {
  PARSE_ERROR,
  INVALID_REQUEST,
  INVALID_PARAMS,
  INTERNAL_ERROR,
  SERVER_ERROR,
  SESSION_NOT_FOUND,
  HEADER_MISMATCH,
} = RPC;

/** The table. */
const ROWS: Rows = {
  host_not_allowed: () => ({
    status: 403,
    code: SERVER_ERROR,
    message: 'Forbidden: this Host is not allowed (MCP_ALLOWED_HOSTS)',
  }),
  origin_not_allowed: () => ({
    status: 403,
    code: SERVER_ERROR,
    message: 'Forbidden: this Origin is not allowed (MCP_ALLOWED_ORIGINS)',
  }),
  // Without OAuth there is no `resource_metadata` in the challenge: no metadata document to point clients at.
  unauthorized: ({ reason, challenge }) =>
    reason === 'missing'
      ? {
          status: 401,
          code: SERVER_ERROR,
          message:
            challenge === undefined
              ? 'Unauthorized: send "Authorization: Bearer <token>" with a token from MCP_AUTH_TOKENS or ' +
                'MCP_AUTH_TOKEN_FILE'
              : 'Unauthorized: sign in with OAuth (the WWW-Authenticate header names the resource metadata) and ' +
                'send the access token as "Authorization: Bearer <token>"',
          headers: { 'www-authenticate': challenge ?? 'Bearer realm="mcp"' },
        }
      : {
          status: 401,
          code: SERVER_ERROR,
          message: 'Unauthorized: the bearer token is not valid for this server',
          headers: {
            'www-authenticate':
              challenge ??
              'Bearer realm="mcp", error="invalid_token", error_description="The bearer token is not valid for ' +
                'this server"',
          },
        },
  insufficient_scope: ({ challenge, detail }) => ({
    status: 403,
    code: SERVER_ERROR,
    message: `Forbidden: the access token lacks a scope this server requires (${detail})`,
    headers: { 'www-authenticate': challenge },
  }),
  auth_unavailable: ({ retryAfterS }) => ({
    status: 503,
    code: SERVER_ERROR,
    message:
      `Service Unavailable: the authorization server's metadata or keys cannot be fetched, so the access token ` +
      `cannot be checked; retry in ${retryAfterS} s`,
    retryAfterS,
  }),
  auth_busy: ({ what, retryAfterS }) => ({
    status: 503,
    code: SERVER_ERROR,
    message:
      what === 'keys'
        ? `Service Unavailable: the access token is signed with a key this server has not fetched yet, and the ` +
          `authorization server's keys were fetched moments ago; retry in ${retryAfterS} s`
        : `Service Unavailable: too many access tokens are waiting to be checked at the authorization server; ` +
          `retry in ${retryAfterS} s`,
    retryAfterS,
  }),
  mcp_method_not_allowed: ({ method }) => ({
    status: 405,
    code: SERVER_ERROR,
    message: mcpMethodNotAllowed(method),
    headers: { allow: MCP_ALLOW },
  }),
  not_acceptable: () => ({
    status: 406,
    code: SERVER_ERROR,
    message: 'Not Acceptable: the Accept header must list application/json and text/event-stream',
  }),
  unsupported_media_type: () => ({
    status: 415,
    code: SERVER_ERROR,
    message: 'Unsupported Media Type: send Content-Type: application/json',
  }),
  body_too_large: ({ maxBytes }) => ({
    status: 413,
    code: SERVER_ERROR,
    message: `Payload Too Large: request bodies are limited to ${maxBytes} bytes (MCP_MAX_BODY_BYTES)`,
  }),
  parse_error: () => ({ status: 400, code: PARSE_ERROR, message: 'Parse error: the body is not valid JSON' }),
  body_timeout: ({ seconds }) => ({
    status: 408,
    code: SERVER_ERROR,
    message: `Request Timeout: the request body did not arrive within ${seconds} s`,
  }),

  delete_without_session: () => ({
    status: 400,
    code: SERVER_ERROR,
    message:
      'Bad Request: the Mcp-Session-Id header is missing; DELETE ends the session it names (2026-07-28 clients ' +
      'have no session to end)',
  }),
  session_id_required: () => ({
    status: 400,
    code: SERVER_ERROR,
    message: 'Bad Request: the Mcp-Session-Id header is required; send initialize first to start a session',
  }),
  session_not_found: () => ({
    status: 404,
    code: SESSION_NOT_FOUND,
    message:
      'Session not found: it expired, was deleted, or was never issued to this credential. Send initialize to ' +
      'start a new session.',
  }),
  not_json_rpc: () => ({
    status: 400,
    code: INVALID_REQUEST,
    message: 'Invalid Request: the body is not a JSON-RPC 2.0 message (or a batch of them)',
  }),
  already_initialized: () => ({
    status: 400,
    code: INVALID_REQUEST,
    message:
      'Invalid Request: this session is already initialized; to start a new one, send initialize without ' +
      'Mcp-Session-Id',
  }),
  initialize_params: () => ({
    status: 400,
    code: INVALID_PARAMS,
    message:
      'Invalid params: initialize needs params.protocolVersion, params.capabilities and params.clientInfo {name, ' +
      'version}',
  }),
  initialize_in_batch: () => ({
    status: 400,
    code: INVALID_REQUEST,
    message: 'Invalid Request: initialize must not be part of a JSON-RPC batch',
  }),
  batch_not_allowed: ({ allowed, version }) => ({
    status: 400,
    code: INVALID_REQUEST,
    message:
      `Invalid Request: JSON-RPC batches are only allowed with protocol version ${allowed}; this session uses ` +
      `${version ?? 'an unknown version'}`,
  }),
  param_header_mismatch: ({ header, why }) => ({
    status: 400,
    code: HEADER_MISMATCH,
    message: `Bad Request: the ${header} header ${why}; it must carry the tool call's argument as sent in the body`,
  }),

  no_room: ({ status, message, retryAfterS }) => ({ status, code: SERVER_ERROR, message, retryAfterS }),
  too_many_calls: ({ running, max, retryAfterS }) => ({
    status: 429,
    code: SERVER_ERROR,
    message:
      `Too many tool calls at once: this credential has ${running} running (MCP_MAX_CALLS_PER_CREDENTIAL=${max}). ` +
      `Retry in ${retryAfterS} s, once one has finished.`,
    retryAfterS,
  }),
  initialize_rate: ({ burst, perMinute, retryAfterS }) => ({
    status: 429,
    code: SERVER_ERROR,
    message:
      `Too many new sessions: this credential may open ${burst} at once on this server and ${perMinute} a minute ` +
      `after that (MCP_INITIALIZE_BURST=${burst}, MCP_INITIALIZE_PER_MIN=${perMinute}). Retry in ${retryAfterS} s, ` +
      `or keep using a session already open.`,
    retryAfterS,
  }),

  client_gone: () => ({ status: 400, code: INVALID_REQUEST, message: 'The client went away' }),
  internal: () => ({ status: 500, code: INTERNAL_ERROR, message: 'Internal server error' }),

  line_not_json: () => ({ status: 400, code: PARSE_ERROR, message: 'Parse error: the line is not valid JSON' }),
  line_not_json_rpc: () => ({
    status: 400,
    code: INVALID_REQUEST,
    message: 'Invalid Request: each line must be one JSON-RPC 2.0 message object',
  }),

  no_route: ({ path }) => ({
    status: 404,
    error: 'not_found',
    message: `No route for ${path}; the MCP endpoint is /mcp`,
  }),
  route_method_not_allowed: ({ allow }) => ({
    status: 405,
    error: 'method_not_allowed',
    message: `Use ${allow}`,
    headers: { allow },
  }),
  no_oauth: () => ({
    status: 404,
    error: 'not_found',
    message: NO_OAUTH_MESSAGE,
    headers: { 'cache-control': 'no-store' },
    oauth: true,
  }),
  // TRACE and the like, which cannot become a web Request.
  method_unsupported: ({ allow }) => ({
    status: 405,
    error: 'method_not_allowed',
    message: 'Use POST (and DELETE to end a session)',
    headers: { allow },
  }),
  duplicate_host: () => ({
    status: 400,
    error: 'bad_request',
    message: 'The request carries more than one Host header.',
  }),
  bad_target: () => ({ status: 400, error: 'bad_request', message: 'The request target is not a valid path.' }),
  internal_plain: () => ({ status: 500, error: 'internal_error', message: 'Internal server error' }),
  // Answered, not reset: a client behind a proxy would only see "socket hang up".
  over_capacity: ({ scope, max, retryAfterS }) => ({
    status: 503,
    error: 'over_capacity',
    message:
      scope === 'server'
        ? `Service Unavailable: the server has ${max} connections open, the most it serves (MCP_MAX_CONNECTIONS); ` +
          `retry in ${retryAfterS} s`
        : scope === 'peer'
          ? `Service Unavailable: this address has ${max} connections open, the most one address may ` +
            `(MCP_MAX_CONNECTIONS_PER_PEER); reuse one, or retry in ${retryAfterS} s`
          : `Service Unavailable: this client has ${max} requests in flight through the proxy, the most one client ` +
            `may (MCP_MAX_CONNECTIONS_PER_PEER); retry in ${retryAfterS} s`,
    headers: { connection: 'close' },
    retryAfterS,
  }),
};

/** The status, headers and body of `refusal`; `id` is echoed by JSON-RPC bodies. */
export function toErrorAnswer(refusal: HttpRefusal, id: JsonRpcId = null): ErrorAnswer {
  const row = rowOf(refusal);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...row.headers };
  if ('code' in row) {
    if (row.retryAfterS !== undefined) headers['retry-after'] = String(row.retryAfterS);
    return {
      status: row.status,
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', error: { code: row.code, message: row.message }, id }),
    };
  }
  if (row.retryAfterS !== undefined) headers['retry-after'] = String(row.retryAfterS);
  const body =
    row.oauth === true
      ? { error: row.error, error_description: row.message, message: row.message }
      : { error: row.error, message: row.message };
  return { status: row.status, headers, body: JSON.stringify(body) };
}

function rowOf<K extends RefusalKind>(refusal: HttpRefusal<K>): Row {
  return ROWS[refusal.kind](refusal);
}

/** `refusal` as a web Response. */
export function toErrorResponse(refusal: HttpRefusal, id: JsonRpcId = null): Response {
  const { status, headers, body } = toErrorAnswer(refusal, id);
  return new Response(body, { status, headers });
}

/** Writes `refusal` to a `node:http` response whose head is not sent yet. */
export function writeErrorAnswer(res: ServerResponse, refusal: HttpRefusal): void {
  const { status, headers, body } = toErrorAnswer(refusal);
  res.writeHead(status, headers).end(body);
}
