import { PassThrough } from 'node:stream';

import {
  type HeaderSet,
  type RelayOptions,
  relayRequests,
  withHeaders,
} from '../../../functions/mcp/egress/request-relay';

const SECRET = 'Bearer real-0123456789';
const HEADERS: HeaderSet = new Map([['authorization', { name: 'Authorization', value: SECRET }]]);

/** Lets the streams move: a few turns of the event loop, no timers. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
};

interface Relayed {
  readonly client: PassThrough;
  readonly upstream: PassThrough;
  /** What reached upstream so far, latin1. */
  sent(): string;
  readonly refused: number[];
}

const relay = (options: Partial<RelayOptions> = {}, upstream = new PassThrough()): Relayed => {
  const client = new PassThrough();
  const chunks: Buffer[] = [];
  const refused: number[] = [];
  upstream.on('data', (chunk: Buffer) => chunks.push(chunk));
  relayRequests(client, upstream, {
    headers: HEADERS,
    once: false,
    refuse: (status) => refused.push(status),
    ...options,
  });
  return {
    client,
    upstream,
    sent: () => Buffer.concat(chunks).toString('latin1'),
    refused,
  };
};

describe('withHeaders', () => {
  it('replaces a header of the same name in any case, keeps the others and the request line', () => {
    const head =
      'GET http://api.example.com:80/authorization: HTTP/1.1\r\n' +
      'Host: api.example.com\r\n' +
      'authorization: Bearer sandbox\r\n' +
      'Accept: */*\r\n' +
      'AUTHORIZATION: Bearer again\r\n' +
      'Authorization-Extra: kept\r\n' +
      'X-Api-Key: sandbox-key\r\n' +
      '\r\n';
    const headers: HeaderSet = new Map([
      ['authorization', { name: 'Authorization', value: SECRET }],
      ['x-api-key', { name: 'x-api-key', value: 'real-key' }],
    ]);
    expect(withHeaders(head, headers)).toBe(
      'GET http://api.example.com:80/authorization: HTTP/1.1\r\n' +
        'Host: api.example.com\r\n' +
        'Accept: */*\r\n' +
        'Authorization-Extra: kept\r\n' +
        `Authorization: ${SECRET}\r\n` +
        'x-api-key: real-key\r\n' +
        '\r\n',
    );
  });

  it('adds a header the head lacks, and leaves a head alone when there is nothing to set', () => {
    const head = 'GET / HTTP/1.1\r\nHost: h\r\n\r\n';
    expect(withHeaders(head, HEADERS)).toBe(`GET / HTTP/1.1\r\nHost: h\r\nAuthorization: ${SECRET}\r\n\r\n`);
    expect(withHeaders(head, new Map())).toBe(head);
    expect(withHeaders('GET / HTTP/1.1\r\n\r\n', HEADERS)).toBe(`GET / HTTP/1.1\r\nAuthorization: ${SECRET}\r\n\r\n`);
  });
});

