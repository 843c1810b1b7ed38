/**
 * The attack at its size, through the bundle: 300 concurrent connections from one address against the
 * default MCP_MAX_CONNECTIONS_PER_PEER of 128. Every one gets an HTTP answer (128 served, 172 answered 503 with
 * Retry-After and Connection: close), none a reset. The 20-connection version is test/e2e/connection-caps.test.ts.
 */
import { connect, type Socket } from 'node:net';

import { startServer, stopAllServers } from '../support/server';

afterAll(() => stopAllServers());

interface Outcome {
  received: string;
  error?: string;
}

it('answers 300 concurrent connections from one address: 128 served, 172 refused 503, none reset', async () => {
  const server = await startServer({ env: { MCP_AUTH_TOKENS: 'reliability-caps-token-0123456789' } });
  const sockets: Socket[] = [];
  const outcomes = await Promise.all(
    Array.from(
      { length: 300 },
      () =>
        new Promise<{ socket: Socket; outcome: Promise<Outcome> }>((resolve) => {
          const socket = connect({ port: server.port, host: '127.0.0.1' });
          sockets.push(socket);
          let received = '';
          let error: string | undefined;
          socket.setEncoding('utf8');
          socket.on('data', (chunk: string) => (received += chunk));
          socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
          // Done at the answer's head, or when the connection ends without one.
          const outcome = new Promise<Outcome>((done) => {
            const finish = (): void => done({ received, ...(error === undefined ? {} : { error }) });
            socket.on('data', () => received.includes('\r\n\r\n') && finish());
            socket.once('close', finish);
          });
          socket.once('connect', () => resolve({ socket, outcome }));
          socket.once('error', () => resolve({ socket, outcome }));
        }),
    ),
  ).then((opened) => {
    for (const { socket } of opened) socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
    return Promise.all(opened.map(({ outcome }) => outcome));
  });
  const statuses = outcomes.map((o) => /^HTTP\/1\.1 (\d{3}) /.exec(o.received)?.[1] ?? o.error ?? 'nothing');
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  expect(counts).toEqual({ 200: 128, 503: 172 });
  for (const o of outcomes.filter((x) => x.received.startsWith('HTTP/1.1 503'))) {
    expect(o.received.toLowerCase()).toContain('\r\nretry-after: 1\r\n');
    expect(o.received.toLowerCase()).toContain('\r\nconnection: close\r\n');
  }
  for (const socket of sockets) socket.destroy();
});
