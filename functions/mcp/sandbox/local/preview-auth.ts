/**
 * The HTTP front of a preview served on a public address (LOCAL_SANDBOX_PREVIEW_PUBLIC=on): each connection's
 * first request is read here, up to PREVIEW_MAX_HEAD_BYTES of headers within PREVIEW_HEAD_TIMEOUT_MS, and only a
 * request that proves it holds the preview's capability goes on into the sandbox; nothing is carried in before.
 *
 * - `?mcp_preview=<token>` (the URL get_preview_url returns; preview-token.ts) valid for this forwarder: `302` to
 *   the same path without the parameter, with a cookie (`mcp_preview_<host port>`, HttpOnly, SameSite=Lax,
 *   Path=/, for the token's remaining life), so the app never sees the token and the browser carries the cookie.
 * - that cookie, valid: the request goes on, with every preview cookie taken out of its Cookie headers (a browser
 *   sends the cookies of every port of a host to each of them, so another sandbox's app would otherwise receive
 *   this one's), and the connection is then a raw pipe: later requests on it are not read here (keep-alive,
 *   streaming and WebSocket upgrades pass as they are). A request carrying an Origin other than one of this
 *   sandbox's previews gets 403: the page of another preview on this host (same site: SameSite does not keep the
 *   cookie from it) must not reach this one with the user's cookie.
 * - anything else: 401 with a short text (no valid token or cookie), 400 (not HTTP/1.x), 408 (headers too slow),
 *   431 (headers too large), and the connection closes.
 *
 * Tokens and cookies are compared in constant time (preview-token.ts) and never logged.
 */
import type { Socket } from 'node:net';

/** The query parameter of a preview URL that carries its token. */
export const PREVIEW_PARAM = 'mcp_preview';
/** The most bytes of request line and headers read before a request is refused (431). */
export const PREVIEW_MAX_HEAD_BYTES = 16 * 1024;
/** How long a new connection may take to send its first request's headers (then 408). */
export const PREVIEW_HEAD_TIMEOUT_MS = 10_000;
/** How long a refused connection stays open after its answer, dropping what the client still sends. */
const LINGER_MS = 2_000;

/** Starts a timer; the returned function cancels it. Injected by tests. */
export type StartTimer = (ms: number, fire: () => void) => () => void;

