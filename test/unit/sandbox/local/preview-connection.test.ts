/**
 * One preview connection (preview-connection.ts) over loopback sockets, with a stand-in gate and the sandbox's
 * side a real SandboxStream over a recording link, scripted by each test: what reaches the app and when, on a
 * kept-alive or pipelined connection; a refused later request never carried and answered only after the app's
 * answers; bodies byte for byte; the stream raw after an upgrade; every deadline on an injected timer. With a
 * real supervisor and app behind it: preview-forwarder.test.ts.
 */
import { createServer, type Server, type Socket } from 'node:net';

import type { PreviewGate } from '../../../../functions/mcp/sandbox/local/preview-auth';
import {
  PREVIEW_DRAIN_MS,
  servePreviewConnection,
  type StartTimer,
} from '../../../../functions/mcp/sandbox/local/preview-connection';
import { Kind } from '../../../../functions/mcp/sandbox/local/supervisor-frames';
import { SandboxStream, type StreamLink } from '../../../../functions/mcp/sandbox/local/supervisor-streams';
import { pollUntil, SETTLE_MS } from '../../../support/processes';
import { exchangeOn, openConnection } from '../../../support/tcp';

const COOKIE = 'Cookie: mcp_preview_9=c00kie';
const GATE: PreviewGate = {
  cookieName: 'mcp_preview_9',
  admitToken: () => undefined,
  admitCookie: (value) => value === 'c00kie',
  allowsOrigin: (origin) => origin === 'http://own:9',
  allowsHost: () => true,
};
const HEAD_TIMEOUT_MS = 5_000;

/** The sandbox's side of the connection under test: what reached it, and its app's moves. */
interface App {
  /** Times the connection asked for the sandbox's side. */
  asked: number;
  /** Every byte carried in, in order. */
  readonly carried: Buffer[];
  /** The client's side ended (EOF carried in). */
  sawEof: boolean;
  stream?: SandboxStream;
  /** How the side is given: connected (default), refused, or none (no supervisor). */
  mode: 'connect' | 'refuse' | 'none';
}

let app: App;
/** The timers the connection started: they fire only when a test says so. */
const timers: { ms: number; fire: () => void; cancelled: boolean }[] = [];
const timer: StartTimer = (ms, fire) => {
  const started = { ms, fire, cancelled: false };
  timers.push(started);
  return () => (started.cancelled = true);
};
const running = (ms: number): { fire: () => void } | undefined => timers.find((t) => t.ms === ms && !t.cancelled);

function sandboxSide(): Promise<SandboxStream | undefined> {
  app.asked += 1;
  if (app.mode === 'none') return Promise.resolve(undefined);
  const link: StreamLink = {
    send: (kind, _key, _fd, payload) => {
      if (kind === Kind.Data && payload !== undefined) {
        app.carried.push(Buffer.from(payload));
        // Taken in by the app at once: the window never fills.
        queueMicrotask(() => stream.receive(Kind.Ack, Buffer.from(String(payload.length))));
      } else if (kind === Kind.Eof) {
        app.sawEof = true;
      }
    },
    backlogged: () => false,
    misbehaved: () => undefined,
    settled: () => undefined,
  };
  const stream = new SandboxStream(link, 1, () => undefined);
  app.stream = stream;
  // As from the supervisor: a frame that comes later, in an I/O turn of its own.
  setImmediate(() => stream.receive(Kind.Connected, Buffer.from(app.mode === 'refuse' ? 'ECONNREFUSED' : '')));
  return Promise.resolve(stream);
}

/** The app answers (bytes out of the sandbox), or ends its side. */
const appSends = (text: string): void => app.stream?.receive(Kind.Data, Buffer.from(text, 'latin1'));
const appEnds = (): void => app.stream?.receive(Kind.Eof, Buffer.alloc(0));
const carried = (): string => Buffer.concat(app.carried).toString('latin1');

let server: Server;
let url: string;
/** The server's side of each connection: what a lingering answer (its timer never fired) leaves open is closed after
 * each test. */
