/**
 * Slow, unauthenticated clients against the bundle, in real time: 250 connections that each announce a 4 MiB
 * POST without a token and then trickle it, 250 that connect and send nothing, and 60 that send all but the
 * last byte of a 4 MiB body at once. Together they must cost the server less than 64 MiB, and every one must be
 * closed within 30 s (the deadlines are 10 s).
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

import { pollUntil } from '../support/processes';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'slow-clients-token-0123456789abcdef';
const CONNECTIONS = 250;
const MIB = 1024 * 1024;

let server: StartedServer;
beforeAll(async () => {
  // One peer (loopback) holds them all: its cap is raised so that the deadlines, not the cap, are tested.
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_CONNECTIONS_PER_PEER: '1000' } });
});
afterAll(stopAllServers);

const rssOf = (pid: number): number =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

it('costs under 64 MiB for 560 slow unauthenticated connections and closes every one within 30 s', async () => {
  const pid = server.child.pid as number;
  // Warm the server up (core loaded) so that the baseline is a serving server's.
  await fetch(`${server.origin}/health`);
  const before = rssOf(pid);
  const sockets: Array<{ socket: Socket; closed: boolean }> = [];
  const almostAll = Buffer.alloc(4 * MIB - 1, 'x');
  const open = (send: boolean | 'almost-all'): Promise<void> =>
    new Promise((resolve) => {
      const entry = { socket: connect(server.port, '127.0.0.1'), closed: false };
      entry.socket.on('error', () => undefined);
      entry.socket.resume();
      entry.socket.on('close', () => (entry.closed = true));
      entry.socket.on('connect', () => {
        if (send !== false) {
          entry.socket.write(
            `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: ` +
              `application/json\r\nContent-Length: ${4 * MIB}\r\n\r\n`,
          );
        }
        if (send === 'almost-all') entry.socket.write(almostAll);
        else if (send) {
          // A trickle of the body, never all of it.
          const trickle = setInterval(
            () => (entry.closed ? clearInterval(trickle) : entry.socket.write('x'.repeat(1024))),
            200,
          );
        }
        resolve();
      });
      sockets.push(entry);
    });
  const started = performance.now();
  for (let i = 0; i < CONNECTIONS; i += 1)
    await Promise.all([open(true), open(false), ...(i < 60 ? [open('almost-all')] : [])]);
  let peak = 0;
  await pollUntil(
    () => {
      peak = Math.max(peak, rssOf(pid) - before);
      return sockets.filter((s) => !s.closed).length;
    },
    (left) => left === 0,
    60_000,
    250,
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `560 slow unauthenticated connections: peak +${(peak / MIB).toFixed(1)} MiB RSS, all closed after ` +
      `${seconds.toFixed(1)} s`,
  );
  expect(sockets.filter((s) => !s.closed)).toHaveLength(0);
  expect(seconds).toBeLessThan(30);
  expect(peak).toBeLessThan(64 * MIB);
  // And it still serves.
  expect((await fetch(`${server.origin}/health`)).status).toBe(200);
}, 120_000);
