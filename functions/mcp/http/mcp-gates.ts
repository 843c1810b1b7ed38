/**
 * The gates of a request to `/mcp`, composed once, in the order they refuse: Host and Origin (DNS-rebinding
 * protection: Streamable HTTP requires a 403 for an `Origin` that is not allowed, and a `Host` this server does not
 * answer to is refused the same way), a CORS preflight answered, the bearer token (the static tokens, then OAuth),
 * the method, and for a POST its Accept (406) and Content-Type (415). The core's app runs them on web Requests; a
 * cold instance's early `initialize` runs the same function on Node's headers and answers only when all pass.
 */
import { ANONYMOUS_PRINCIPAL, type BearerVerifier, bearerTokenOf, type OAuthGate } from './auth';
import type { FetchHandler } from './context';
import { MCP_ALLOW } from './mcp-methods';
import { isHostAllowed, isOriginAllowed, type OriginPolicy } from './origin';
import { type HttpRefusal, toErrorResponse } from './refusals';

/** One request header by its lower-case name, `undefined` when absent (web `Headers` and Node's both give one). */
export type HeaderOf = (name: string) => string | undefined;

export interface McpGateDeps {
  policy: OriginPolicy;
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  /** With MCP_OAUTH_ISSUER: access tokens that are not static tokens are checked here. */
  oauth?: OAuthGate;
}

/** What the gates decide: pass (with the credential), answer a CORS preflight, or refuse. */
export type GateVerdict =
  | { readonly kind: 'pass'; readonly principal: string }
  | { readonly kind: 'preflight' }
  | { readonly kind: 'refuse'; readonly refusal: HttpRefusal; readonly code?: string; readonly detail?: string };

/** How long a client is told to wait when the issuer cannot be reached. */
const AUTH_UNAVAILABLE_RETRY_S = 10;

/** Runs the gates of a `method` request to `/mcp`. `peer`: the client's address, which caps OAuth checks. */
export async function runMcpGates(
  method: string,
  header: HeaderOf,
  deps: McpGateDeps,
  peer?: string,
): Promise<GateVerdict> {
  if (!isHostAllowed(header('host') ?? null, deps.policy))
    return refuse({ kind: 'host_not_allowed' }, 'host_not_allowed');
  const origin = header('origin');
  if (origin !== undefined && !isOriginAllowed(origin, deps.policy))
    return refuse({ kind: 'origin_not_allowed' }, 'origin_not_allowed');
  if (method === 'OPTIONS') return { kind: 'preflight' };
  const verdict = await authenticate(header('authorization'), deps, peer);
  if (verdict.kind !== 'pass') return verdict;
  // GET would open an idle SSE stream that holds one of FC's request slots until the function timeout.
  if (method !== 'POST' && method !== 'DELETE') return refuse({ kind: 'mcp_method_not_allowed', method });
  if (method === 'POST' && !acceptsMcpAnswers(header('accept'))) return refuse({ kind: 'not_acceptable' });
  if (method === 'POST' && !isJsonContentType(header('content-type')))
    return refuse({ kind: 'unsupported_media_type' });
  return verdict;
}

/**
 * The token: 401 with a Bearer challenge unless the request carries a valid one, 403 for an OAuth token without a
 * required scope, 503 when the issuer cannot be reached to check one or the check must wait its turn.
 */
async function authenticate(
  authorization: string | undefined,
  { verifier, oauth }: McpGateDeps,
  peer: string | undefined,
): Promise<GateVerdict> {
  if (verifier === undefined && oauth === undefined) return { kind: 'pass', principal: ANONYMOUS_PRINCIPAL };
  const token = bearerTokenOf(authorization ?? null);
  const result = verifier?.checkToken(token) ?? { ok: false, reason: token === undefined ? 'missing' : 'invalid' };
  if (result.ok) return { kind: 'pass', principal: result.principal };
  if (oauth === undefined || token === undefined) {
    const challenge = oauth === undefined ? {} : { challenge: oauth.challenge() };
    return refuse({ kind: 'unauthorized', reason: result.reason, ...challenge }, `auth_${result.reason}`);
  }
  const check = await oauth.verify(token, peer);
  if (check.ok) return { kind: 'pass', principal: check.principal };
  const code = `auth_${check.reason}`;
  switch (check.reason) {
    case 'unavailable':
      return refuse({ kind: 'auth_unavailable', retryAfterS: AUTH_UNAVAILABLE_RETRY_S }, code, check.detail);
    case 'busy':
      return refuse({ kind: 'auth_busy', what: check.what, retryAfterS: check.retryAfterS }, code, check.detail);
    case 'insufficient_scope': {
      const refusal = { challenge: oauth.challenge('insufficient_scope'), detail: check.detail };
      return refuse({ kind: 'insufficient_scope', ...refusal }, code, check.detail);
    }
    default:
      return refuse(
        { kind: 'unauthorized', reason: 'invalid', challenge: oauth.challenge('invalid_token') },
        code,
        check.detail,
      );
  }
}

function refuse(refusal: HttpRefusal, code?: string, detail?: string): GateVerdict {
  return { kind: 'refuse', refusal, ...(code !== undefined && { code }), ...(detail !== undefined && { detail }) };
}

/** Streamable HTTP: the client must accept both JSON and an event stream. Media types are case-insensitive. */
export function acceptsMcpAnswers(accept: string | null | undefined): boolean {
  return accept != null && /application\/json/i.test(accept) && /text\/event-stream/i.test(accept);
}

/**
 * The body must be `application/json`: the media type before any parameters, case-insensitive, parameters
 * (`charset=utf-8`) ignored; a list of types is not one type.
 */
export function isJsonContentType(contentType: string | null | undefined): boolean {
  if (contentType == null) return false;
  const semicolon = contentType.indexOf(';');
  const essence = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return essence === 'application/json';
}

const CORS_ALLOW_HEADERS =
  'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID';
const CORS_EXPOSE_HEADERS = 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate';

/**
 * The gates in front of `next`: refusals answered, `ctx.principal` set, CORS preflights answered, and the CORS
 * response headers (exposing `Mcp-Session-Id`) added for allowed browser origins past the Origin check.
 */
export function withMcpGates(next: FetchHandler, deps: McpGateDeps): FetchHandler {
  return async (req, ctx) => {
    const origin = req.headers.get('origin');
    const verdict = await runMcpGates(req.method, (name) => req.headers.get(name) ?? undefined, deps, ctx.peer);
    let res: Response;
    if (verdict.kind === 'refuse') {
      if (verdict.code !== undefined) ctx.log.error_code = verdict.code;
      if (verdict.detail !== undefined) ctx.log.auth_detail = verdict.detail;
      res = toErrorResponse(verdict.refusal);
      const kind = verdict.refusal.kind;
      if (kind === 'host_not_allowed' || kind === 'origin_not_allowed') return res;
    } else if (verdict.kind === 'preflight') {
      // CORS lets a browser send GET too, so that it reads the 405 instead of failing on CORS.
      const headers = new Headers({
        allow: MCP_ALLOW,
        'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
        'access-control-allow-headers': CORS_ALLOW_HEADERS,
        'access-control-max-age': '600',
      });
      res = new Response(null, { status: 204, headers });
    } else {
      ctx.principal = verdict.principal;
      res = await next(req, ctx);
    }
    if (origin !== null) {
      res.headers.set('access-control-allow-origin', origin);
      res.headers.set('access-control-expose-headers', CORS_EXPOSE_HEADERS);
      res.headers.append('vary', 'Origin');
    }
    return res;
  };
}
