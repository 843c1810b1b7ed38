/** Raw TCP from the test process to a preview URL (http://host:port): what a client gets, byte for byte. */
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

/** Writes `request` on `socket` (then half-closes it, when `end`), and collects the answer until the connection closes. */
export function exchangeOn(socket: Socket, request: string | Buffer, end = false): Promise<Exchanged> {
  const chunks: Buffer[] = [];
  let error: string | undefined;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
  socket.on('end', () => socket.end());
  const closed = new Promise<Exchanged>((resolve) => socket.once('close', () => resolve({ received: Buffer.concat(chunks), ...(error === undefined ? {} : { error }) })));
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

/** An HTTP/1.0 GET of `path` (the server closes the connection after its answer). */
export const httpGet = (path: string): string => `GET ${path} HTTP/1.0\r\nHost: preview\r\n\r\n`;

/** The body of an HTTP answer. */
export const bodyOf = (answer: Buffer): string => {
  const text = answer.toString('utf8');
  const at = text.indexOf('\r\n\r\n');
  return at < 0 ? '' : text.slice(at + 4);
};
