/**
 * What the HTTP front of a preview admits (preview-connection.ts reads the connection; request-framing.ts finds
 * each request head in it): every request head of every connection is judged here before any of its bytes go
 * into the sandbox, and only a request that proves it holds the preview's capability goes on.
 *
 * - `?mcp_preview=<token>` (the URL get_preview_url returns; preview-token.ts) valid for this forwarder: `302` to
 *   the same path without the parameter, with a cookie (`mcp_preview_<host port>`, HttpOnly, SameSite=Lax,
 *   Path=/, for the token's remaining life), so the app never sees the token and the browser carries the cookie.
 * - that cookie, valid: the request goes on, with every preview cookie taken out of its Cookie headers (a browser
 *   sends the cookies of every port of a host to each of them, so another sandbox's app would otherwise receive
 *   this one's). A request carrying an Origin other than one of this sandbox's previews gets 403: the page of
 *   another preview on this host (same site: SameSite does not keep the cookie from it) must not reach this one
 *   with the user's cookie.
 * - with a host name per sandbox (LOCAL_SANDBOX_PREVIEW_DOMAIN), a request whose Host is not this preview's name
 *   gets 421: the preview answers only under its own name, so that its cookies live in its own jar.
 * - anything else: 401 with a short text (no valid token or cookie); the front's other refusals (400, 408, 431,
 *   502) are worded here too. Every refusal closes the connection.
 *
 * Tokens and cookies are compared in constant time (preview-token.ts) and never logged.
 */
import type { RequestHead } from '../../request-framing';

/** The query parameter of a preview URL that carries its token. */
export const PREVIEW_PARAM = 'mcp_preview';

/** The cookie of the preview on `hostPort` (cookies are per host, not per port: the name tells previews apart). */
export const previewCookieName = (hostPort: number): string => `${PREVIEW_PARAM}_${hostPort}`;
const ANY_PREVIEW_COOKIE = new RegExp(`^${PREVIEW_PARAM}_\\d+$`);

/** What one forwarder accepts. */
export interface PreviewGate {
  /** Its cookie's name (previewCookieName of its host port). */
  readonly cookieName: string;
  /** A valid URL token: the cookie value it is exchanged for and the seconds that value has left. */
  admitToken(token: string): { cookie: string; maxAgeS: number } | undefined;
  /** Whether a cookie value is valid. */
  admitCookie(value: string): boolean;
  /** Whether a page of `origin` (an Origin header) may use the cookie: one of the sandbox's previews. */
  allowsOrigin(origin: string): boolean;
  /** Whether a request naming `host` (its Host header; undefined: none) is for this preview. */
  allowsHost(host: string | undefined): boolean;
}

/** The statuses the front answers itself. */
export type PreviewStatus = 302 | 400 | 401 | 403 | 408 | 421 | 431 | 502;

/** What to do with one request head. */
export type Verdict =
  /** Carry it in: these bytes (the head, its preview cookies taken out), then its body as it comes. */
  | { readonly kind: 'forward'; readonly head: Buffer }
  /** Answer it (and close): `headers` beside the usual ones; no body when `bodyless` (a HEAD request). */
  | {
      readonly kind: 'answer';
      readonly status: PreviewStatus;
      readonly headers: readonly string[];
      readonly bodyless: boolean;
    };

const REASONS: Record<PreviewStatus, string> = {
  302: 'Found',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  408: 'Request Timeout',
  421: 'Misdirected Request',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
};
const BODIES: Record<PreviewStatus, string> = {
  302: '',
  400:
    'Not an HTTP/1.x request this preview carries (its framing is malformed or ambiguous, or it asks for a ' +
    'tunnel). This is a sandbox preview; its URL comes from the get_preview_url tool.\n',
  401:
    'This is a sandbox preview: open it with the URL the get_preview_url tool returns (it carries an access ' +
    'token, exchanged here for a cookie). This request had no valid token or cookie for this preview: it ' +
    'expired, is for another preview, or the sandbox was reset since; ask get_preview_url again.\n',
  403:
    "This preview's cookie is not accepted from a page of another origin (another preview on this host). " +
    'Open the preview itself.\n',
  408: 'The request headers did not arrive in time.\n',
  421: 'This preview answers only at the host name of the URL the get_preview_url tool returns.\n',
  431: 'The request headers are too large.\n',
  502:
    'Nothing in the sandbox accepts connections on this port (not started yet, or it stopped), or the ' +
    'sandbox is not running: start the server, then reload.\n',
};

