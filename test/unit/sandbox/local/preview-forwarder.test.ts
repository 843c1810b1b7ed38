/**
 * A sandbox's preview forwarder (preview-forwarder.ts) over a supervisor run straight on the host (so "inside the
 * sandbox" is the host's own loopback here; the e2e suite shows it through bubblewrap): bytes both ways, half
 * closes, refusals, the connection and port caps, the window held against a reader that stops, idling, and the
 * end. Every forwarder is behind its capability URL, on loopback too (preview-auth.ts, preview-connection.ts):
 * the token, the cookie, every request of a connection judged (kept-alive and pipelined ones from a real HTTP
 * client and app), bodies and upgrades carried, the host name per sandbox, and every way in without them refused
 * before anything reaches the sandbox's side.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer as createHttpServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { StartTimer } from '../../../../functions/mcp/sandbox/local/preview-connection';
import {
  type PreviewAuth,
  PreviewForwarder,
  PreviewPortsBusy,
} from '../../../../functions/mcp/sandbox/local/preview-forwarder';
import { createPreviewSigner } from '../../../../functions/mcp/sandbox/local/preview-token';
import type { Supervisor } from '../../../../functions/mcp/sandbox/local/supervisor';
import { pollUntil, SETTLE_MS } from '../../../support/processes';
import { startHostSupervisor } from '../../../support/supervisor';
import { bodyOf, exchange, exchangeOn, fetchPreview, httpGet, openConnection, openPreview } from '../../../support/tcp';
import { tamperBase64Url } from '../../../support/tamper';

const SECRET = 'preview-test-secret-0123456789abcdef';
const TTL_MS = 3_600_000;
const signer = createPreviewSigner(SECRET, TTL_MS);
const SANDBOX = 'sandbox-a';
/** The fake clock the tokens are checked against. */
let now = Date.UTC(2026, 0, 1);
/** The timers the forwarder started (header deadlines, idle listeners): they fire only when a test says so. */
const timers: { ms: number; fire: () => void; cancelled: boolean }[] = [];
const timer: StartTimer = (ms, fire) => {
  const started = { ms, fire, cancelled: false };
  timers.push(started);
  return () => (started.cancelled = true);
};
beforeEach(() => {
  now = Date.UTC(2026, 0, 1);
  timers.length = 0;
});
const auth = (): PreviewAuth => ({ signer, sandbox: SANDBOX, now: () => now, timer, headTimeoutMs: 5_000 });

let dir: string;
let supervisor: Supervisor;
const forwarders: PreviewForwarder[] = [];
const servers: Server[] = [];
const appSockets = new Set<Socket>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forwarder-'));
  supervisor = await startHostSupervisor(dir);
});
afterEach(async () => {
  for (const forwarder of forwarders.splice(0)) forwarder.close();
  for (const socket of appSockets) socket.destroy();
  appSockets.clear();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});
afterAll(() => {
  supervisor.kill();
  rmSync(dir, { recursive: true, force: true });
});

function forwarder(
  options: {
    maxConnections?: number;
    maxPorts?: number;
    idleMs?: number;
    supervisor?: () => Promise<Supervisor | undefined>;
    name?: string;
  } = {},
): PreviewForwarder {
  const made = new PreviewForwarder({
    host: '127.0.0.1',
    supervisor: options.supervisor ?? (() => Promise.resolve(supervisor)),
    auth: auth(),
    ...options,
  });
  forwarders.push(made);
  return made;
}

/**
 * The app "in the sandbox": a TCP server on 127.0.0.1, answering each connection with `handle`; it closes its
 * side when the client closes its own, unless `allowHalfOpen`.
 */
