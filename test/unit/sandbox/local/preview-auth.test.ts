/**
 * What the HTTP front of previews admits (preview-auth.ts), one request head at a time, with a stand-in gate
 * (which tokens and cookies it takes is the signer's business, below), and the signer of its tokens
 * (preview-token.ts). The connection around it: preview-connection.test.ts; the forwarder with a sandbox's side
 * behind it: preview-forwarder.test.ts.
 */
import {
  judgeHead,
  type PreviewGate,
  toAnswer,
  type Verdict,
} from '../../../../functions/mcp/sandbox/local/preview-auth';
import { RequestFramer } from '../../../../functions/mcp/request-framing';
import { createPreviewSigner } from '../../../../functions/mcp/sandbox/local/preview-token';
import { tamperBase64Url } from '../../../support/tamper';

const GATE: PreviewGate = {
  cookieName: 'mcp_preview_9',
  admitToken: (token) => (token === 'good' ? { cookie: 'c00kie', maxAgeS: 60 } : undefined),
  admitCookie: (value) => value === 'c00kie',
  allowsOrigin: (origin) => origin === 'http://own:9',
  allowsHost: (host) => host !== 'elsewhere:9',
};

/** The verdict on one head (framed as the connection frames it), with a 302's or refusal's headers by name. */
function judged(request: string): { status: number | 'forward'; carried?: string; headers: Record<string, string> } {
  const [part] = new RequestFramer().push(Buffer.from(request, 'latin1'));
  if (part?.kind !== 'head') throw new Error(`not a head: ${request}`);
  const verdict: Verdict = judgeHead(part.head, GATE);
  if (verdict.kind === 'forward') return { status: 'forward', carried: verdict.head.toString('latin1'), headers: {} };
  return {
    status: verdict.status,
    headers: Object.fromEntries(
      verdict.headers.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
    ),
  };
}

describe('the redirect', () => {
  it('drops every mcp_preview parameter and keeps the others as sent', () => {
    const { status, headers } = judged(
      'GET /a/b%20c?q=%41+b&mcp_preview=good&mcp_preview=bad&z HTTP/1.1\r\nHost: h\r\n\r\n',
    );
    expect(status).toBe(302);
    expect(headers).toEqual({
      Location: '/a/b%20c?q=%41+b&z',
      'Set-Cookie': 'mcp_preview_9=c00kie; Max-Age=60; Path=/; HttpOnly; SameSite=Lax',
    });
    expect(toAnswer(302, ['Location: /']).toString()).toBe(
      'HTTP/1.1 302 Found\r\nLocation: /\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
    );
  });

  it('stays on this host: no `//host` or `/\\host` Location, the absolute form reduced to its path', () => {
    for (const [target, location] of [
      ['//evil.example/x?mcp_preview=good', '/evil.example/x'],
      ['/\\evil.example?mcp_preview=good', '/evil.example'],
      ['http://preview:9//evil.example/p?mcp_preview=good', '/evil.example/p'],
      ['/?mcp_preview=good', '/'],
    ]) {
      expect({ target, location: judged(`GET ${target} HTTP/1.1\r\nHost: h\r\n\r\n`).headers.Location }).toEqual({
        target,
        location,
      });
    }
  });

  it('takes a stale token out for a client whose cookie is valid (no new cookie), and refuses it without one', () => {
    const withCookie = judged('GET /p?mcp_preview=stale HTTP/1.1\r\nCookie: mcp_preview_9=c00kie\r\n\r\n');
    expect(withCookie).toEqual({ status: 302, headers: { Location: '/p' } });
    expect(judged('GET /p?mcp_preview=stale HTTP/1.1\r\n\r\n').status).toBe(401);
  });
});

describe('what is carried in', () => {
  it('the request with its preview cookies out, every other byte as sent', () => {
    const head =
      'GET / HTTP/1.1\r\nHost: h\r\ncookie:a=1;mcp_preview_9=c00kie ;  mcp_preview_77=x\r\nCookie: ' +
      'mcp_preview_9=c00kie\r\nX: y\r\n\r\n';
    expect(judged(head).carried).toBe('GET / HTTP/1.1\r\nHost: h\r\ncookie: a=1\r\nX: y\r\n\r\n');
  });

  it('from a page of the sandbox’s own previews, not of another origin or an opaque one', () => {
    const request = (origin: string): string =>
      `POST /api HTTP/1.1\r\nCookie: mcp_preview_9=c00kie\r\nOrigin: ${origin}\r\nContent-Length: 0\r\n\r\n`;
    expect(judged(request('http://own:9')).carried).toBe(
      'POST /api HTTP/1.1\r\nOrigin: http://own:9\r\nContent-Length: 0\r\n\r\n',
    );
    for (const origin of ['http://own:10', 'null'])
      expect({ origin, status: judged(request(origin)).status }).toEqual({ origin, status: 403 });
  });

  it('only for a Host the preview answers to (421), token or cookie', () => {
    for (const line of ['GET /?mcp_preview=good HTTP/1.1', 'GET / HTTP/1.1']) {
      expect(judged(`${line}\r\nHost: elsewhere:9\r\nCookie: mcp_preview_9=c00kie\r\n\r\n`).status).toBe(421);
    }
  });
});

describe('what is refused', () => {
  it('401 with a short text naming get_preview_url; no body for HEAD', () => {
    expect(judged('GET / HTTP/1.1\r\nCookie: other=1\r\n\r\n').status).toBe(401);
    const answer = toAnswer(401).toString();
    expect(answer).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n.*Content-Type: text\/plain; charset=utf-8\r\n/s);
    expect(answer.split('\r\n\r\n')[1]).toMatch(/get_preview_url/);
    const [part] = new RequestFramer().push(Buffer.from('HEAD / HTTP/1.1\r\n\r\n'));
    expect(part?.kind === 'head' && judgeHead(part.head, GATE)).toMatchObject({
      kind: 'answer',
      status: 401,
      bodyless: true,
    });
    const bodyless = toAnswer(401, [], true).toString();
    expect(bodyless.split('\r\n\r\n')[1]).toBe('');
    expect(bodyless).toContain(`Content-Length: ${answer.split('\r\n\r\n')[1]?.length}`);
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
    expect(
      createPreviewSigner('another-secret-0123456789abcdef-xyz', 60_000).verify('url', token, A, NOW),
    ).toBeUndefined();
  });

  it('refuse a changed issue time or signature, a malformed value, and one issued more than a minute ahead', () => {
    const token = signer.mint('cookie', A, NOW);
    const [issued = '', mac = ''] = token.split('.');
    const later = (parseInt(issued, 36) + 30).toString(36);
    for (const bad of [
      `${later}.${mac}`,
      `${issued}.${tamperBase64Url(mac)}`,
      `${issued}.${mac}x`,
      `${issued}${mac}`,
      '',
      '.',
    ]) {
      expect(signer.verify('cookie', bad, A, NOW)).toBeUndefined();
    }
    expect(signer.verify('cookie', signer.mint('cookie', A, NOW + 61_000), A, NOW)).toBeUndefined();
    expect(signer.verify('cookie', signer.mint('cookie', A, NOW + 30_000), A, NOW)).toBe(NOW + 30_000);
  });
});
