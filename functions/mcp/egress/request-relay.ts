/**
 * The egress proxy's way of passing HTTP requests on when it reads them (proxy.ts): a plain-HTTP request sent to
 * the proxy, and the requests inside a TLS connection the proxy ended because the host has a secret. The client's
 * stream is framed (request-framing.ts) so that every head is seen whole before any byte of it goes on, and each
 * head gets the secrets' headers, replacing any of the same name the sandbox sent. Bodies pass as they come.
 *
 * A plain-HTTP request through the proxy is one request per connection (`once`): its head was rewritten to
 * origin-form with `Connection: close`, and a second head, perhaps for another host, is never passed to this one.
 */
import type { Duplex } from 'node:stream';

import { RequestFramer } from '../request-framing';

/** Headers to set, by lower-case name: the name as the operator spelled it, and the value. */
export type HeaderSet = ReadonlyMap<string, { readonly name: string; readonly value: string }>;

export interface RelayOptions {
  /** Set on every head. */
  readonly headers: HeaderSet;
  /** Bytes the client sent before the relay began: they are framed first. */
  readonly preface?: Buffer;
  /** What goes on instead of the first head (it was already read and rewritten); unchanged when absent. */
  readonly firstHead?: string;
  /** Only the first request is passed on. */
  readonly once: boolean;
  /** The stream cannot be framed: answer (400 or 431) and end. */
  readonly refuse: (status: 400 | 431) => void;
}

/** Passes `client`'s requests to `upstream` until either ends. */
export function relayRequests(client: Duplex, upstream: Duplex, options: RelayOptions): void {
  const framer = new RequestFramer();
  let heads = 0;
  let stopped = false;
  const write = (bytes: Buffer | string): void => {
    if (!upstream.write(bytes)) {
      client.pause();
      upstream.once('drain', () => {
        if (!stopped) client.resume();
      });
    }
  };
  const feed = (chunk: Buffer): void => {
    for (const item of framer.push(chunk)) {
      if (stopped) return;
      if (item.kind === 'bytes') write(item.bytes);
      else if (item.kind === 'bad') {
        stopped = true;
        options.refuse(item.status);
      } else {
        heads += 1;
        if (heads > 1 && options.once) {
          // The rest of the connection is not this request's: nothing more is read from it.
          stopped = true;
          client.pause();
          return;
        }
        const text = heads === 1 && options.firstHead !== undefined ? options.firstHead : item.head.text;
        write(withHeaders(text, options.headers));
      }
    }
  };
  if (options.preface !== undefined && options.preface.length > 0) feed(options.preface);
  client.on('data', feed);
  client.once('end', () => {
    if (!stopped) upstream.end();
  });
  client.resume();
}

/** `head` (a whole head, its blank line included) with `headers` set, each replacing any line of that name. */
export function withHeaders(head: string, headers: HeaderSet): string {
  if (headers.size === 0) return head;
  const lines = head.split('\r\n').slice(0, -2);
  const kept = lines.filter((line, i) => i === 0 || !headers.has(line.slice(0, line.indexOf(':')).toLowerCase()));
  for (const { name, value } of headers.values()) kept.push(`${name}: ${value}`);
  return `${kept.join('\r\n')}\r\n\r\n`;
}
