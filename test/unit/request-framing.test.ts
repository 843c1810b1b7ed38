/**
 * The request framing of preview connections (request-framing.ts), pure: where each head starts on a kept-alive
 * or pipelined connection, bodies by Content-Length and chunked passed byte for byte (never taken for a head),
 * the stream raw after an upgrade, and every ambiguous or unsupported framing refused. Each stream is read whole
 * and one byte at a time: the answer must not depend on how TCP cut it.
 */
import { type Framed, PREVIEW_MAX_CHUNK_LINE_BYTES, RequestFramer } from '../../functions/mcp/request-framing';

/** What the framer makes of `stream`: heads as their request lines, runs of bytes joined, and a refusal. */
function frame(stream: string, oneByteAtATime = false, maxHeadBytes?: number): string[] {
  const framer = new RequestFramer(maxHeadBytes);
  const bytes = Buffer.from(stream, 'latin1');
  const parts: Framed[] = [];
  if (oneByteAtATime) for (let i = 0; i < bytes.length; i += 1) parts.push(...framer.push(bytes.subarray(i, i + 1)));
  else parts.push(...framer.push(bytes));
  const out: string[] = [];
  for (const part of parts) {
    if (part.kind === 'head') out.push(`HEAD ${part.head.method} ${part.head.target}`);
    else if (part.kind === 'bad') out.push(`BAD ${part.status}`);
    else if (out.at(-1)?.startsWith('BYTES ')) out[out.length - 1] += part.bytes.toString('latin1');
    else out.push(`BYTES ${part.bytes.toString('latin1')}`);
  }
  return out;
}

/** Both ways of reading `stream` agree, and give `expected`. */
function expectFramed(stream: string, expected: string[], maxHeadBytes?: number): void {
  expect(frame(stream, false, maxHeadBytes)).toEqual(expected);
  expect(frame(stream, true, maxHeadBytes)).toEqual(expected);
}

const get = (path: string, headers: string[] = []): string =>
  [`GET ${path} HTTP/1.1`, 'Host: h', ...headers, '', ''].join('\r\n');

describe('one connection, many requests', () => {
  it(
    'finds every head of a kept-alive stream: no body, a Content-Length body, a chunked one with extensions and ' +
      'trailers',
    () => {
      const chunked = '5;name="v"\r\nhello\r\nB ; x\r\n, world\r\nok\r\n0\r\nX-Trailer: t\r\n\r\n';
      expectFramed(
        `${get('/a')}POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcPOST /c HTTP/1.1\r\nHost: ` +
          `h\r\nTransfer-Encoding: Chunked\r\n\r\n${chunked}${get('/d')}`,
        ['HEAD GET /a', 'HEAD POST /b', 'BYTES abc', 'HEAD POST /c', `BYTES ${chunked}`, 'HEAD GET /d'],
      );
    },
  );

  it('never takes a body for a head: a request inside a Content-Length body or a chunk is bytes', () => {
    const smuggled = get('/admin');
    expectFramed(`POST / HTTP/1.1\r\nHost: h\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}${get('/next')}`, [
      'HEAD POST /',
      `BYTES ${smuggled}`,
      'HEAD GET /next',
    ]);
    const chunk = `0\r\n\r\n${smuggled}`;
    const body = `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`;
    expectFramed(`POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n${body}${get('/next')}`, [
      'HEAD POST /',
      `BYTES ${body}`,
      'HEAD GET /next',
    ]);
  });

  it('drops empty lines between requests', () => {
    expectFramed(`\r\n${get('/a')}\r\n\r\n${get('/b')}`, ['HEAD GET /a', 'HEAD GET /b']);
  });

  it(
    'passes everything after an upgrade unread, and only after one that asks for it (Upgrade and Connection: ' +
      'upgrade)',
    () => {
      const frames = '\x81\x05hello GET /not-a-head HTTP/1.1\r\n\r\n';
      expectFramed(`${get('/ws', ['Upgrade: websocket', 'Connection: keep-alive, Upgrade'])}${frames}`, [
        'HEAD GET /ws',
        `BYTES ${frames}`,
      ]);
      expectFramed(`${get('/no', ['Upgrade: websocket'])}${get('/next')}`, ['HEAD GET /no', 'HEAD GET /next']);
    },
  );

  it('says when a head is under way', () => {
    const framer = new RequestFramer();
    expect(framer.midHead).toBe(false);
    framer.push(Buffer.from('GET / HT'));
    expect(framer.midHead).toBe(true);
    framer.push(Buffer.from('TP/1.1\r\nHost: h\r\n\r\n\r\n'));
    expect(framer.midHead).toBe(false);
  });
});