const REAL_TIMER: StartTimer = (ms, fire) => {
  const timer = setTimeout(fire, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

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
}

export interface AdmitOptions {
  /** @default PREVIEW_MAX_HEAD_BYTES */
  maxHeadBytes?: number;
  /** @default PREVIEW_HEAD_TIMEOUT_MS */
  timeoutMs?: number;
  /** @default setTimeout, unref'd */
  timer?: StartTimer;
}

const TCHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
const REQUEST_LINE = new RegExp(`^(${TCHAR}{1,32}) ([\\x21-\\x7e]+) HTTP/1\\.[01]\\r?$`);
const HEADER_LINE = new RegExp(`^(${TCHAR}+):([\\t\\x20-\\x7e\\x80-\\xff]*)$`);
const METHOD_SO_FAR = new RegExp(`^${TCHAR}{0,32}$`);

const REASONS: Record<number, string> = {
  302: 'Found',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};
const BODIES: Record<number, string> = {
  400: 'Not an HTTP/1.x request. This is a sandbox preview; its URL comes from the get_preview_url tool.\n',
  401: 'This is a sandbox preview: open it with the URL the get_preview_url tool returns (it carries an access token, exchanged here for a cookie). This request had no valid token or cookie for this preview: it expired, is for another preview, or the sandbox was reset since; ask get_preview_url again.\n',
  403: "This preview's cookie is not accepted from a page of another origin (another preview on this host). Open the preview itself.\n",
  408: 'The request headers did not arrive in time.\n',
  431: 'The request headers are too large.\n',
};

type Verdict =
  | { readonly kind: 'forward'; readonly head: string }
  | { readonly kind: 'redirect'; readonly location: string; readonly cookie?: string; readonly head: boolean }
  | { readonly kind: 'refuse'; readonly status: 400 | 401 | 403; readonly head: boolean };

/**
 * Reads the first request of `socket` (a connection just accepted, paused) and admits it or answers it. Resolves
 * with the bytes to send into the sandbox first (that request, its preview cookies taken out, and whatever
 * followed it), the socket paused; or with undefined once the connection was answered (and is closing) or
 * closed.
 */
export function admitPreview(socket: Socket, gate: PreviewGate, options: AdmitOptions = {}): Promise<Buffer | undefined> {
  const maxHeadBytes = options.maxHeadBytes ?? PREVIEW_MAX_HEAD_BYTES;
  const timer = options.timer ?? REAL_TIMER;
  return new Promise((resolve) => {
    let buf = Buffer.alloc(1024);
    let len = 0;
    let lineChecked = false;
    let settled = false;
    const settle = (forward: Buffer | undefined): void => {
      if (settled) return;
      settled = true;
      stopTimer();
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onClose);
      resolve(forward);
    };
    const refuse = (status: number, omitBody = false, headers: readonly string[] = []): void => {
      settle(undefined);
      answer(socket, status, headers, omitBody ? '' : (BODIES[status] ?? ''), timer);
    };
    const onData = (chunk: Buffer): void => {
      const from = Math.max(0, len - 2);
      if (len + chunk.length > buf.length) {
        const bigger = Buffer.alloc(Math.max(buf.length * 2, len + chunk.length));
        buf.copy(bigger, 0, 0, len);
        buf = bigger;
      }
      chunk.copy(buf, len);
      len += chunk.length;
      const view = buf.subarray(0, len);
      // Not HTTP is told at once, from the method, or from the request line once it is whole.
      if (!lineChecked) {
        const lineEnd = view.indexOf(0x0a, from);
        if (lineEnd < 0) {
          const start = view.toString('latin1', 0, Math.min(len, 33));
          const space = start.indexOf(' ');
          if (!METHOD_SO_FAR.test(space < 0 ? start : start.slice(0, space)) || space === 0) return refuse(400);
        } else {
          if (!REQUEST_LINE.test(view.toString('latin1', 0, lineEnd))) return refuse(400);
          lineChecked = true;
        }
      }
      const end = headEnd(view, from);
      if (end < 0 ? len > maxHeadBytes : end > maxHeadBytes) return refuse(431);
      if (end < 0) return;
      socket.pause();
      const verdict = judge(view.toString('latin1', 0, end), gate);
      if (verdict.kind === 'forward') {
        settle(Buffer.concat([Buffer.from(verdict.head, 'latin1'), view.subarray(end)]));
      } else if (verdict.kind === 'redirect') {
        const headers = [`Location: ${verdict.location}`];
        if (verdict.cookie !== undefined) headers.push(`Set-Cookie: ${verdict.cookie}`);
        refuse(302, true, headers);
      } else {
        refuse(verdict.status, verdict.head);
      }
    };
    // Ended before a whole request: nothing to say to a client that sent nothing.
    const onEnd = (): void => {
      if (len > 0) return refuse(400);
      settle(undefined);
      socket.destroy();
    };
    const onClose = (): void => settle(undefined);
    const stopTimer = timer(options.timeoutMs ?? PREVIEW_HEAD_TIMEOUT_MS, () => refuse(408));
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onClose);
    socket.resume();
  });
}

/** The offset just past the blank line that ends the headers (CRLF or LF line ends), or -1. */
function headEnd(view: Buffer, from: number): number {
  for (let i = view.indexOf(0x0a, from); i >= 0; i = view.indexOf(0x0a, i + 1)) {
    if (view[i + 1] === 0x0a) return i + 2;
    if (view[i + 1] === 0x0d && view[i + 2] === 0x0a) return i + 3;
  }
  return -1;
}