/** The whole answer of `status` (it closes the connection), as bytes to write. */
export function toAnswer(status: PreviewStatus, headers: readonly string[] = [], bodyless = false): Buffer {
  const body = BODIES[status];
  const lines = [`HTTP/1.1 ${status} ${REASONS[status]}`, ...headers, 'Cache-Control: no-store', 'Connection: close'];
  if (body !== '') lines.push('Content-Type: text/plain; charset=utf-8');
  lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${bodyless ? '' : body}`, 'latin1');
}

/** What to do with a whole request head. */
export function judgeHead(head: RequestHead, gate: PreviewGate): Verdict {
  const bodyless = head.method === 'HEAD';
  const answer = (status: PreviewStatus, headers: readonly string[] = []): Verdict => ({
    kind: 'answer',
    status,
    headers,
    bodyless,
  });
  const cookies: string[] = [];
  const origins: string[] = [];
  let host: string | undefined;
  for (const [name, value] of head.fields) {
    if (name === 'cookie') {
      for (const pair of value.split(';')) {
        const at = pair.indexOf('=');
        if (at > 0 && pair.slice(0, at).trim() === gate.cookieName) cookies.push(pair.slice(at + 1).trim());
      }
    } else if (name === 'origin') {
      origins.push(value);
    } else if (name === 'host') {
      host = value;
    }
  }
  if (!gate.allowsHost(host)) return answer(421);
  const cookieValid = cookies.some((value) => gate.admitCookie(value));
  const { path, params } = splitTarget(head.target);
  const tokens = params.filter((param) => decoded(param.split('=')[0] ?? '') === PREVIEW_PARAM);
  if (tokens.length > 0) {
    let admitted: { cookie: string; maxAgeS: number } | undefined;
    for (const param of tokens) {
      admitted ??= gate.admitToken(decoded(param.slice(param.indexOf('=') + 1)));
    }
    if (admitted === undefined && !cookieValid) return answer(401);
    // The token never reaches the app: the browser asks again without it, and with the cookie.
    const rest = params.filter((param) => !tokens.includes(param));
    // One leading slash, so that the Location stays on this host (`//host` or `/\host` would leave it).
    const location = `/${path.replace(/^[/\\]+/, '')}${rest.length > 0 ? `?${rest.join('&')}` : ''}`;
    const headers = [`Location: ${location}`];
    if (admitted !== undefined)
      headers.push(
        `Set-Cookie: ${gate.cookieName}=${admitted.cookie}; Max-Age=${Math.max(1, admitted.maxAgeS)}; ` +
          'Path=/; HttpOnly; SameSite=Lax',
      );
    return answer(302, headers);
  }
  if (!cookieValid) return answer(401);
  if (!origins.every((origin) => gate.allowsOrigin(origin))) return answer(403);
  return { kind: 'forward', head: Buffer.from(withoutPreviewCookies(head.text), 'latin1') };
}

/** A request target's path and query parameters (raw, as sent); the absolute form's scheme and host dropped. */
function splitTarget(target: string): { path: string; params: string[] } {
  const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?]*/.exec(target);
  const rest = absolute === null ? target : target.slice(absolute[0].length);
  const at = rest.indexOf('?');
  if (at < 0) return { path: rest, params: [] };
  return {
    path: rest.slice(0, at),
    params: rest
      .slice(at + 1)
      .split('&')
      .filter((param) => param !== ''),
  };
}

function decoded(component: string): string {
  try {
    return decodeURIComponent(component.replace(/\+/g, ' '));
  } catch {
    return component;
  }
}

/** The head with every preview cookie (of any port) taken out of its Cookie lines; other lines byte for byte. */
function withoutPreviewCookies(head: string): string {
  return head.replace(/^(cookie:)([^\r\n]*)(\r?\n)/gim, (line: string, name: string, value: string, eol: string) => {
    const pairs = value.split(';');
    const kept = pairs.filter((pair) => !ANY_PREVIEW_COOKIE.test((pair.split('=')[0] ?? '').trim()));
    if (kept.length === pairs.length) return line;
    const rest = kept.map((pair) => pair.trim()).filter((pair) => pair !== '');
    return rest.length === 0 ? '' : `${name} ${rest.join('; ')}${eol}`;
  });
}
