/**
 * Connections over a cap (functions/mcp/http/connection-guard.ts), on a real node:http server on loopback: each is
 * answered 503 with Retry-After and Connection: close, never reset; past the hard ceiling they are closed at once;
 * behind a trusted proxy (127.0.0.2 here) requests in flight are capped per forwarded client, and a forwarding header
 * from any other peer changes nothing. 127.0.0.0/8 is loopback: a client socket bound to 127.0.0.2 is another peer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { createClientAddresses } from '../../../functions/mcp/http/client-address';
import {
  type ConnectionLimits,
  DEFAULT_KEEP_ALIVE_MS,
  guardConnections,
  serverTimeouts,
} from '../../../functions/mcp/http/connection-guard';
import { createNodeListener } from '../../../functions/mcp/http/node-listener';
import type { LogFields, Logger } from '../../../functions/mcp/log';
import { openFrom, type RawConnection } from '../../support/tcp';

const PROXY = '127.0.0.2';

interface Guarded {
  port: number;
  /** The requests `serve` holds until `release()`. */
  held: ServerResponse[];
  release(): void;
  logged: Array<{ msg: string } & LogFields>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A guarded server whose requests, once their body is read, are answered 200 (or held, with `hold`). */
async function startGuarded(
  limits: ConnectionLimits,
  { hold = false, serveWith }: { hold?: boolean; serveWith?: (req: IncomingMessage, res: ServerResponse) => void } = {},
): Promise<Guarded> {
  const held: ServerResponse[] = [];
  const logged: Guarded['logged'] = [];
  const record = (msg: string, fields?: LogFields): void => void logged.push({ msg, ...fields });
  const logger: Logger = { debug: record, info: record, warn: record, error: record, flush: async () => undefined };
  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    req.resume();
    req.once('end', () => {
      if (hold) held.push(res);
      else res.end('ok');
    });
  };
  const server = createServer(serverTimeouts(limits));
  guardConnections(server, {
    limits,
    clients: createClientAddresses({ trustedProxies: [`${PROXY}/32`] }),
    logger,
    serve: serveWith ?? serve,
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    held,
    logged,
    release: () => {
      for (const res of held.splice(0)) res.end('ok');
    },
  };
}

/** Opens `count` connections, all of them before any sends a byte. */
const openAll = (port: number, count: number, localAddress?: string): Promise<RawConnection[]> =>
  Promise.all(Array.from({ length: count }, () => openFrom(port, localAddress)));

/** A POST with a small body, as a client would send it. */
const post = (forwardedFor?: string): string =>
  `POST /mcp HTTP/1.1\r\nHost: ` +
  `localhost\r\n${forwardedFor === undefined ? '' : `X-Forwarded-For: ${forwardedFor}\r\n`}Content-Length: ` +
  `5\r\n\r\nhello`;

/** Turns the event loop until `condition` holds (bounded: a hang fails the test rather than the suite). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!condition()) throw new Error('condition never held');
}

/** The status line's code of a received answer, once its headers are in. */
const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]);
const hasHead = (conn: RawConnection): boolean => conn.received().includes('\r\n\r\n');

/** Every refused connection's answer: 503, Retry-After, Connection: close, a message naming the setting; then a clean
 * close. */
async function expectRefused(conn: RawConnection, names: string): Promise<void> {
  await conn.closed;
  const text = conn.received();
  expect(statusOf(text)).toBe(503);
  expect(text.toLowerCase()).toContain('\r\nretry-after: 1\r\n');
  expect(text.toLowerCase()).toContain('\r\nconnection: close\r\n');
  expect(text).toContain(names);
  expect(conn.error()).toBeUndefined();
}

it(
  'answers every connection from one address past MCP_MAX_CONNECTIONS_PER_PEER 503, none reset; another address is ' +
    'served',
  async () => {
    const g = await startGuarded({ maxConnections: 100, maxPerPeer: 8 });
    const conns = await openAll(g.port, 20);
    const other = await openFrom(g.port, '127.0.0.3');
    for (const conn of [...conns, other]) conn.socket.write(post());
    await until(() => [...conns, other].every(hasHead));
    const served = conns.filter((conn) => statusOf(conn.received()) === 200);
    const refused = conns.filter((conn) => statusOf(conn.received()) === 503);
    expect([served.length, refused.length]).toEqual([8, 12]);
    for (const conn of refused) await expectRefused(conn, 'MCP_MAX_CONNECTIONS_PER_PEER');
    expect(statusOf(other.received())).toBe(200);
    expect(g.logged.filter((line) => line.msg === 'connection refused')).toHaveLength(12);
    expect(g.logged.find((line) => line.msg === 'connection refused')).toMatchObject({
      scope: 'peer',
      max: 8,
      peer: '127.0.0.1',
    });
    // The served ones stay open (keep-alive) and go on being served.
    served[0]?.socket.write(post());
    await until(() => (served[0]?.received().match(/HTTP\/1\.1 200/g) ?? []).length === 2);
  },
);