describe('what it refuses', () => {
  it('ambiguous or unsupported body framing, 400', () => {
    for (const headers of [
      ['Transfer-Encoding: chunked', 'Content-Length: 5'],
      ['Transfer-Encoding: gzip, chunked'],
      ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'],
      ['Transfer-Encoding: identity'],
      ['Content-Length: 5', 'Content-Length: 5'],
      ['Content-Length: 5, 5'],
      ['Content-Length: +5'],
      ['Content-Length: 0x5'],
      ['Content-Length: 1234567890123456'],
      ['Transfer-Encoding : chunked'],
      ['Host: other'],
    ]) {
      expect({ headers, framed: frame(get('/', headers)) }).toEqual({ headers, framed: ['BAD 400'] });
    }
    expect(frame('POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n')).toEqual(['BAD 400']);
    expect(frame('CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n')).toEqual(['BAD 400']);
  });

  it('chunks that are not framed exactly: bare LF, bad size, no CRLF after the data, a line too long', () => {
    const post = 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n';
    for (const body of [
      '5\nhello\r\n0\r\n\r\n',
      'x\r\n',
      '-1\r\n',
      '5\r\nhelloXY0\r\n\r\n',
      '5\r\nhello\n0\r\n\r\n',
      `1;${'e'.repeat(PREVIEW_MAX_CHUNK_LINE_BYTES)}\r\n`,
      '0\r\nbad trailer\r\n\r\n',
      '1000000000000\r\n',
    ]) {
      const framed = frame(post + body);
      expect({ body, last: framed.at(-1) }).toEqual({ body, last: 'BAD 400' });
      expect(frame(post + body, true).at(-1)).toBe('BAD 400');
    }
  });

  it('what is not an HTTP/1.x head, 400, as soon as it shows', () => {
    for (const stream of [
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      'GET /\r\n\r\n',
      ' GET / HTTP/1.1\r\n\r\n',
      'GET / HTTP/1.1\r\nNo colon here\r\n\r\n',
      'GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n',
      'GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n',
      'GET / HTTP/1.1\r\nX: a\rb\r\n\r\n',
    ]) {
      expect({ stream, framed: frame(stream) }).toEqual({ stream, framed: ['BAD 400'] });
    }
    // A TLS ClientHello, and a method too long, without waiting for a line end.
    expect(frame('\x16\x03\x01\x02\x00\x01')).toEqual(['BAD 400']);
    expect(frame('G'.repeat(40))).toEqual(['BAD 400']);
    // Bare LF line ends: an app that ends lines only at CRLF would read other lines (a body as a head) than the front.
    const smuggled = 'GET /admin HTTP/1.1\r\nHost: h\r\n\r\n';
    for (const stream of [
      'GET / HTTP/1.0\n\n',
      'GET / HTTP/1.1\nHost: h\r\n\r\n',
      `POST / HTTP/1.1\r\nHost: h\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      'GET / HTTP/1.1\r\nHost: h\r\n\n',
    ]) {
      expect({ stream, framed: frame(stream), oneByteAtATime: frame(stream, true) }).toEqual({
        stream,
        framed: ['BAD 400'],
        oneByteAtATime: ['BAD 400'],
      });
    }
    // A bad head after a good one.
    expect(frame(`${get('/')}GET / HTTP/1.1\r\nbad\r\n\r\n`)).toEqual(['HEAD GET /', 'BAD 400']);
  });

  it('heads and trailers beyond the cap, 431, and holds no more than that of either', () => {
    expect(frame(get('/', [`X: ${'a'.repeat(200)}`]), false, 128)).toEqual(['BAD 431']);
    expect(frame(`GET / HTTP/1.1\r\nX: ${'a'.repeat(200)}`, true, 128)).toEqual(['BAD 431']);
    const trailers = `0\r\n${`X: ${'t'.repeat(60)}\r\n`.repeat(3)}\r\n`;
    expect(frame(`POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n${trailers}`, true, 128).at(-1)).toBe(
      'BAD 431',
    );
  });
});
