/**
 * The HTTP front of public previews (preview-auth.ts) over loopback sockets, with a stand-in gate (which tokens
 * and cookies it takes is the signer's business, below), and the signer of its tokens (preview-token.ts). The
 * forwarder's own tests (preview-forwarder.test.ts) show the two together, with a sandbox's side behind them.
 */
import { createServer, type Server, type Socket } from 'node:net';

import { admitPreview, type PreviewGate } from '../../../../functions/mcp/sandbox/local/preview-auth';
import { createPreviewSigner } from '../../../../functions/mcp/sandbox/local/preview-token';
import { exchange } from '../../../support/tcp';

const GATE: PreviewGate = {
  cookieName: 'mcp_preview_9',
  admitToken: (token) => (token === 'good' ? { cookie: 'c00kie', maxAgeS: 60 } : undefined),
  admitCookie: (value) => value === 'c00kie',
  allowsOrigin: (origin) => origin === 'http://own:9',
};

let server: Server;
let url: string;
/** What admitPreview resolved with, per connection, in order. */
const admitted: Promise<Buffer | undefined>[] = [];

beforeAll(async () => {
  server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket: Socket) => {
    socket.on('error', () => undefined);
    admitted.push(
      admitPreview(socket, GATE).then((first) => {
        // Admitted: the forwarder would carry it in; here it ends.
        if (first !== undefined) socket.destroy();
        return first;
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

/** Sends `request` (ending the client's side when `end`); the answer, and what the front would carry in. */
async function front(request: string | Buffer, end = false): Promise<{ status: number; answer: string; carried: string | undefined }> {
  const { received } = await exchange(url, request, end);
  const carried = await admitted.shift();
  const answer = received.toString('latin1');
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1] ?? 0), answer, carried: carried?.toString('latin1') };
}

const headerOf = (answer: string, name: string): string | undefined => new RegExp(`^${name}: (.*)$`, 'im').exec(answer.split('\r\n\r\n')[0] ?? '')?.[1]?.replace(/\r$/, '');

describe('the redirect', () => {
  it('drops every mcp_preview parameter and keeps the others as sent', async () => {
    const { status, answer, carried } = await front('GET /a/b%20c?q=%41+b&mcp_preview=good&mcp_preview=bad&z HTTP/1.1\r\nHost: h\r\n\r\n');
    expect({ status, carried }).toEqual({ status: 302, carried: undefined });
    expect(headerOf(answer, 'Location')).toBe('/a/b%20c?q=%41+b&z');
    expect(headerOf(answer, 'Set-Cookie')).toBe('mcp_preview_9=c00kie; Max-Age=60; Path=/; HttpOnly; SameSite=Lax');
    expect(headerOf(answer, 'Content-Length')).toBe('0');
  });

  it('stays on this host: no `//host` or `/\\host` Location, the absolute form reduced to its path', async () => {
    for (const [target, location] of [
      ['//evil.example/x?mcp_preview=good', '/evil.example/x'],
      ['/\\evil.example?mcp_preview=good', '/evil.example'],
      ['http://preview:9//evil.example/p?mcp_preview=good', '/evil.example/p'],
      ['/?mcp_preview=good', '/'],
    ]) {
      const { answer } = await front(`GET ${target} HTTP/1.1\r\nHost: h\r\n\r\n`);
      expect({ target, location: headerOf(answer, 'Location') }).toEqual({ target, location });
    }
  });

  it('takes a stale token out for a client whose cookie is valid (no new cookie), and refuses it without one', async () => {
    const withCookie = await front('GET /p?mcp_preview=stale HTTP/1.1\r\nCookie: mcp_preview_9=c00kie\r\n\r\n');
    expect(withCookie.status).toBe(302);
    expect(headerOf(withCookie.answer, 'Location')).toBe('/p');
    expect(headerOf(withCookie.answer, 'Set-Cookie')).toBeUndefined();
    expect((await front('GET /p?mcp_preview=stale HTTP/1.1\r\n\r\n')).status).toBe(401);
  });
});

describe('what is carried in', () => {
  it('the request with its preview cookies out, every other byte as sent, and what followed it', async () => {
    const head = 'GET / HTTP/1.1\r\nHost: h\r\ncookie:a=1;mcp_preview_9=c00kie ;  mcp_preview_77=x\r\nCookie: mcp_preview_9=c00kie\r\nX: y\r\n\r\n';
    const { carried } = await front(`${head}BODY`);
    expect(carried).toBe('GET / HTTP/1.1\r\nHost: h\r\ncookie: a=1\r\nX: y\r\n\r\nBODY');
  });

  it('a request with bare LF line ends, and one whose client ended its side after it', async () => {
    expect((await front('GET / HTTP/1.0\nCookie: mcp_preview_9=c00kie\n\n')).carried).toBe('GET / HTTP/1.0\n\n');
    expect((await front('GET / HTTP/1.0\r\nCookie: mcp_preview_9=c00kie\r\n\r\n', true)).carried).toBe('GET / HTTP/1.0\r\n\r\n');
  });

  it('from a page of the sandbox’s own previews, not of another origin or an opaque one', async () => {
    const request = (origin: string): string => `POST /api HTTP/1.1\r\nCookie: mcp_preview_9=c00kie\r\nOrigin: ${origin}\r\nContent-Length: 0\r\n\r\n`;
    expect((await front(request('http://own:9'))).carried).toBe('POST /api HTTP/1.1\r\nOrigin: http://own:9\r\nContent-Length: 0\r\n\r\n');
    for (const origin of ['http://own:10', 'null']) {
      const { status, carried } = await front(request(origin));
      expect({ origin, status, carried }).toEqual({ origin, status: 403, carried: undefined });
    }
  });
});

describe('what is refused', () => {
  it('401 with a short text naming get_preview_url; no body for HEAD', async () => {
    const { status, answer } = await front('GET / HTTP/1.1\r\nCookie: other=1\r\n\r\n');
    expect(status).toBe(401);
    expect(headerOf(answer, 'Content-Type')).toBe('text/plain; charset=utf-8');
    expect(answer.split('\r\n\r\n')[1]).toMatch(/get_preview_url/);
    const head = await front('HEAD / HTTP/1.1\r\n\r\n');
    expect(head.status).toBe(401);
    expect(head.answer.split('\r\n\r\n')[1]).toBe('');
  });

  it('400 for what is not an HTTP/1.x request head', async () => {
    for (const request of [
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      'GET /\r\n\r\n',
      ' GET / HTTP/1.1\r\n\r\n',
      'GET / HTTP/1.1\r\nNo colon here\r\n\r\n',
      'GET / HTTP/1.1\r\nX: a\r\n folded\r\nCookie: mcp_preview_9=c00kie\r\n\r\n',
      'GET / HTTP/1.1\r\nX: a\x00b\r\nCookie: mcp_preview_9=c00kie\r\n\r\n',
      `${'G'.repeat(40)} / HTTP/1.1`,
    ]) {
      const { status, carried } = await front(request);
      expect({ request, status, carried }).toEqual({ request, status: 400, carried: undefined });
    }
    // Ended in the middle of its head.
    expect((await front('GET / HTTP/1.1\r\nHost:', true)).status).toBe(400);
    // Nothing sent at all: closed without an answer.
    expect(await front('', true)).toEqual({ status: 0, answer: '', carried: undefined });
  });
});

describe('the preview tokens', () => {
  const signer = createPreviewSigner('preview-test-secret-0123456789abcdef', 60_000);
  const A = { sandbox: 'sbx-a', port: 8000 };
  const NOW = Date.UTC(2026, 0, 1);

  it('are short and URL-safe, valid for their kind, sandbox and port until they expire', () => {
    const token = signer.mint('url', A, NOW);
    expect(token).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
    expect(signer.verify('url', token, A, NOW + 59_999)).toBe(NOW);
    expect(signer.verify('url', token, A, NOW + 60_000)).toBeUndefined();
    expect(signer.verify('cookie', token, A, NOW)).toBeUndefined();
    expect(signer.verify('url', token, { ...A, port: 8001 }, NOW)).toBeUndefined();
    expect(signer.verify('url', token, { ...A, sandbox: 'sbx-b' }, NOW)).toBeUndefined();
    expect(createPreviewSigner('another-secret-0123456789abcdef-xyz', 60_000).verify('url', token, A, NOW)).toBeUndefined();
  });

  it('refuse a changed issue time or signature, a malformed value, and one issued more than a minute ahead', () => {
    const token = signer.mint('cookie', A, NOW);
    const [issued = '', mac = ''] = token.split('.');
    const later = (parseInt(issued, 36) + 30).toString(36);
    for (const bad of [`${later}.${mac}`, `${issued}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`, `${issued}.${mac}x`, `${issued}${mac}`, '', '.']) {
      expect(signer.verify('cookie', bad, A, NOW)).toBeUndefined();
    }
    expect(signer.verify('cookie', signer.mint('cookie', A, NOW + 61_000), A, NOW)).toBeUndefined();
    expect(signer.verify('cookie', signer.mint('cookie', A, NOW + 30_000), A, NOW)).toBe(NOW + 30_000);
  });
});
