/**
 * The few cookie rules a scripted browser needs against one origin (RFC 6265): keep each Set-Cookie by name and
 * path, drop it when it expires, and send back those whose path matches the request's. Domain, Secure and SameSite
 * are not looked at: the jar serves a single loopback http origin (completeAuthorization in oidc-provider.ts).
 */

interface StoredCookie {
  readonly name: string;
  readonly value: string;
  readonly path: string;
  /** Epoch milliseconds; undefined for a session cookie. */
  readonly expiresAt?: number;
}

/** RFC 6265 section 5.1.4: the directory of the request path, the default path of a cookie set without one. */
function defaultPath(requestPath: string): string {
  const lastSlash = requestPath.lastIndexOf('/');
  return lastSlash <= 0 ? '/' : requestPath.slice(0, lastSlash);
}

/** RFC 6265 section 5.1.4: does `cookiePath` cover `requestPath`? */
function pathMatches(cookiePath: string, requestPath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/';
}

/** One Set-Cookie header value, read for name, value, path and expiry. */
function parseSetCookie(header: string, requestPath: string, now: number): StoredCookie | undefined {
  const [pair = '', ...attributes] = header.split(';');
  const eq = pair.indexOf('=');
  if (eq <= 0) return undefined;
  let path = defaultPath(requestPath);
  let expiresAt: number | undefined;
  let maxAgeSeen = false;
  for (const attribute of attributes) {
    const [rawKey = '', ...rest] = attribute.split('=');
    const key = rawKey.trim().toLowerCase();
    const value = rest.join('=').trim();
    if (key === 'path' && value.startsWith('/')) path = value;
    // Max-Age wins over Expires (RFC 6265 section 5.3).
    if (key === 'max-age' && /^-?\d+$/.test(value)) {
      expiresAt = now + Number(value) * 1000;
      maxAgeSeen = true;
    }
    if (key === 'expires' && !maxAgeSeen) {
      const at = Date.parse(value);
      if (!Number.isNaN(at)) expiresAt = at;
    }
  }
  return {
    name: pair.slice(0, eq).trim(),
    value: pair.slice(eq + 1).trim(),
    path,
    ...(expiresAt === undefined ? {} : { expiresAt }),
  };
}

export class CookieJar {
  /** Keyed by `path` and `name`: the same name under two paths is two cookies. */
  private readonly cookies = new Map<string, StoredCookie>();

  /** Takes in the Set-Cookie headers of a response to `url` (an expired one removes its cookie). */
  store(url: URL, setCookieHeaders: readonly string[]): void {
    const now = Date.now();
    for (const header of setCookieHeaders) {
      const cookie = parseSetCookie(header, url.pathname, now);
      if (cookie === undefined) continue;
      const key = `${cookie.path}\n${cookie.name}`;
      if (cookie.expiresAt !== undefined && cookie.expiresAt <= now) this.cookies.delete(key);
      else this.cookies.set(key, cookie);
    }
  }

  /** The Cookie header for a request to `url`, longest paths first (RFC 6265 section 5.4); undefined when none
   * applies. */
  headerFor(url: URL): string | undefined {
    const now = Date.now();
    const sent = [...this.cookies.values()]
      .filter((c) => (c.expiresAt === undefined || c.expiresAt > now) && pathMatches(c.path, url.pathname))
      .sort((a, b) => b.path.length - a.path.length)
      .map((c) => `${c.name}=${c.value}`);
    return sent.length === 0 ? undefined : sent.join('; ');
  }
}
