/**
 * DNS-rebinding protection: `Origin` and `Host` checks (Streamable HTTP requires a 403 for a present `Origin` that is
 * not allowed; this server refuses a `Host` it does not answer to the same way), and CORS for allowed browsers.
 */
import type { FetchHandler } from './context';
import { MCP_ALLOW } from './mcp-methods';
import { toErrorResponse } from './refusals';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export interface OriginPolicy {
  /** Exact origins (`https://app.example.com`) or `*`; `undefined`: loopback origins only. */
  readonly allowedOrigins: readonly string[] | undefined;
  /** Host names (no port) or `*`; `undefined` and `loopbackOnly`: loopback names only; else any. */
  readonly allowedHosts: readonly string[] | undefined;
  /** True when the server listens on loopback, so only loopback `Host` values are expected. */
  readonly loopbackOnly: boolean;
}

/** The host name of a `Host` header value, lower-cased, without the port. */
export function toHostName(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.indexOf(':');
  return colon === -1 ? lower : lower.slice(0, colon);
}

/** True when a browser page at `origin` may call the server. */
export function isOriginAllowed(origin: string, policy: OriginPolicy): boolean {
  if (policy.allowedOrigins !== undefined) {
    return (
      policy.allowedOrigins.includes('*') || policy.allowedOrigins.includes(origin.toLowerCase().replace(/\/$/, ''))
    );
  }
  try {
    return LOOPBACK_NAMES.has(new URL(origin).hostname.toLowerCase());
  } catch {
    return false;
  }
}

/** True when the `Host` header names this server. */
export function isHostAllowed(host: string | null, policy: OriginPolicy): boolean {
  if (policy.allowedHosts !== undefined) {
    if (policy.allowedHosts.includes('*')) return true;
    return host !== null && policy.allowedHosts.includes(toHostName(host));
  }
  if (!policy.loopbackOnly) return true;
  return host !== null && LOOPBACK_NAMES.has(toHostName(host));
}

const CORS_ALLOW_HEADERS =
  'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID';
const CORS_EXPOSE_HEADERS = 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate';

/**
 * Refuses a foreign `Origin` or `Host` with 403, answers CORS preflights, and adds the CORS response
 * headers (exposing `Mcp-Session-Id`) for allowed browser origins.
 */
export function withOriginChecks(next: FetchHandler, policy: OriginPolicy): FetchHandler {
  return async (req, ctx) => {
    const origin = req.headers.get('origin');
    if (!isHostAllowed(req.headers.get('host'), policy)) {
      ctx.log.error_code = 'host_not_allowed';
      return toErrorResponse({ kind: 'host_not_allowed' });
    }
    if (origin !== null && !isOriginAllowed(origin, policy)) {
      ctx.log.error_code = 'origin_not_allowed';
      return toErrorResponse({ kind: 'origin_not_allowed' });
    }
    if (req.method === 'OPTIONS') {
      // CORS lets a browser send GET too, so that it reads the 405 instead of failing on CORS.
      const headers = new Headers({
        allow: MCP_ALLOW,
        'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
        'access-control-allow-headers': CORS_ALLOW_HEADERS,
        'access-control-max-age': '600',
      });
      if (origin !== null) addCorsHeaders(headers, origin);
      return new Response(null, { status: 204, headers });
    }
    const res = await next(req, ctx);
    if (origin !== null) addCorsHeaders(res.headers, origin);
    return res;
  };
}

function addCorsHeaders(headers: Headers, origin: string): void {
  headers.set('access-control-allow-origin', origin);
  headers.set('access-control-expose-headers', CORS_EXPOSE_HEADERS);
  headers.append('vary', 'Origin');
}
