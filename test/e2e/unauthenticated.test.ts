/**
 * What a client costs before it authenticates: nothing of its body is read before the token is checked (the
 * 401 comes back while the client has sent only headers, and the connection is closed after it), connections
 * per peer are capped (one more is answered 503, not reset), and an authenticated client is served as before on the
 * same server.
 */
import { connect, type Socket } from 'node:net';

import { connectClient } from '../support/clients';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'e2e-unauth-token-0123456789abcdef';
const PER_PEER = 4;

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_CONNECTIONS_PER_PEER: String(PER_PEER) } });
});
afterAll(() => stopAllServers());

interface RawConnection {
  socket: Socket;
  received: () => string;
  closed: () => boolean;
}

/** A raw connection that records what it receives and when it closes. */
function rawConnection(): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    let data = '';
    let isClosed = false;
    const socket = connect(server.port, '127.0.0.1', () =>
      resolve({ socket, received: () => data, closed: () => isClosed }),
    );
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('close', () => (isClosed = true));
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

const headersOnly = (auth: string): string =>
  `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\nAccept: ` +
  `application/json, text/event-stream\r\n${auth}Content-Length: ${4 * 1024 * 1024}\r\n\r\n`;

it.each([
  ['no token', ''],
  ['a wrong token', 'Authorization: Bearer not-the-token-0123456789abcdef\r\n'],
])(
  'answers a POST with %s and a 4 MiB body it has not sent yet with 401, then closes the connection',
  async (_name, auth) => {
    const conn = await rawConnection();
    conn.socket.write(headersOnly(auth));
    // Not one byte of the body is sent: the answer cannot have waited for it.
    const answer = await pollUntil(conn.received, (text) => text.includes('\r\n\r\n'), SETTLE_MS, 20);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer.toLowerCase()).toContain('www-authenticate: bearer');
    await pollUntil(conn.closed, (closed) => closed, SETTLE_MS, 20);
    expect(conn.closed()).toBe(true);
  },
);

it(
  'answers a connection from one peer beyond MCP_MAX_CONNECTIONS_PER_PEER 503 and closes it, and serves those ' +
    'within it',
  async () => {
    const conns: RawConnection[] = [];
    for (let i = 0; i < PER_PEER + 1; i += 1) conns.push(await rawConnection());
    const extra = conns[PER_PEER];
    extra?.socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
    await pollUntil(
      () => extra?.closed(),
      (closed) => closed === true,
      SETTLE_MS,
      20,
    );
    expect(extra?.received()).toMatch(/^HTTP\/1\.1 503 [\s\S]*\r\nretry-after: 1\r\n/i);
    expect(extra?.received().toLowerCase()).toContain('connection: close');
    const first = conns[0];
    first?.socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
    expect(
      await pollUntil(
        () => first?.received() ?? '',
        (text) => text.includes('"uptime_s"'),
        SETTLE_MS,
        20,
      ),
    ).toMatch(/^HTTP\/1\.1 200 /);
    for (const conn of conns) conn.socket.destroy();
    // Once they are gone, the peer may connect again.
    await pollUntil(
      () => conns.every((c) => c.closed()),
      (all) => all,
      SETTLE_MS,
      20,
    );
    const again = await rawConnection();
    again.socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
    expect(await pollUntil(again.received, (text) => text.includes('"uptime_s"'), SETTLE_MS, 20)).toMatch(
      /^HTTP\/1\.1 200 /,
    );
    again.socket.destroy();
  },
);

it('serves an authenticated client with bodies as before', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  const written = await client.callTool('write_file', { path: 'big.txt', content: 'x'.repeat(1024 * 1024) });
  expect(written.structuredContent).toMatchObject({ bytes_written: 1024 * 1024 });
  await client.close();
});
