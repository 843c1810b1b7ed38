/** Raw TCP from the test process to a preview URL or a server's port: what a client gets, byte for byte. */
import { connect, type Socket } from 'node:net';

export interface Exchanged {
  /** Everything received until the connection closed. */
  readonly received: Buffer;
  /** The socket error that ended it, if any (ECONNREFUSED, ECONNRESET). */
  readonly error?: string;
}

/** Connects to the URL's host and port and resolves once connected (rejects with the connect error). */
export function openConnection(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port), allowHalfOpen: true });
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** Writes `request` on `socket` (then half-closes it, when `end`), and collects the answer until the connection
 * closes. */
export function exchangeOn(socket: Socket, request: string | Buffer, end = false): Promise<Exchanged> {
  const chunks: Buffer[] = [];
  let error: string | undefined;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
  socket.on('end', () => socket.end());
  const closed = new Promise<Exchanged>((resolve) =>
    socket.once('close', () => resolve({ received: Buffer.concat(chunks), ...(error === undefined ? {} : { error }) })),
  );
  if (end) socket.end(request);
  else socket.write(request);
  return closed;
}

/** Connects and exchanges; a refused connection resolves with its error and nothing received. */
export async function exchange(url: string, request: string | Buffer, end = false): Promise<Exchanged> {
  const opened = await openConnection(url).then(
    (socket) => ({ socket }),
    (err: NodeJS.ErrnoException) => ({ error: err.code ?? err.message }),
  );
  if ('error' in opened) return { received: Buffer.alloc(0), error: opened.error };
  return exchangeOn(opened.socket, request, end);
}

/** An HTTP/1.0 GET of `path` (the server closes the connection after its answer), with `headers` (a preview's
 * Cookie). */
export const httpGet = (path: string, headers: readonly string[] = []): string =>
  [`GET ${path} HTTP/1.0`, 'Host: preview', ...headers, '', ''].join('\r\n');

/** A preview URL opened as a browser opens it: its token traded for the cookie on the 302. */
export interface OpenedPreview {
  /** `http://host:port`, the preview's origin. */
  readonly origin: string;
  /** The Cookie header to send from then on (`Cookie: mcp_preview_<port>=…`). */
  readonly cookie: string;
}

/** Opens a preview URL (`http://host:port/?mcp_preview=<token>`): the 302 and its cookie, or throws with what came
 * instead. */
export async function openPreview(url: string): Promise<OpenedPreview> {
  const { origin, pathname, search, host } = new URL(url);
  const answer = (
    await exchange(origin, `GET ${pathname}${search} HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
  ).received.toString('latin1');
  const cookie = /^Set-Cookie: ([^;\r\n]+);/im.exec(answer)?.[1];
  if (!answer.startsWith('HTTP/1.1 302 ') || cookie === undefined)
    throw new Error(`opening ${origin} gave no cookie: ${answer.split('\r\n')[0] ?? 'nothing'}`);
  return { origin, cookie: `Cookie: ${cookie}` };
}

/** `fetch` of `path` on an opened preview, with its cookie. */
export const fetchPreview = (preview: OpenedPreview, path: string, init: RequestInit = {}): Promise<Response> =>
  fetch(new URL(path, preview.origin), {
    ...init,
    headers: {
      ...(init.headers as Record<string, string> | undefined),
      cookie: preview.cookie.slice('Cookie: '.length),
    },
    redirect: 'manual',
  });

/** The body of an HTTP answer. */
export const bodyOf = (answer: Buffer): string => {
  const text = answer.toString('utf8');
  const at = text.indexOf('\r\n\r\n');
  return at < 0 ? '' : text.slice(at + 4);
};

/** A raw connection to a loopback server, read as text as it comes. */
export interface RawConnection {
  socket: Socket;
  received(): string;
  /** The socket error that ended the connection (ECONNRESET), if any. */
  error(): string | undefined;
  closed: Promise<void>;
}

/** Connects to `127.0.0.1:<port>` from `localAddress` (127.0.0.0/8 is loopback: each address is another peer). */
export function openFrom(port: number, localAddress = '127.0.0.1'): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    let data = '';
    let error: string | undefined;
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('end', () => socket.end());
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.once('error', reject);
    socket.once('connect', () => resolve({ socket, received: () => data, error: () => error, closed }));
  });
}