const accepted = new Set<Socket>();
beforeAll(async () => {
  server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket: Socket) => {
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
    socket.on('error', () => undefined);
    servePreviewConnection(socket, { gate: GATE, connect: sandboxSide, timer, headTimeoutMs: HEAD_TIMEOUT_MS });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
afterEach(() => {
  for (const socket of accepted) socket.destroy();
});
beforeEach(() => {
  app = { asked: 0, carried: [], sawEof: false, mode: 'connect' };
  timers.length = 0;
});

/** A client: what it received so far, and the whole once the connection closed. */
async function client(): Promise<{ socket: Socket; received: () => string; closed: Promise<string> }> {
  const socket = await openConnection(url);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = exchangeOn(socket, '').then((exchanged) => exchanged.received.toString('latin1'));
  return { socket, received: () => Buffer.concat(chunks).toString('latin1'), closed };
}

const request = (path: string, headers: string[] = [COOKIE]): string =>
  [`GET ${path} HTTP/1.1`, 'Host: h', ...headers, '', ''].join('\r\n');
const statusLines = (text: string): string[] => text.match(/^HTTP\/1\.1 \d{3} /gm) ?? [];
const until = <T>(probe: () => T, done: (value: T) => boolean): Promise<T> => pollUntil(probe, done, SETTLE_MS, 5);

describe('the first request', () => {
  it('refused: answered at once, and nothing asked of the sandbox', async () => {
    const c = await client();
    c.socket.write(request('/', []));
    expect(statusLines(await c.closed)).toEqual(['HTTP/1.1 401 ']);
    expect(app.asked).toBe(0);
  });

  it('admitted: carried in, with its body, then what the app sends comes back', async () => {
    const c = await client();
    c.socket.write(
      'POST /form HTTP/1.1\r\nHost: h\r\nCookie: a=1; mcp_preview_9=c00kie\r\nContent-Length: 4\r\n\r\nab',
    );
    c.socket.write('cd');
    await until(carried, (text) => text.endsWith('abcd'));
    expect(carried()).toBe('POST /form HTTP/1.1\r\nHost: h\r\nCookie: a=1\r\nContent-Length: 4\r\n\r\nabcd');
    appSends('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    await until(c.received, (text) => text.endsWith('ok'));
    c.socket.end();
    await until(
      () => app.sawEof,
      (saw) => saw,
    );
    appEnds();
    expect(await c.closed).toBe('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  });

  it('502 when the sandbox has no supervisor or nothing listens on the port', async () => {
    for (const mode of ['none', 'refuse'] as const) {
      app.mode = mode;
      const c = await client();
      c.socket.write(request('/'));
      expect({ mode, status: statusLines(await c.closed) }).toEqual({ mode, status: ['HTTP/1.1 502 '] });
    }
  });

  it(
    '408 once its deadline passes; ' + '400 when the client ends in the middle of it; nothing when it sent nothing',
    async () => {
      const slow = await client();
      slow.socket.write('GET / HTTP/1.1\r\n');
      (
        await until(
          () => running(HEAD_TIMEOUT_MS),
          (t) => t !== undefined,
        )
      )?.fire();
      expect(statusLines(await slow.closed)).toEqual(['HTTP/1.1 408 ']);
      const cut = await client();
      cut.socket.end('GET / HTTP/1.1\r\nHost:');
      expect(statusLines(await cut.closed)).toEqual(['HTTP/1.1 400 ']);
      const silent = await client();
      silent.socket.end();
      expect(await silent.closed).toBe('');
      expect(app.asked).toBe(0);
    },
  );
});

describe('the requests after it, on the same connection', () => {
  it(
    'each is judged: a kept-alive second request from a foreign page is never carried, and its 403 follows the ' +
      'app’s answers',
    async () => {
      const c = await client();
      c.socket.write(request('/one'));
      await until(carried, (text) => text.length > 0);
      appSends('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none');
      await until(c.received, (text) => text.endsWith('one'));
      c.socket.write(request('/two', [COOKIE, 'Origin: http://evil:1']));
      // The app is told its client ended; the refusal waits for the app to end its side.
      await until(
        () => app.sawEof,
        (saw) => saw,
      );
      expect(statusLines(c.received())).toEqual(['HTTP/1.1 200 ']);
      appSends('[late bytes of the app]');
      appEnds();
      const all = await c.closed;
      expect(all).toMatch(
        /^HTTP\/1\.1 200 OK\r\nContent-Length: 3\r\n\r\none\[late bytes of the app\]HTTP\/1\.1 403 Forbidden\r\n/,
      );
      expect(carried()).toBe(request('/one', []));
    },
  );

  it(
    'a pipelined second request without the cookie likewise: ' + 'the first goes in, not one byte of the second',
    async () => {
      const c = await client();
      c.socket.write(request('/one') + request('/two', ['X: pipelined']));
      await until(
        () => app.sawEof,
        (saw) => saw,
      );
      expect(carried()).toBe(request('/one', []));
      appSends('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
      appEnds();
      expect(statusLines(await c.closed)).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 401 ']);
    },
  );

  it('bodies pass byte for byte, Content-Length and chunked, and a request inside a body is body', async () => {
    const smuggled = request('/admin', []);
    const chunked = `5;ext=1\r\nhello\r\n${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\nX-Sum: 1\r\n\r\n`;
    const stream = [
      `POST /a HTTP/1.1\r\nHost: h\r\n${COOKIE}\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      `POST /b HTTP/1.1\r\nHost: h\r\n${COOKIE}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}`,
      request('/c'),
    ].join('');
    const c = await client();
    // Cut at odd places: in the middle of heads, chunk lines and data.
    for (let i = 0; i < stream.length; i += 7) c.socket.write(stream.slice(i, i + 7));
    const expected = stream.replaceAll(`${COOKIE}\r\n`, '');
    await until(carried, (text) => text.length >= expected.length);
    expect(carried()).toBe(expected);
    c.socket.destroy();
  });

  it('after an upgrade, the connection is the app’s: what follows passes unread', async () => {
    const c = await client();
    const frames = '\x81\x85 not HTTP at all \r\n\r\n';
    c.socket.write(request('/ws', [COOKIE, 'Upgrade: websocket', 'Connection: Upgrade', 'Origin: http://own:9']));
    await until(carried, (text) => text.length > 0);
    appSends('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    c.socket.write(Buffer.from(frames, 'latin1'));
    await until(carried, (text) => text.endsWith(frames));
    appSends('\x81\x02hi');
    await until(c.received, (text) => text.endsWith('\x81\x02hi'));
    c.socket.destroy();
  });

  it(
    'a later head has its deadline from its first byte (an idle kept-alive connection has none); the 408 follows ' +
      'the app’s answers',
    async () => {
      const c = await client();
      c.socket.write(request('/one'));
      await until(carried, (text) => text.length > 0);
      expect(running(HEAD_TIMEOUT_MS)).toBeUndefined();
      c.socket.write('GET /two HTTP/1.1\r\nHost');
      (
        await until(
          () => running(HEAD_TIMEOUT_MS),
          (t) => t !== undefined,
        )
      )?.fire();
      await until(
        () => app.sawEof,
        (saw) => saw,
      );
      appSends('HTTP/1.1 204 No Content\r\n\r\n');
      appEnds();
      expect(statusLines(await c.closed)).toEqual(['HTTP/1.1 204 ', 'HTTP/1.1 408 ']);
      expect(carried()).toBe(request('/one', []));
    },
  );

  it(
    'an app that does not end its side after a refusal: the connection closes at PREVIEW_DRAIN_MS, with no answer ' +
      'cut into the app’s',
    async () => {
      const c = await client();
      c.socket.write(request('/stream') + request('/two', []));
      await until(
        () => app.sawEof,
        (saw) => saw,
      );
      appSends('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nstill');
      await until(c.received, (text) => text.endsWith('still'));
      (
        await until(
          () => running(PREVIEW_DRAIN_MS),
          (t) => t !== undefined,
        )
      )?.fire();
      expect(await c.closed).toBe('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nstill');
    },
  );
});
