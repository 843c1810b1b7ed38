/** Sandbox file URIs (functions/mcp/resources/sandbox-uris.ts) and a download's file name header. */
import { contentDisposition } from '../../../functions/mcp/http/file-route';
import { parseSandboxUri, toSandboxUri } from '../../../functions/mcp/resources/sandbox-uris';

it('round-trips paths with spaces, unicode and reserved characters', () => {
  for (const path of ['/home/user/a.txt', '/home/user/dir with space/ü#?%.csv', '/']) {
    const uri = toSandboxUri('session', path);
    expect(parseSandboxUri(uri)).toEqual({ sandbox: 'session', path });
  }
  expect(toSandboxUri('h.1.x', '/home/user/a b.txt')).toBe('sandbox://h.1.x/home/user/a%20b.txt');
});

it('names a path with lone surrogates as its file on disk is named (U+FFFD), never throwing', () => {
  const uri = toSandboxUri('session', '/home/user/\udfff\ud800x.txt');
  expect(uri).toBe('sandbox://session/home/user/%EF%BF%BD%EF%BF%BDx.txt');
  expect(parseSandboxUri(uri)?.path).toBe('/home/user/\ufffd\ufffdx.txt');
  expect(contentDisposition('attachment', '\ud800.bin')).toBe(
    'attachment; filename="_.bin"; filename*=UTF-8\'\'%EF%BF%BD.bin',
  );
});

it('reads no other scheme, no query, no encoded slash or NUL', () => {
  for (const uri of [
    'file:///etc/passwd',
    'sandbox://session',
    'sandbox://session/a?b',
    'sandbox://session/a#b',
    'sandbox://ses sion/a',
    'sandbox://session/a%2Fb',
    'sandbox://session/a%00b',
    'sandbox://session/%E0%A4%A',
  ]) {
    expect([uri, parseSandboxUri(uri)]).toEqual([uri, undefined]);
  }
});

it('names a download safely in Content-Disposition, the full name in filename*', () => {
  expect(contentDisposition('attachment', 'report.csv')).toBe(
    'attachment; filename="report.csv"; filename*=UTF-8\'\'report.csv',
  );
  expect(contentDisposition('inline', 'ü "q"\\%.txt')).toBe(
    'inline; filename="_ _q___.txt"; filename*=UTF-8\'\'%C3%BC%20%22q%22%5C%25.txt',
  );
});
