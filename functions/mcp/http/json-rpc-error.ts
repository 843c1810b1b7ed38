/** The one builder of JSON-RPC error bodies that the HTTP layer answers with. */

/** JSON-RPC error codes used at the HTTP gate (the SDK answers the ones inside dispatch). */
export const RPC = Object.freeze({
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  SERVER_ERROR: -32000,
  SESSION_NOT_FOUND: -32001,
});

export interface JsonRpcErrorOptions {
  /** HTTP status of the answer. */
  status: number;
  /** JSON-RPC error code. */
  code: number;
  /** What was wrong and what to do; never a secret or a stack. */
  message: string;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** The request id to echo, when it is known. @default null */
  id?: string | number | null;
}

/** A refusal for want of room (429 or 503): its status, message and `Retry-After`. */
export interface RetryLater {
  readonly status: number;
  readonly message: string;
  readonly retryAfterS: number;
}

/** The answer to a request refused for want of room: a server error with `Retry-After`. */
export function retryLaterError(refusal: RetryLater, id: string | number | null = null): Response {
  return jsonRpcError({ status: refusal.status, code: RPC.SERVER_ERROR, message: refusal.message, headers: { 'retry-after': String(refusal.retryAfterS) }, id });
}

/** A JSON-RPC error response with the given HTTP status. */
export function jsonRpcError({ status, code, message, headers, id = null }: JsonRpcErrorOptions): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id }, { status, headers });
}