/** What to do with a whole request head (latin1: byte for byte). */
function judge(head: string, gate: PreviewGate): Verdict {
  const lines = head.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  const request = REQUEST_LINE.exec(lines[0] ?? '');
  if (request === null) return { kind: 'refuse', status: 400, head: false };
  const isHead = request[1] === 'HEAD';
  const cookies: string[] = [];
  const origins: string[] = [];
  for (const line of lines.slice(1, -2)) {
    // Folded lines (obsolete) and anything else that is not `name: value` are refused.
    const header = HEADER_LINE.exec(line);
    if (header === null) return { kind: 'refuse', status: 400, head: isHead };
    const name = (header[1] ?? '').toLowerCase();
    const value = (header[2] ?? '').trim();
    if (name === 'cookie') {
      for (const pair of value.split(';')) {
        const at = pair.indexOf('=');
        if (at > 0 && pair.slice(0, at).trim() === gate.cookieName) cookies.push(pair.slice(at + 1).trim());
      }
    } else if (name === 'origin') {
      origins.push(value);
    }
  }
  const cookieValid = cookies.some((value) => gate.admitCookie(value));
  const { path, params } = splitTarget(request[2] ?? '');
  const tokens = params.filter((param) => decoded(param.split('=')[0] ?? '') === PREVIEW_PARAM);
  if (tokens.length > 0) {
    let admitted: { cookie: string; maxAgeS: number } | undefined;
    for (const param of tokens) {
      admitted ??= gate.admitToken(decoded(param.slice(param.indexOf('=') + 1)));
    }
    if (admitted === undefined && !cookieValid) return { kind: 'refuse', status: 401, head: isHead };
    // The token never reaches the app: the browser asks again without it, and with the cookie.
    const rest = params.filter((param) => !tokens.includes(param));
    // One leading slash, so that the Location stays on this host (`//host` or `/\host` would leave it).
    const location = `/${path.replace(/^[/\\]+/, '')}${rest.length > 0 ? `?${rest.join('&')}` : ''}`;
    const cookie = admitted === undefined ? undefined : `${gate.cookieName}=${admitted.cookie}; Max-Age=${Math.max(1, admitted.maxAgeS)}; Path=/; HttpOnly; SameSite=Lax`;
    return { kind: 'redirect', location, ...(cookie === undefined ? {} : { cookie }), head: isHead };
  }
  if (!cookieValid) return { kind: 'refuse', status: 401, head: isHead };
  if (!origins.every((origin) => gate.allowsOrigin(origin))) return { kind: 'refuse', status: 403, head: isHead };
  return { kind: 'forward', head: withoutPreviewCookies(head) };
}

/** A request target's path and query parameters (raw, as sent); the absolute form's scheme and host dropped. */
function splitTarget(target: string): { path: string; params: string[] } {
  const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?]*/.exec(target);
  const rest = absolute === null ? target : target.slice(absolute[0].length);
  const at = rest.indexOf('?');
  if (at < 0) return { path: rest, params: [] };
  return { path: rest.slice(0, at), params: rest.slice(at + 1).split('&').filter((param) => param !== '') };
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

/** Answers and closes: what the client still sends is read and dropped for a while, so its answer is not lost to a reset. */
function answer(socket: Socket, status: number, headers: readonly string[], body: string, timer: StartTimer): void {
  if (socket.destroyed) return;
  const lines = [`HTTP/1.1 ${status} ${REASONS[status] ?? ''}`, ...headers, 'Cache-Control: no-store', 'Connection: close'];
  if (status !== 302) lines.push('Content-Type: text/plain; charset=utf-8');
  lines.push(`Content-Length: ${Buffer.byteLength(status === 302 ? '' : (BODIES[status] ?? ''))}`);
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  socket.on('data', () => undefined);
  socket.resume();
  const stop = timer(LINGER_MS, () => socket.destroy());
  socket.once('close', stop);
}