async function app(handle: (socket: Socket) => void, allowHalfOpen = false): Promise<number> {
  const server = createServer({ allowHalfOpen }, (socket) => {
    appSockets.add(socket);
    socket.on('error', () => undefined);
    handle(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** An HTTP/1.0 server whose every answer is `body`. */
const httpApp = (body: string | Buffer): Promise<number> =>
  app((socket) => {
    socket.once('data', () =>
      socket.end(
        Buffer.concat([
          Buffer.from(`HTTP/1.0 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`),
          Buffer.from(body),
        ]),
      ),
    );
    socket.on('error', () => undefined);
  });

it('carries each connection to the port and back, on one URL that later calls reuse', async () => {
  const port = await httpApp('<h1>through the supervisor</h1>');
  const previews = forwarder();
  const url = await previews.open(port);
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?mcp_preview=[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
  const preview = await openPreview(url);
  expect(await (await fetchPreview(preview, '/')).text()).toBe('<h1>through the supervisor</h1>');
  const second = await exchange(preview.origin, httpGet('/', [preview.cookie]));
  expect(bodyOf(second.received)).toBe('<h1>through the supervisor</h1>');
  expect(new URL(await previews.open(port)).origin).toBe(preview.origin);
});

it('passes a half close through: the client ends its side and still gets the answer', async () => {
  const port = await app((socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => socket.end(Buffer.concat(chunks).toString().toUpperCase()));
  }, true);
  const preview = await openPreview(await forwarder().open(port));
  const answer = await exchange(
    preview.origin,
    `POST / HTTP/1.0\r\n${preview.cookie}\r\nContent-Length: 18\r\n\r\nping from the host`,
    true,
  );
  expect(answer).toEqual({ received: Buffer.from('POST / HTTP/1.0\r\nCONTENT-LENGTH: 18\r\n\r\nPING FROM THE HOST') });
});

it('answers 502 when nothing listens on the port, or when no supervisor runs', async () => {
  const port = await app(() => undefined);
  await new Promise((resolve) => servers.pop()?.close(resolve));
  for (const previews of [forwarder(), forwarder({ supervisor: () => Promise.resolve(undefined) })]) {
    const preview = await openPreview(await previews.open(port));
    const refused = await exchange(preview.origin, httpGet('/', [preview.cookie]));
    expect(refused.received.toString()).toMatch(
      /^HTTP\/1\.1 502 Bad Gateway\r\n[\s\S]*\r\n\r\nNothing in the sandbox accepts connections on this port/,
    );
  }
  expect(supervisor.alive).toBe(true);
});

it('closes connections beyond the cap at once, and carries the next one after one ended', async () => {
  // Keeps each connection open after answering, so that both stay counted.
  const port = await app((socket) => {
    socket.on('data', () => socket.write('ok\n'));
    socket.on('error', () => undefined);
  });
  const previews = forwarder({ maxConnections: 2 });
  const { origin, cookie } = await openPreview(await previews.open(port));
  const held = await Promise.all([openConnection(origin), openConnection(origin)]);
  for (const socket of held) {
    socket.write(httpGet('/', [cookie]));
    await new Promise((resolve) => socket.once('data', resolve));
  }
  expect(previews.connections).toBe(2);
  const third = await exchange(origin, httpGet('/', [cookie]));
  expect(third.received.length).toBe(0);
  held[0]?.destroy();
  await pollUntil(
    () => previews.connections,
    (n) => n === 1,
    SETTLE_MS,
  );
  const fourth = await openConnection(origin);
  fourth.write(httpGet('/', [cookie]));
  expect(String(await new Promise((resolve) => fourth.once('data', resolve)))).toBe('ok\n');
  for (const socket of [held[1], fourth]) socket?.destroy();
});

it(
  'holds a sender in the sandbox back while the client does not read (the window), then delivers every byte, and ' +
    'measures a 10 MB answer',
  async () => {
    const total = 64 * 2 ** 20;
    let appSocket: Socket | undefined;
    const port = await app((socket) => {
      appSocket = socket;
      socket.on('error', () => undefined);
      socket.once('data', () => {
        const chunk = Buffer.alloc(2 ** 20, 'x');
        for (let i = 0; i < total / chunk.length; i += 1) socket.write(chunk);
        socket.end();
      });
    });
    const { origin, cookie } = await openPreview(await forwarder().open(port));
    const client = await openConnection(origin);
    client.pause();
    client.write(httpGet('/', [cookie]));
    // Far more than the kernels' socket buffers hold stays with the sender: the supervisor stopped reading.
    const queued = await pollUntil(
      () => appSocket?.writableLength ?? 0,
      (n) => n >= total / 2,
      SETTLE_MS,
    );
    expect(queued).toBeGreaterThanOrEqual(total / 2);
    expect(supervisor.alive).toBe(true);
    let received = 0;
    client.on('data', (chunk: Buffer) => (received += chunk.length));
    await new Promise((resolve) => client.once('end', resolve).resume());
    expect(received).toBe(total);
    client.destroy();

    const tenMb = Buffer.alloc(10 * 2 ** 20, 'y');
    const bigPort = await httpApp(tenMb);
    const big = await openPreview(await forwarder().open(bigPort));
    const started = process.hrtime.bigint();
    const body = Buffer.from(await (await fetchPreview(big, '/')).arrayBuffer());
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    expect(body.equals(tenMb)).toBe(true);
    console.log(`10 MiB through the forwarder: ${ms.toFixed(0)} ms (${((10 / ms) * 1000).toFixed(0)} MiB/s)`);
  },
);

it('closes an idle listener, opens it again on the same host port, and closes everything on close()', async () => {
  const port = await app((socket) => {
    socket.on('data', () => socket.write('ok\n'));
    socket.on('error', () => undefined);
  });
  const previews = forwarder({ idleMs: 20 });
  const url = await previews.open(port);
  const { origin, cookie } = await openPreview(url);
  // The listener's idle time is a timer of the test's: it runs out once its connection closed, when fired here.
  const idle = await pollUntil(
    () => timers.find((t) => t.ms === 20 && !t.cancelled),
    (t) => t !== undefined,
    SETTLE_MS,
  );
  idle?.fire();
  const refused = await pollUntil(
    () => exchange(origin, 'hi', true),
    (answer) => answer.error === 'ECONNREFUSED',
    SETTLE_MS,
  );
  expect(refused.error).toBe('ECONNREFUSED');
  expect(new URL(await previews.open(port)).origin).toBe(origin);

  const open = await openConnection(origin);
  open.write(httpGet('/', [cookie]));
  await new Promise((resolve) => open.once('data', resolve));
  const ended = exchangeOn(open, '');
  previews.close();
  expect((await ended).received.length).toBe(0);
  expect((await exchange(origin, 'hi')).error).toBe('ECONNREFUSED');
  await expect(previews.open(port)).rejects.toThrow('ended');
});

it('listens on a bounded number of ports: the least recently asked for without a connection makes room', async () => {
  const ports = await Promise.all([0, 1, 2, 3].map(() => httpApp('page')));
  const previews = forwarder({ maxPorts: 2 });
  const [a, b, c, d] = ports as [number, number, number, number];
  const urlA = await previews.open(a);
  const urlB = await previews.open(b);
  // Asked for again, A is now the more recent: B makes room for C.
  expect(new URL(await previews.open(a)).origin).toBe(new URL(urlA).origin);
  const previewC = await openPreview(await previews.open(c));
  expect((await exchange(new URL(urlB).origin, httpGet('/'))).error).toBe('ECONNREFUSED');
  expect(bodyOf((await exchange(previewC.origin, httpGet('/', [previewC.cookie]))).received)).toBe('page');
  // Both carry a connection: no room for D.
  const held = await Promise.all([openConnection(new URL(urlA).origin), openConnection(previewC.origin)]);
  await pollUntil(
    () => previews.connections,
    (n) => n === 2,
    SETTLE_MS,
  );
  await expect(previews.open(d)).rejects.toBeInstanceOf(PreviewPortsBusy);
  for (const socket of held) socket.destroy();
  await pollUntil(
    () => previews.connections,
    (n) => n === 0,
    SETTLE_MS,
  );
  const previewD = await openPreview(await previews.open(d));
  expect(bodyOf((await exchange(previewD.origin, httpGet('/', [previewD.cookie]))).received)).toBe('page');
});

describe('behind a capability URL, on loopback as on a public address', () => {
  /**
   * The app "in the sandbox": keeps what each connection brought, and answers once its client ended its side
   * (the tests' clients all do, so that a request let through by mistake is answered at once).
   */
  async function recordingApp(): Promise<{ port: number; received: Buffer[] }> {
    const received: Buffer[] = [];
    const port = await app((socket) => {
      const chunks: Buffer[] = [];
      received.push(Buffer.alloc(0));
      const index = received.length - 1;
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        received[index] = Buffer.concat(chunks);
      });
      socket.on('end', () => socket.end('HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    }, true);
    return { port, received };
  }

  const statusOf = (answer: Buffer): number => Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer.toString('latin1'))?.[1] ?? 0);
  const headerOf = (answer: Buffer, name: string): string | undefined =>
    new RegExp(`^${name}: ([^\\r\\n]*)\\r$`, 'im').exec(answer.toString('latin1').split('\r\n\r\n')[0] + '\r')?.[1] ??
    undefined;
  const get = (path: string, headers: string[] = []): string =>
    [`GET ${path} HTTP/1.1`, 'Host: preview', ...headers, '', ''].join('\r\n');

  /** Opens the preview of a recording app; its URL, and the cookie its token is exchanged for. */
  async function opened(): Promise<{
    port: number;
    url: string;
    origin: string;
    received: Buffer[];
    cookie: string;
    cookieName: string;
  }> {
    const { port, received } = await recordingApp();
    const url = await forwarder().open(port);
    const { origin, pathname, search } = new URL(url);
    const answer = (await exchange(origin, get(`${pathname}${search}`), true)).received;
    const [cookieName = '', cookie = ''] =
      /^([^=]+)=([^;]+);/.exec(headerOf(answer, 'Set-Cookie') ?? '')?.slice(1) ?? [];
    return { port, url, origin, received, cookie, cookieName };
  }

  it(
    'gives a URL with a token, which a first request exchanges for a cookie on a 302 to the same path without it; ' +
      'the sandbox sees neither',
    async () => {
      const { port, received } = await recordingApp();
      const url = await forwarder().open(port);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?mcp_preview=[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
      const { origin, search } = new URL(url);
      const answer = (await exchange(origin, get(`/app/page?x=1&${search.slice(1)}&y=2`), true)).received;
      expect(statusOf(answer)).toBe(302);
      expect(headerOf(answer, 'Location')).toBe('/app/page?x=1&y=2');
      const hostPort = new URL(url).port;
      expect(headerOf(answer, 'Set-Cookie')).toMatch(
        new RegExp(
          `^mcp_preview_${hostPort}=[0-9a-z]+\\.[A-Za-z0-9_-]{22}; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax$`,
        ),
      );
      expect(headerOf(answer, 'Set-Cookie')).not.toContain(search.slice('?mcp_preview='.length));
      expect(received).toEqual([]);
    },
  );

  it(
    'carries a request with the cookie in byte for byte (preview cookies of every port taken out), and its body, ' +
      'Content-Length or chunked',
    async () => {
      const { origin, received, cookie, cookieName } = await opened();
      expect(cookie).not.toBe('');
      const body = 'hello';
      const request = (cookies: string): string =>
        [
          `POST /submit?x=1 HTTP/1.1`,
          'Host: preview',
          'X-Odd:  spaced\tvalue ',
          `Cookie: ${cookies}`,
          `Content-Length: ${body.length}`,
          '',
          body,
        ].join('\r\n');
      const chunked = (cookies: string): string =>
        [
          `POST /chunks HTTP/1.1`,
          'Host: preview',
          `Cookie: ${cookies}`,
          'Transfer-Encoding: chunked',
          '',
          '5;ext="1"',
          'hello',
          '7',
          ', world',
          '0',
          'X-Trailer: t',
          '',
          '',
        ].join('\r\n');
      const own = `${cookieName}=${cookie}`;
      const answer = await exchange(
        origin,
        request(`theme=dark; ${own}; mcp_preview_1234=another; lang=en`) + chunked(`${own}; b=2`),
        true,
      );
      expect(answer.received.toString()).toBe('HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok');
      expect(received.map(String)).toEqual([request('theme=dark; lang=en') + chunked('b=2')]);

      // With no other cookie, the Cookie line goes.
      await exchange(origin, get('/', [`Cookie: ${own}`]), true);
      expect(received[1]?.toString()).toBe(get('/'));
    },
  );

  it(
    'judges every request of a kept-alive connection: a second one from a foreign page gets 403 and never reaches ' +
      'the app (a real client and app)',
    async () => {
      const seen: { url: string; origin?: string; cookie?: string }[] = [];
      const web = createHttpServer((req, res) => {
        seen.push({
          url: req.url ?? '',
          ...(req.headers.origin === undefined ? {} : { origin: req.headers.origin }),
          ...(req.headers.cookie === undefined ? {} : { cookie: req.headers.cookie }),
        });
        res.end('page');
      });
      servers.push(web as unknown as Server);
      await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
      const preview = await openPreview(await forwarder().open((web.address() as { port: number }).port));
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set<unknown>();
      const get = (path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> =>
        new Promise((resolve, reject) => {
          const req = httpRequest(
            new URL(path, preview.origin),
            { agent, headers: { cookie: `${preview.cookie.slice('Cookie: '.length)}; app_session=a`, ...headers } },
            (res: IncomingMessage) => {
              const chunks: Buffer[] = [];
              res.on('data', (chunk: Buffer) => chunks.push(chunk));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
            },
          );
          req.on('socket', (socket) => sockets.add(socket));
          req.on('error', reject);
          req.end();
        });
      expect(await get('/one', { origin: preview.origin })).toEqual({ status: 200, body: 'page' });
      const second = await get('/two', { origin: 'http://127.0.0.1:1' });
      expect({ status: second.status, body: second.body }).toEqual({
        status: 403,
        body: expect.stringContaining('another origin'),
      });
      // One connection carried both.
      expect(sockets.size).toBe(1);
      expect(seen).toEqual([{ url: '/one', origin: preview.origin, cookie: 'app_session=a' }]);
      agent.destroy();
    },
  );

  it(
    'judges a pipelined request behind an admitted one: the first is answered, the second gets 401, not one byte ' +
      'of it reaches the app',
    async () => {
      const { origin, received, cookie, cookieName } = await opened();
      const answer = (
        await exchange(origin, get('/one', [`Cookie: ${cookieName}=${cookie}`]) + get('/two', ['X-Pipelined: yes']))
      ).received.toString();
      expect(answer.match(/HTTP\/1\.[01] \d{3}/g)).toEqual(['HTTP/1.0 200', 'HTTP/1.1 401']);
      expect(received.map(String)).toEqual([get('/one')]);
    },
  );

  it('carries a WebSocket-style upgrade, then the connection both ways as the app speaks it', async () => {
    const web = createHttpServer((_req, res) => res.end('not upgraded'));
    web.on('upgrade', (req: IncomingMessage, socket: Socket) => {
      // The app's now: closed after the test like the other apps' sockets.
      appSockets.add(socket);
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\nX-Origin: ` +
          `${req.headers.origin}\r\n\r\n`,
      );
      socket.on('data', (chunk: Buffer) => socket.write(Buffer.from(chunk.toString('latin1').toUpperCase(), 'latin1')));
    });
    servers.push(web as unknown as Server);
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    const preview = await openPreview(await forwarder().open((web.address() as { port: number }).port));
    const upgraded = await new Promise<{ head: IncomingMessage; socket: Socket }>((resolve, reject) => {
      const req = httpRequest(new URL('/ws', preview.origin), {
        headers: {
          cookie: preview.cookie.slice('Cookie: '.length),
          origin: preview.origin,
          connection: 'Upgrade',
          upgrade: 'echo',
        },
      });
      req.on('upgrade', (head: IncomingMessage, socket: Socket) => resolve({ head, socket }));
      req.on('response', (res: IncomingMessage) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
    expect(upgraded.head.headers['x-origin']).toBe(preview.origin);
    // Not HTTP: bytes of the app's protocol, a blank line and a request line among them.
    upgraded.socket.write('frame\r\n\r\nget / http/1.1\r\n');
    let echoed = '';
    upgraded.socket.on('data', (chunk: Buffer) => (echoed += chunk.toString('latin1')));
    await pollUntil(
      () => echoed,
      (text) => text.length >= 25,
      SETTLE_MS,
    );
    expect(echoed).toBe('FRAME\r\n\r\nGET / HTTP/1.1\r\n');
    upgraded.socket.destroy();
  });

  it(
    'on a host name of its own (name): its URLs name it, a request must name it in Host (421), and its own origin ' +
      'is its pages',
    async () => {
      const { port, received } = await recordingApp();
      const name = 'local-0123456789abcdef.localhost';
      const url = new URL(await forwarder({ name }).open(port));
      expect(url.hostname).toBe(name);
      const address = `http://127.0.0.1:${url.port}`;
      const host = `Host: ${name}:${url.port}`;
      const opening = (await exchange(address, [`GET /${url.search} HTTP/1.1`, host, '', ''].join('\r\n'), true))
        .received;
      expect(statusOf(opening)).toBe(302);
      const cookie = `Cookie: ${/^([^;]+)/.exec(headerOf(opening, 'Set-Cookie') ?? '')?.[1]}`;
      for (const headers of [
        ['Host: 127.0.0.1:' + url.port, cookie],
        [`Host: other.localhost:${url.port}`, cookie],
        [cookie],
      ]) {
        const answer = (await exchange(address, [`GET / HTTP/1.1`, ...headers, '', ''].join('\r\n'), true)).received;
        expect({ headers, status: statusOf(answer) }).toEqual({ headers, status: 421 });
      }
      expect(
        statusOf(
          (
            await exchange(
              address,
              [`GET /${url.search} HTTP/1.1`, 'Host: 127.0.0.1:' + url.port, '', ''].join('\r\n'),
              true,
            )
          ).received,
        ),
      ).toBe(421);
      expect(received).toEqual([]);
      const own = [
        `POST / HTTP/1.1`,
        host.toUpperCase(),
        cookie,
        `Origin: http://${name}:${url.port}`,
        'Content-Length: 0',
        '',
        '',
      ];
      await exchange(address, own.join('\r\n'), true);
      expect(received.length).toBe(1);
      const foreign = (
        await exchange(
          address,
          [...own.slice(0, 3), `Origin: http://127.0.0.1:${url.port}`, ...own.slice(4)].join('\r\n'),
          true,
        )
      ).received;
      expect(statusOf(foreign)).toBe(403);
    },
  );

  it(
    'refuses with 401, before anything reaches the sandbox: no token, a token for another port or sandbox, ' +
      'expired, tampered, or used as a cookie',
    async () => {
      const { port, url, origin, received, cookie, cookieName } = await opened();
      const token = new URL(url).searchParams.get('mcp_preview') ?? '';
      const foreign = {
        'another port': signer.mint('url', { sandbox: SANDBOX, port: port + 1 }, now),
        'another sandbox': signer.mint('url', { sandbox: 'sandbox-b', port }, now),
        'another secret': createPreviewSigner(`${SECRET}-other`, TTL_MS).mint('url', { sandbox: SANDBOX, port }, now),
        'issued too far ahead': signer.mint('url', { sandbox: SANDBOX, port }, now + 120_000),
        tampered: tamperBase64Url(token),
        'the cookie as a token': cookie,
        garbage: 'x'.repeat(40),
      };
      for (const [why, bad] of Object.entries(foreign)) {
        const answer = (await exchange(origin, get(`/?mcp_preview=${bad}`), true)).received;
        expect({ why, status: statusOf(answer) }).toEqual({ why, status: 401 });
      }
      for (const headers of [
        [],
        [`Cookie: ${cookieName}=${token}`],
        [`Cookie: mcp_preview_1=${cookie}`],
        [`Cookie: ${cookieName}=${cookie}x`],
      ]) {
        const answer = (await exchange(origin, get('/', headers), true)).received;
        expect({ headers, status: statusOf(answer) }).toEqual({ headers, status: 401 });
        expect(answer.toString()).toContain('get_preview_url');
      }
      // Expired: the token, and the cookie it gave, one hour on.
      now += TTL_MS;
      expect(statusOf((await exchange(url, get(`/?mcp_preview=${token}`), true)).received)).toBe(401);
      expect(statusOf((await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`]), true)).received)).toBe(
        401,
      );
      expect(received).toEqual([]);
    },
  );

  it(
    'refuses the cookie from a page of another origin on the host (403), ' + 'and takes it from the preview itself',
    async () => {
      const { origin, received, cookie, cookieName } = await opened();
      const foreignPage = (
        await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`, 'Origin: http://127.0.0.1:1']), true)
      ).received;
      expect(statusOf(foreignPage)).toBe(403);
      expect(received).toEqual([]);
      await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`, `Origin: ${origin}`]), true);
      expect(received.length).toBe(1);
    },
  );

  it(
    'answers 431 to headers beyond the cap, 400 to bytes that are not HTTP, 408 to a client that sends nothing in ' +
      'time',
    async () => {
      const { origin, received, cookie, cookieName } = await opened();
      const big = (
        await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`, `X-Big: ${'a'.repeat(16 * 1024)}`]), true)
      ).received;
      expect(statusOf(big)).toBe(431);
      // A TLS ClientHello's first bytes, the connection left open: refused at once, without waiting for a blank line.
      const tls = (
        await exchange(origin, Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))
      ).received;
      expect(statusOf(tls)).toBe(400);
      const silent = await openConnection(origin);
      const outcome = exchangeOn(silent, '');
      const deadline = await pollUntil(
        () => timers.find((t) => t.ms === 5_000 && !t.cancelled),
        (t) => t !== undefined,
        SETTLE_MS,
      );
      deadline?.fire();
      expect(statusOf((await outcome).received)).toBe(408);
      expect(received).toEqual([]);
    },
  );
});
