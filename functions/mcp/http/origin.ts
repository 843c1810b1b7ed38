/** The Origin and Host rules (DNS-rebinding protection) as plain predicates; http/mcp-gates.ts applies them. */
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