it(
  "keeps an idle served connection open well past the clients' " + 'own idle windows, and says so in Keep-Alive',
  async () => {
    const g = await startGuarded({ maxConnections: 8, maxPerPeer: 0 });
    const [conn] = await openAll(g.port, 1);
    conn?.socket.write(post());
    await until(() => (conn === undefined ? false : hasHead(conn)));
    expect(conn?.received().toLowerCase()).toContain(`\r\nkeep-alive: timeout=${DEFAULT_KEEP_ALIVE_MS / 1000}\r\n`);
    expect(DEFAULT_KEEP_ALIVE_MS).toBeGreaterThanOrEqual(60_000);
  },
);

it('sends no idle deadline with keepAliveMs 0 (on FC the platform owns the connections)', async () => {
  const g = await startGuarded({ maxConnections: 8, maxPerPeer: 0, keepAliveMs: 0 });
  const [conn] = await openAll(g.port, 1);
  conn?.socket.write(post());
  await until(() => (conn === undefined ? false : hasHead(conn)));
  expect(conn?.received().toLowerCase()).not.toContain('keep-alive: timeout=');
});

it('answers every connection past MCP_MAX_CONNECTIONS 503, whatever its address', async () => {
  const g = await startGuarded({ maxConnections: 8, maxPerPeer: 0 });
  const conns = [...(await openAll(g.port, 10)), ...(await openAll(g.port, 10, '127.0.0.3'))];
  for (const conn of conns) conn.socket.write(post());
  await until(() => conns.every(hasHead));
  const refused = conns.filter((conn) => statusOf(conn.received()) === 503);
  expect(refused).toHaveLength(12);
  expect(conns.filter((conn) => statusOf(conn.received()) === 200)).toHaveLength(8);
  for (const conn of refused) await expectRefused(conn, 'MCP_MAX_CONNECTIONS)');
});

it(
  'closes connections at once past the hard ceiling (the caps plus those being refused), and serves again once ' +
    'they are gone',
  async () => {
    const g = await startGuarded({ maxConnections: 2, maxPerPeer: 0, maxRefusing: 3 });
    const conns = await openAll(g.port, 2);
    const refusing = await openAll(g.port, 3);
    const dropped = await openAll(g.port, 2);
    for (const conn of dropped) await conn.closed;
    expect(dropped.map((conn) => conn.received())).toEqual(['', '']);
    expect(g.logged.filter((line) => line.msg === 'connections dropped')).toEqual([
      expect.objectContaining({ count: 1, ceiling: 5 }),
    ]);
    // Those being refused are still answered.
    refusing[0]?.socket.write(post());
    await expectRefused(refusing[0] as RawConnection, 'MCP_MAX_CONNECTIONS)');
    for (const conn of [...conns, ...refusing]) conn.socket.destroy();
    await Promise.all([...conns, ...refusing].map((conn) => conn.closed));
    const again = await openFrom(g.port);
    again.socket.write(post());
    await until(() => hasHead(again));
    expect(statusOf(again.received())).toBe(200);
  },
);

it('closes a refused connection that sends no request after the hold, unanswered', async () => {
  const g = await startGuarded({ maxConnections: 1, maxPerPeer: 0, refusalHoldMs: 50 });
  await openFrom(g.port);
  const idle = await openFrom(g.port);
  await idle.closed;
  expect(idle.received()).toBe('');
});

