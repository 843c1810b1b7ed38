/**
 * A stream through a sandbox's supervisor (supervisor-streams.ts) as a Node Duplex, for code that speaks sockets
 * (the egress proxy, TLS). Both windows hold: what comes out of the sandbox is acknowledged only as the Duplex's
 * reader takes it, and a write waits for the supervisor's acknowledgement when the stream's window is full.
 */
import { Duplex } from 'node:stream';

import type { SandboxStream } from './supervisor-streams';

/** `stream` as a Duplex; destroying either ends both. */
export function toDuplex(stream: SandboxStream): Duplex {
  /** Bytes handed to the reader while it wanted no more: acknowledged when it reads again. */
  let owed = 0;
  let ended = false;
  const duplex = new Duplex({
    allowHalfOpen: true,
    read() {
      if (owed === 0) return;
      const bytes = owed;
      owed = 0;
      stream.consumed(bytes);
    },
    write(chunk: Buffer, _encoding, done) {
      if (stream.closed) return done(new Error('the sandbox side of the connection closed'));
      if (stream.write(chunk)) return done();
      const settle = (): void => {
        stream.off('drain', settle);
        stream.off('close', settle);
        done(stream.closed ? new Error('the sandbox side of the connection closed') : null);
      };
      stream.on('drain', settle);
      stream.on('close', settle);
    },
    final(done) {
      stream.end();
      done();
    },
    destroy(err, done) {
      stream.destroy();
      done(err);
    },
  });
  stream.on('data', (chunk: Buffer) => {
    if (duplex.push(chunk)) stream.consumed(chunk.length);
    else owed += chunk.length;
  });
  stream.once('end', () => {
    ended = true;
    duplex.push(null);
  });
  // Closed before its end came (a reset inside, or the supervisor gone): the Duplex goes too.
  stream.once('close', () => {
    if (!ended) duplex.destroy();
  });
  return duplex;
}