describe('relayRequests', () => {
  const withBody =
    'POST /a HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer sandbox\r\nContent-Length: 5\r\n\r\nhello';
  const withBodyOut =
    `POST /a HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\n` + `Authorization: ${SECRET}\r\n\r\nhello`;
  const plain = 'GET /b HTTP/1.1\r\nHost: api.example.com\r\n\r\n';
  const plainOut = `GET /b HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: ${SECRET}\r\n\r\n`;
  const chunked =
    'POST /c HTTP/1.1\r\nHost: api.example.com\r\nauthorization: x\r\nTransfer-Encoding: chunked\r\n\r\n' +
    '5\r\nworld\r\n3;ext=1\r\n!!!\r\n0\r\nX-Trailer: t\r\n\r\n';
  const chunkedOut =
    `POST /c HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\nAuthorization: ${SECRET}\r\n\r\n` +
    '5\r\nworld\r\n3;ext=1\r\n!!!\r\n0\r\nX-Trailer: t\r\n\r\n';
  // A body that looks like a request: it is a body, and passes as it is.
  const lookalike = 'GET /admin HTTP/1.1\r\nHost: evil.example\r\n\r\n';
  const hidden = `PUT /d HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: ${lookalike.length}\r\n\r\n${lookalike}`;
  const hiddenOut =
    `PUT /d HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: ${lookalike.length}\r\n` +
    `Authorization: ${SECRET}\r\n\r\n${lookalike}`;
  const stream = [withBody, plain, chunked, hidden].join('');
  const expected = [withBodyOut, plainOut, chunkedOut, hiddenOut].join('');

  it('sets the header on every head of a kept-alive stream; bodies pass unchanged', async () => {
    const r = relay();
    r.client.end(stream);
    await settle();
    expect(r.sent()).toBe(expected);
    expect(r.refused).toEqual([]);
    expect(r.upstream.writableEnded).toBe(true);
  });

  it('frames the same stream however it is cut', async () => {
    const bytes = Buffer.from(stream, 'latin1');
    const r = relay();
    for (let i = 0; i < bytes.length; i++) r.client.write(bytes.subarray(i, i + 1));
    r.client.end();
    await settle();
    expect(r.sent()).toBe(expected);
    const cut = relay();
    for (let i = 0; i < bytes.length; i += 7) cut.client.write(bytes.subarray(i, i + 7));
    cut.client.end();
    await settle();
    expect(cut.sent()).toBe(expected);
  });

  it('frames the preface first, then the stream', async () => {
    const split = withBody.length - 3;
    const r = relay({ preface: Buffer.from(withBody.slice(0, split), 'latin1') });
    r.client.end(withBody.slice(split) + plain);
    await settle();
    expect(r.sent()).toBe(withBodyOut + plainOut);
  });

  it.each([
    ['Content-Length and Transfer-Encoding', 'Content-Length: 4\r\nTransfer-Encoding: chunked\r\n'],
    ['Transfer-Encoding and Content-Length', 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n'],
    ['two Content-Lengths', 'Content-Length: 4\r\nContent-Length: 40\r\n'],
    ['a Transfer-Encoding other than chunked', 'Transfer-Encoding: chunked, identity\r\n'],
    ['a Content-Length that is not digits', 'Content-Length: +4\r\n'],
    ['two Hosts', 'Host: evil.example\r\n'],
    ['a bare LF', 'X-A: 1\nX-B: 2\r\n'],
  ])('refuses a smuggling attempt (%s) with 400, and writes nothing of it or after it', async (_, lines) => {
    const attempt = `POST /s HTTP/1.1\r\nHost: api.example.com\r\n${lines}\r\n0\r\n\r\n${lookalike}`;
    const r = relay();
    r.client.write(withBody);
    r.client.write(attempt);
    await settle();
    r.client.end(plain);
    await settle();
    expect(r.refused).toEqual([400]);
    expect(r.sent()).toBe(withBodyOut);
  });

  it('refuses a head longer than 16 KiB with 431', async () => {
    const r = relay();
    r.client.end(`GET / HTTP/1.1\r\nHost: h\r\nX-Big: ${'x'.repeat(17 * 1024)}\r\n\r\n${plain}`);
    await settle();
    expect(r.refused).toEqual([431]);
    expect(r.sent()).toBe('');
  });

  it('with once, passes the first request as firstHead with the headers set, and never a second', async () => {
    const asked =
      'POST http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\nProxy-Connection: keep-alive\r\n' +
      'Authorization: Bearer sandbox\r\nContent-Length: 5\r\n\r\n';
    const firstHead =
      'POST /x HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer sandbox\r\nContent-Length: 5\r\n' +
      'Connection: close\r\n\r\n';
    const r = relay({ once: true, firstHead, preface: Buffer.from(`${asked}he`, 'latin1') });
    r.client.write('llo');
    r.client.write('GET http://evil.example/steal HTTP/1.1\r\nHost: evil.example\r\n\r\n');
    r.client.end(plain);
    await settle();
    expect(r.sent()).toBe(
      'POST /x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\nConnection: close\r\n' +
        `Authorization: ${SECRET}\r\n\r\nhello`,
    );
    expect(r.refused).toEqual([]);
    expect(r.sent()).not.toContain('evil.example');
  });

  it('with once, a second request in the same chunk as the first is not passed on either', async () => {
    const r = relay({ once: true, firstHead: plain });
    r.client.end(plain + withBody);
    await settle();
    expect(r.sent()).toBe(plainOut);
  });

  it('without once, firstHead replaces only the first head', async () => {
    const r = relay({ firstHead: 'GET /rewritten HTTP/1.1\r\nHost: api.example.com\r\n\r\n' });
    r.client.end(plain + plain);
    await settle();
    expect(r.sent()).toBe(
      `GET /rewritten HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: ${SECRET}\r\n\r\n${plainOut}`,
    );
  });

  it('stops reading the client while upstream is full, and goes on when it drains', async () => {
    const upstream = new PassThrough({ highWaterMark: 16 });
    const r = relay({}, upstream);
    // relay() subscribed to upstream: take it off to let it fill.
    upstream.removeAllListeners('data');
    upstream.pause();
    const body = 'b'.repeat(4096);
    r.client.write(`POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\n\r\n`);
    for (let i = 0; i < body.length; i += 256) r.client.write(body.slice(i, i + 256));
    r.client.end(plain);
    await settle();
    expect(r.client.isPaused()).toBe(true);
    const chunks: Buffer[] = [];
    upstream.on('data', (chunk: Buffer) => chunks.push(chunk));
    upstream.resume();
    await settle();
    expect(Buffer.concat(chunks).toString('latin1')).toBe(
      `POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\n` +
        `Authorization: ${SECRET}\r\n\r\n${body}${plainOut}`,
    );
  });
});
