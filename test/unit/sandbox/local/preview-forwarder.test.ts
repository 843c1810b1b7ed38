/**
 * A sandbox's preview forwarder (preview-forwarder.ts) over a supervisor run straight on the host (so "inside the
 * sandbox" is the host's own loopback here; the e2e suite shows it through bubblewrap): bytes both ways, half
 * closes, refusals, the connection and port caps, the window held against a reader that stops, idling, and the
 * end. Then the same forwarder as on a public address (`auth`, preview-auth.ts): the capability URL, the cookie,
 * and every way in without them refused before anything reaches the sandbox's side.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { StartTimer } from '../../../../functions/mcp/sandbox/local/preview-auth';
import { type PreviewAuth, PreviewForwarder, PreviewPortsBusy } from '../../../../functions/mcp/sandbox/local/preview-forwarder';
import { createPreviewSigner } from '../../../../functions/mcp/sandbox/local/preview-token';
import type { Supervisor } from '../../../../functions/mcp/sandbox/local/supervisor';
import { pollUntil, SETTLE_MS } from '../../../support/processes';
import { startHostSupervisor } from '../../../support/supervisor';
import { bodyOf, exchange, exchangeOn, httpGet, openConnection } from '../../../support/tcp';

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

function forwarder(options: { maxConnections?: number; maxPorts?: number; idleMs?: number; supervisor?: () => Promise<Supervisor | undefined>; auth?: PreviewAuth } = {}): PreviewForwarder {
  const made = new PreviewForwarder({ host: '127.0.0.1', supervisor: options.supervisor ?? (() => Promise.resolve(supervisor)), ...options });
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
    socket.once('data', () => socket.end(Buffer.concat([Buffer.from(`HTTP/1.0 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`), Buffer.from(body)])));
    socket.on('error', () => undefined);
  });

it('carries each connection to the port and back, on one URL that later calls reuse', async () => {
  const port = await httpApp('<h1>through the supervisor</h1>');
  const previews = forwarder();
  const url = await previews.open(port);
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(await (await fetch(`${url}/`)).text()).toBe('<h1>through the supervisor</h1>');
  const second = await exchange(url, httpGet('/'));
  expect(bodyOf(second.received)).toBe('<h1>through the supervisor</h1>');
  expect(await previews.open(port)).toBe(url);
});

it('passes a half close through: the client ends its side and still gets the answer', async () => {
  const port = await app((socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => socket.end(Buffer.concat(chunks).toString().toUpperCase()));
  }, true);
  const url = await forwarder().open(port);
  const answer = await exchange(url, 'ping from the host', true);
  expect(answer).toEqual({ received: Buffer.from('PING FROM THE HOST') });
});

it('closes the connection when nothing listens on the port, or when no supervisor runs', async () => {
  const port = await app(() => undefined);
  await new Promise((resolve) => servers.pop()?.close(resolve));
  const refused = await exchange(await forwarder().open(port), httpGet('/'));
  expect(refused.received.length).toBe(0);
  const noSupervisor = await exchange(await forwarder({ supervisor: () => Promise.resolve(undefined) }).open(port), httpGet('/'));
  expect(noSupervisor.received.length).toBe(0);
  expect(supervisor.alive).toBe(true);
});

it('closes connections beyond the cap at once, and carries the next one after one ended', async () => {
  // Keeps each connection open after answering, so that both stay counted.
  const port = await app((socket) => {
    socket.on('data', () => socket.write('ok\n'));
    socket.on('error', () => undefined);
  });
  const previews = forwarder({ maxConnections: 2 });
  const url = await previews.open(port);
  const held = await Promise.all([openConnection(url), openConnection(url)]);
  for (const socket of held) {
    socket.write('hi');
    await new Promise((resolve) => socket.once('data', resolve));
  }
  expect(previews.connections).toBe(2);
  const third = await exchange(url, 'hi');
  expect(third.received.length).toBe(0);
  held[0]?.destroy();
  await pollUntil(() => previews.connections, (n) => n === 1, SETTLE_MS);
  const fourth = await openConnection(url);
  fourth.write('hi');
  expect(String(await new Promise((resolve) => fourth.once('data', resolve)))).toBe('ok\n');
  for (const socket of [held[1], fourth]) socket?.destroy();
});

it('holds a sender in the sandbox back while the client does not read (the window), then delivers every byte, and measures a 10 MB answer', async () => {
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
  const url = await forwarder().open(port);
  const client = await openConnection(url);
  client.pause();
  client.write('go');
  // Far more than the kernels' socket buffers hold stays with the sender: the supervisor stopped reading.
  const queued = await pollUntil(() => appSocket?.writableLength ?? 0, (n) => n >= total / 2, SETTLE_MS);
  expect(queued).toBeGreaterThanOrEqual(total / 2);
  expect(supervisor.alive).toBe(true);
  let received = 0;
  client.on('data', (chunk: Buffer) => (received += chunk.length));
  await new Promise((resolve) => client.once('end', resolve).resume());
  expect(received).toBe(total);
  client.destroy();

  const tenMb = Buffer.alloc(10 * 2 ** 20, 'y');
  const bigPort = await httpApp(tenMb);
  const bigUrl = await forwarder().open(bigPort);
  const started = process.hrtime.bigint();
  const body = Buffer.from(await (await fetch(`${bigUrl}/`)).arrayBuffer());
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  expect(body.equals(tenMb)).toBe(true);
  console.log(`10 MiB through the forwarder: ${ms.toFixed(0)} ms (${((10 / ms) * 1000).toFixed(0)} MiB/s)`);
});

it('closes an idle listener, opens it again on the same host port, and closes everything on close()', async () => {
  const port = await app((socket) => {
    socket.on('data', () => socket.write('ok\n'));
    socket.on('error', () => undefined);
  });
  const previews = forwarder({ idleMs: 20 });
  const url = await previews.open(port);
  const refused = await pollUntil(() => exchange(url, 'hi', true), (answer) => answer.error === 'ECONNREFUSED', SETTLE_MS);
  expect(refused.error).toBe('ECONNREFUSED');
  expect(await previews.open(port)).toBe(url);

  const open = await openConnection(url);
  open.write('hi');
  await new Promise((resolve) => open.once('data', resolve));
  const ended = exchangeOn(open, '');
  previews.close();
  expect((await ended).received.length).toBe(0);
  expect((await exchange(url, 'hi')).error).toBe('ECONNREFUSED');
  await expect(previews.open(port)).rejects.toThrow('ended');
});

it('listens on a bounded number of ports: the least recently asked for without a connection makes room', async () => {
  const ports = await Promise.all([0, 1, 2, 3].map(() => httpApp('page')));
  const previews = forwarder({ maxPorts: 2 });
  const [a, b, c, d] = ports as [number, number, number, number];
  const urlA = await previews.open(a);
  const urlB = await previews.open(b);
  // Asked for again, A is now the more recent: B makes room for C.
  expect(await previews.open(a)).toBe(urlA);
  const urlC = await previews.open(c);
  expect((await exchange(urlB, httpGet('/'))).error).toBe('ECONNREFUSED');
  expect(bodyOf((await exchange(urlC, httpGet('/'))).received)).toBe('page');
  // Both carry a connection: no room for D.
  const held = await Promise.all([openConnection(urlA), openConnection(urlC)]);
  await pollUntil(() => previews.connections, (n) => n === 2, SETTLE_MS);
  await expect(previews.open(d)).rejects.toBeInstanceOf(PreviewPortsBusy);
  for (const socket of held) socket.destroy();
  await pollUntil(() => previews.connections, (n) => n === 0, SETTLE_MS);
  expect(bodyOf((await exchange(await previews.open(d), httpGet('/'))).received)).toBe('page');
});

describe('on a public address: behind a capability URL', () => {
  const SECRET = 'preview-test-secret-0123456789abcdef';
  const TTL_MS = 3_600_000;
  const signer = createPreviewSigner(SECRET, TTL_MS);
  const SANDBOX = 'sandbox-a';
  /** The fake clock the tokens are checked against. */
  let now = Date.UTC(2026, 0, 1);
  /** The timers the front started (its header deadline): they fire only when a test says so. */
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
    new RegExp(`^${name}: ([^\\r\\n]*)\\r$`, 'im').exec(answer.toString('latin1').split('\r\n\r\n')[0] + '\r')?.[1] ?? undefined;
  const get = (path: string, headers: string[] = []): string => [`GET ${path} HTTP/1.1`, 'Host: preview', ...headers, '', ''].join('\r\n');

  /** Opens the preview of a recording app; its URL, and the cookie its token is exchanged for. */
  async function opened(): Promise<{ port: number; url: string; origin: string; received: Buffer[]; cookie: string; cookieName: string }> {
    const { port, received } = await recordingApp();
    const url = await forwarder({ auth: auth() }).open(port);
    const { origin, pathname, search } = new URL(url);
    const answer = (await exchange(origin, get(`${pathname}${search}`), true)).received;
    const [cookieName = '', cookie = ''] = /^([^=]+)=([^;]+);/.exec(headerOf(answer, 'Set-Cookie') ?? '')?.slice(1) ?? [];
    return { port, url, origin, received, cookie, cookieName };
  }

  it('gives a URL with a token, which a first request exchanges for a cookie on a 302 to the same path without it; the sandbox sees neither', async () => {
    const { port, received } = await recordingApp();
    const url = await forwarder({ auth: auth() }).open(port);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?mcp_preview=[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
    const { origin, search } = new URL(url);
    const answer = (await exchange(origin, get(`/app/page?x=1&${search.slice(1)}&y=2`), true)).received;
    expect(statusOf(answer)).toBe(302);
    expect(headerOf(answer, 'Location')).toBe('/app/page?x=1&y=2');
    const hostPort = new URL(url).port;
    expect(headerOf(answer, 'Set-Cookie')).toMatch(new RegExp(`^mcp_preview_${hostPort}=[0-9a-z]+\\.[A-Za-z0-9_-]{22}; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax$`));
    expect(headerOf(answer, 'Set-Cookie')).not.toContain(search.slice('?mcp_preview='.length));
    expect(received).toEqual([]);
  });

  it('carries a request with the cookie in byte for byte (preview cookies of every port taken out), then the connection as a raw pipe', async () => {
    const { origin, received, cookie, cookieName } = await opened();
    expect(cookie).not.toBe('');
    const body = 'hello';
    const request = (cookies: string): string =>
      [`POST /submit?x=1 HTTP/1.1`, 'Host: preview', 'X-Odd:  spaced\tvalue ', `Cookie: ${cookies}`, `Content-Length: ${body.length}`, '', body].join('\r\n') +
      get('/second', ['Cookie: mcp_preview_1=not-checked-on-a-carried-connection']);
    const answer = await exchange(origin, request(`theme=dark; ${cookieName}=${cookie}; mcp_preview_1234=another; lang=en`), true);
    expect(answer.received.toString()).toBe('HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok');
    // Later requests of a carried connection are the app's: not read, not changed.
    expect(received.map(String)).toEqual([request('theme=dark; lang=en')]);

    // With no other cookie, the Cookie line goes.
    await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`]), true);
    expect(received[1]?.toString()).toBe(get('/'));
  });

  it('refuses with 401, before anything reaches the sandbox: no token, a token for another port or sandbox, expired, tampered, or used as a cookie', async () => {
    const { port, url, origin, received, cookie, cookieName } = await opened();
    const token = new URL(url).searchParams.get('mcp_preview') ?? '';
    const foreign = {
      'another port': signer.mint('url', { sandbox: SANDBOX, port: port + 1 }, now),
      'another sandbox': signer.mint('url', { sandbox: 'sandbox-b', port }, now),
      'another secret': createPreviewSigner(`${SECRET}-other`, TTL_MS).mint('url', { sandbox: SANDBOX, port }, now),
      'issued too far ahead': signer.mint('url', { sandbox: SANDBOX, port }, now + 120_000),
      tampered: `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
      'the cookie as a token': cookie,
      garbage: 'x'.repeat(40),
    };
    for (const [why, bad] of Object.entries(foreign)) {
      const answer = (await exchange(origin, get(`/?mcp_preview=${bad}`), true)).received;
      expect({ why, status: statusOf(answer) }).toEqual({ why, status: 401 });
    }
    for (const headers of [[], [`Cookie: ${cookieName}=${token}`], [`Cookie: mcp_preview_1=${cookie}`], [`Cookie: ${cookieName}=${cookie}x`]]) {
      const answer = (await exchange(origin, get('/', headers), true)).received;
      expect({ headers, status: statusOf(answer) }).toEqual({ headers, status: 401 });
      expect(answer.toString()).toContain('get_preview_url');
    }
    // Expired: the token, and the cookie it gave, one hour on.
    now += TTL_MS;
    expect(statusOf((await exchange(url, get(`/?mcp_preview=${token}`), true)).received)).toBe(401);
    expect(statusOf((await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`]), true)).received)).toBe(401);
    expect(received).toEqual([]);
  });

  it('refuses the cookie from a page of another origin on the host (403), and takes it from the preview itself', async () => {
    const { origin, received, cookie, cookieName } = await opened();
    const foreignPage = (await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`, 'Origin: http://127.0.0.1:1']), true)).received;
    expect(statusOf(foreignPage)).toBe(403);
    expect(received).toEqual([]);
    await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`, `Origin: ${origin}`]), true);
    expect(received.length).toBe(1);
  });

  it('answers 431 to headers beyond the cap, 400 to bytes that are not HTTP, 408 to a client that sends nothing in time', async () => {
    const { origin, received, cookie, cookieName } = await opened();
    const big = (await exchange(origin, get('/', [`Cookie: ${cookieName}=${cookie}`, `X-Big: ${'a'.repeat(16 * 1024)}`]), true)).received;
    expect(statusOf(big)).toBe(431);
    // A TLS ClientHello's first bytes, the connection left open: refused at once, without waiting for a blank line.
    const tls = (await exchange(origin, Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))).received;
    expect(statusOf(tls)).toBe(400);
    const silent = await openConnection(origin);
    const outcome = exchangeOn(silent, '');
    const deadline = await pollUntil(() => timers.find((t) => t.ms === 5_000 && !t.cancelled), (t) => t !== undefined, SETTLE_MS);
    deadline?.fire();
    expect(statusOf((await outcome).received)).toBe(408);
    expect(received).toEqual([]);
  });
});
