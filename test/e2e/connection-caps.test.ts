/**
 * Connections over the caps, through the built bundle: every one gets an HTTP answer (503, Retry-After,
 * Connection: close) and a log line, none a reset, on a cold instance's early path as on the core; through a
 * trusted proxy (MCP_TRUSTED_PROXIES) the proxy's connections are not capped per peer, and a forwarding header
 * from any other peer changes nothing. 127.0.0.0/8 is loopback: a client socket bound to 127.0.0.2 is another peer.
 */
import { initializeBody } from '../support/http';
import { startServer, stopAllServers, type StartedServer } from '../support/server';
import { openFrom, type RawConnection } from '../support/tcp';

const TOKEN = 'e2e-caps-token-0123456789abcdef';
const PROXY = '127.0.0.2';

afterAll(() => stopAllServers());

/** `count` connections, all open before any sends a byte, each then sending `request(i)`; resolves with every head. */
async function concurrently(
  server: StartedServer,
  count: number,
  localAddress: string,
  request: (i: number) => string,
): Promise<RawConnection[]> {
  const conns = await Promise.all(Array.from({ length: count }, () => openFrom(server.port, localAddress)));
  for (const [i, conn] of conns.entries()) conn.socket.write(request(i));
  for (
    let i = 0;
    i < 2_000 && !conns.every((conn) => conn.received().includes('\r\n\r\n') || conn.error() !== undefined);
    i += 1
  ) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return conns;
}

/** An initialize POST, the request a cold instance answers on its early path. */
const initialize = (server: StartedServer, forwardedFor?: string): string => {
  const body = JSON.stringify(initializeBody());
  const xff = forwardedFor === undefined ? '' : `X-Forwarded-For: ${forwardedFor}\r\n`;
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: ` +
    `application/json\r\nAccept: application/json, text/event-stream\r\n${xff}Content-Length: ` +
    `${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
};

const statusOf = (conn: RawConnection): number => Number(/^HTTP\/1\.1 (\d{3}) /.exec(conn.received())?.[1]);

/** Counts by status, and checks that every 503 is a clean refusal naming `setting`. */
async function judge(conns: RawConnection[], setting: string): Promise<Record<number, number>> {
  const byStatus: Record<number, number> = {};
  for (const conn of conns) {
    expect(conn.error()).toBeUndefined();
    const status = statusOf(conn);
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    if (status !== 503) continue;
    await conn.closed;
    const text = conn.received();
    expect(text.toLowerCase()).toMatch(/\r\nretry-after: 1\r\n[\s\S]*\r\n\r\n/);
    expect(text.toLowerCase()).toContain('\r\nconnection: close\r\n');
    expect(text).toContain(setting);
    expect(conn.error()).toBeUndefined();
  }
  return byStatus;
}

async function closeAll(conns: RawConnection[]): Promise<void> {
  for (const conn of conns) conn.socket.destroy();
  await Promise.all(conns.map((conn) => conn.closed));
}

describe('MCP_MAX_CONNECTIONS_PER_PEER=8, MCP_TRUSTED_PROXIES=127.0.0.2', () => {
  let server: StartedServer;
  beforeAll(async () => {
    server = await startServer({
      env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_CONNECTIONS_PER_PEER: '8', MCP_TRUSTED_PROXIES: PROXY },
    });
  });

  it(
    'answers 20 concurrent initializes from one address of a fresh instance: ' + '8 served, 12 refused 503, none reset',
    async () => {
      const conns = await concurrently(server, 20, '127.0.0.1', () => initialize(server));
      expect(await judge(conns, 'MCP_MAX_CONNECTIONS_PER_PEER')).toEqual({ 200: 8, 503: 12 });
      expect(server.logs().filter((line) => line.msg === 'connection refused' && line.scope === 'peer')).toHaveLength(
        12,
      );
      await closeAll(conns);
    },
  );

  it('serves 20 clients a trusted proxy forwards for over 20 connections', async () => {
    const conns = await concurrently(server, 20, PROXY, (i) => initialize(server, `198.51.100.${i + 1}`));
    expect(await judge(conns, 'MCP_MAX_CONNECTIONS_PER_PEER')).toEqual({ 200: 20 });
    await closeAll(conns);
  });

  it(
    'ignores X-Forwarded-For from a peer that is not a trusted proxy: a spoofed client per connection does not ' +
      'escape the cap',
    async () => {
      const conns = await concurrently(server, 20, '127.0.0.5', (i) => initialize(server, `198.51.100.${i + 1}`));
      expect(await judge(conns, 'MCP_MAX_CONNECTIONS_PER_PEER')).toEqual({ 200: 8, 503: 12 });
      await closeAll(conns);
    },
  );
});

it('answers connections past MCP_MAX_CONNECTIONS=8 503, whatever their address, none reset', async () => {
  const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_CONNECTIONS: '8' } });
  const conns = [
    ...(await concurrently(server, 10, '127.0.0.1', () => initialize(server))),
    ...(await concurrently(server, 10, '127.0.0.3', () => initialize(server))),
  ];
  expect(await judge(conns, 'MCP_MAX_CONNECTIONS)')).toEqual({ 200: 8, 503: 12 });
  await closeAll(conns);
});