describe('behind a trusted proxy (MCP_TRUSTED_PROXIES)', () => {
  it(
    'does not cap the proxy by its connections: ' + 'twenty clients forwarded over twenty connections are all served',
    async () => {
      const g = await startGuarded({ maxConnections: 100, maxPerPeer: 8 }, { hold: true });
      const conns = await openAll(g.port, 20, PROXY);
      for (const [i, conn] of conns.entries()) conn.socket.write(post(`198.51.100.${i + 1}`));
      await until(() => g.held.length === 20);
      g.release();
      await until(() => conns.every(hasHead));
      expect(conns.map((conn) => statusOf(conn.received()))).toEqual(Array.from({ length: 20 }, () => 200));
    },
  );

  it(
    'caps the requests in flight of one forwarded client, ' + 'answering the next 503, and frees its share as they end',
    async () => {
      const g = await startGuarded({ maxConnections: 100, maxPerPeer: 8 }, { hold: true });
      const conns = await openAll(g.port, 20, PROXY);
      // The client wrote an address of its own on the left; the proxy appended the one it saw.
      for (const conn of conns) conn.socket.write(post('203.0.113.66, 198.51.100.7'));
      await until(() => g.held.length === 8 && conns.filter(hasHead).length === 12);
      const refused = conns.filter(hasHead);
      for (const conn of refused) await expectRefused(conn, 'requests in flight through the proxy');
      expect(g.logged.find((line) => line.msg === 'connection refused')).toMatchObject({
        scope: 'client',
        client: '198.51.100.7',
        peer: PROXY,
      });
      // Another client through the same proxy is not held back by it.
      const other = await openFrom(g.port, PROXY);
      other.socket.write(post('198.51.100.8'));
      await until(() => g.held.length === 9);
      g.release();
      const served = conns.filter((conn) => !refused.includes(conn));
      await until(() => served.every(hasHead));
      served[0]?.socket.write(post('198.51.100.7'));
      await until(() => g.held.length === 1);
      g.release();
    },
  );

  it(
    'ignores X-Forwarded-For from a peer that is not a trusted proxy: a spoofed client per connection does not ' +
      'escape the cap',
    async () => {
      const g = await startGuarded({ maxConnections: 100, maxPerPeer: 8 });
      const conns = await openAll(g.port, 20);
      for (const [i, conn] of conns.entries()) conn.socket.write(post(`198.51.100.${i + 1}`));
      await until(() => conns.every(hasHead));
      const refused = conns.filter((conn) => statusOf(conn.received()) === 503);
      expect(refused).toHaveLength(12);
      for (const conn of refused) await expectRefused(conn, 'MCP_MAX_CONNECTIONS_PER_PEER');
    },
  );
});

describe('request deadlines', () => {
  /** A node listener whose handler streams the body (as an upload does) and answers its byte count, or its error. */
  const streaming = (stallMs: number) =>
    createNodeListener(
      async (_req, ctx) => {
        let bytes = 0;
        try {
          for await (const chunk of ctx.bodyStream?.() ?? []) bytes += chunk.length;
        } catch (err: unknown) {
          return new Response(`stalled after ${bytes}: ${err instanceof Error ? err.message : ''}`, { status: 408 });
        }
        return new Response(`got ${bytes}`);
      },
      { maxBodyBytes: 1024, stallMs },
    );
  const head = (length: number): string =>
    `PUT /files/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${length}\r\n\r\n`;

  it('answers a body that has not arrived by the deadline 408 and closes its connection, never a reset', async () => {
    const g = await startGuarded({ maxConnections: 8, maxPerPeer: 0, requestMs: 100 });
    const [conn] = await openAll(g.port, 1);
    conn?.socket.write(`${head(10).replace('PUT /files/x', 'POST /mcp')}abc`);
    await conn?.closed;
    expect(statusOf(conn?.received() ?? '')).toBe(408);
    expect(conn?.received()).toContain('the request body did not arrive within 0.1 s');
    expect(conn?.error()).toBeUndefined();
  });

  it('lets a streamed body arrive for longer than the deadline while its bytes keep coming', async () => {
    const g = await startGuarded({ maxConnections: 8, maxPerPeer: 0, requestMs: 100 }, { serveWith: streaming(1000) });
    const [conn] = await openAll(g.port, 1);
    conn?.socket.write(head(8));
    // Past Node's own check of request deadlines (every second), which must not cut it either.
    for (let i = 0; i < 8; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      conn?.socket.write('x');
    }
    await until(() => conn?.received().includes('got 8') === true);
    expect(statusOf(conn?.received() ?? '')).toBe(200);
  });

  it('ends a streamed body that stalls with a request timeout, answered', async () => {
    const g = await startGuarded({ maxConnections: 8, maxPerPeer: 0, requestMs: 50 }, { serveWith: streaming(150) });
    const [conn] = await openAll(g.port, 1);
    conn?.socket.write(`${head(100)}abc`);
    await until(() => conn !== undefined && hasHead(conn));
    expect(statusOf(conn?.received() ?? '')).toBe(408);
    expect(conn?.received()).toContain('stalled after 3: The upload stalled');
  });
});
