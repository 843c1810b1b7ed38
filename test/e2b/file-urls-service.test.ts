/**
 * The SDK's signed file URLs (`downloadUrl`, `uploadUrl`) against the local E2B service's envd `/files`
 * (test/support/e2b-local/envd-files.ts), used with plain `fetch` and no other credential: files of many megabytes
 * both ways, byte ranges and conditions as envd (Go's http.ServeContent) answers them, a full disk, and the
 * signatures envd refuses. One service and one sandbox for the file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';

import { Sandbox } from 'e2b';

import { type LocalE2B, startLocalE2B } from '../support/e2b-local';
import { needs } from '../support/needs';

const MB20 = 20_000_000;

function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

needs('bubblewrap').describe('signed file URLs on the local E2B service, through the real SDK', () => {
  let e2b: LocalE2B;
  let sbx: Sandbox;

  beforeAll(async () => {
    e2b = await startLocalE2B();
    sbx = await Sandbox.create('base', { apiKey: e2b.apiKey, apiUrl: e2b.url, sandboxUrl: e2b.url });
  });
  afterAll(() => e2b?.stop());

  /** The file's sha256 as the sandbox computes it. */
  async function sandboxSha256(path: string): Promise<string | undefined> {
    return (await sbx.commands.run(`sha256sum ${path}`)).stdout.split(' ')[0];
  }

  it('downloads a 20 MB file made in the sandbox through downloadUrl, gzipped as fetch asks or whole', async () => {
    await sbx.commands.run(`head -c ${MB20} /dev/urandom > big.bin`);
    const expected = await sandboxSha256('big.bin');
    const url = await sbx.downloadUrl('big.bin', { useSignatureExpiration: 60 });

    // fetch sends Accept-Encoding: gzip by itself; envd compresses as it reads, so there is no length.
    const gzipped = await fetch(url);
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers.get('content-encoding')).toBe('gzip');
    expect(gzipped.headers.get('content-length')).toBeNull();
    expect(sha256(new Uint8Array(await gzipped.arrayBuffer()))).toBe(expected);

    const whole = await fetch(url, { headers: { 'Accept-Encoding': 'identity' } });
    expect(whole.status).toBe(200);
    expect(Object.fromEntries(whole.headers)).toMatchObject({
      'accept-ranges': 'bytes',
      'content-length': String(MB20),
      'content-type': 'application/octet-stream',
      'content-disposition': 'inline; filename=big.bin',
      vary: 'Accept-Encoding',
    });
    expect(whole.headers.get('last-modified')).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(sha256(new Uint8Array(await whole.arrayBuffer()))).toBe(expected);
  });

  it('answers ranges with 206 and Content-Range, several as multipart/byteranges, 416 outside the file', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 123);
    const size = data.length;
    await sbx.files.write('ranges.bin', new Uint8Array(data).buffer);
    const url = await sbx.downloadUrl('ranges.bin');
    const get = (range: string) => fetch(url, { headers: { Range: range } });

    const cases: Array<[string, number, number]> = [
      ['bytes=1048000-1049999', 1_048_000, 1_049_999], // across the service's 1 MiB chunks
      ['bytes=3145000-', 3_145_000, size - 1],
      ['bytes=-100', size - 100, size - 1],
      ['bytes=0-0', 0, 0],
      ['bytes=5-999999999', 5, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await get(range);
      expect([range, res.status, res.headers.get('content-range')]).toEqual([
        range,
        206,
        `bytes ${start}-${end}/${size}`,
      ]);
      expect(res.headers.get('content-length')).toBe(String(end - start + 1));
      expect(Buffer.from(await res.arrayBuffer()).equals(data.subarray(start, end + 1))).toBe(true);
    }

    const several = await get('bytes=0-9,20-29');
    expect(several.status).toBe(206);
    const boundary = /^multipart\/byteranges; boundary=([0-9a-f]{60})$/.exec(several.headers.get('content-type')!)?.[1];
    const part = (first: number, last: number, lead: string) =>
      Buffer.concat([
        Buffer.from(
          `${lead}--${boundary}\r\nContent-Range: bytes ${first}-${last}/${size}\r\n` +
            'Content-Type: application/octet-stream\r\n\r\n',
        ),
        data.subarray(first, last + 1),
      ]);
    const expected = Buffer.concat([part(0, 9, ''), part(20, 29, '\r\n'), Buffer.from(`\r\n--${boundary}--\r\n`)]);
    expect(several.headers.get('content-length')).toBe(String(expected.length));
    expect(Buffer.from(await several.arrayBuffer()).equals(expected)).toBe(true);

    const outside = await get(`bytes=${size}-`);
    expect([outside.status, outside.headers.get('content-range'), await outside.text()]).toEqual([
      416,
      `bytes */${size}`,
      'invalid range: failed to overlap\n',
    ]);
    const malformed = await get('bytes=ten-twenty');
    expect([malformed.status, malformed.headers.get('content-range'), await malformed.text()]).toEqual([
      416,
      null,
      'invalid range\n',
    ]);
  });

  it('keeps a range only for the file it was for (If-Range), and answers If-Modified-Since with 304', async () => {
    await sbx.files.write('dated.txt', 'abcdefghij');
    const url = await sbx.downloadUrl('dated.txt');
    const lastModified = (await fetch(url, { headers: { 'Accept-Encoding': 'identity' } })).headers.get(
      'last-modified',
    )!;

    const same = await fetch(url, { headers: { Range: 'bytes=2-4', 'If-Range': lastModified } });
    expect([same.status, await same.text()]).toEqual([206, 'cde']);
    const stale = await fetch(url, { headers: { Range: 'bytes=2-4', 'If-Range': 'Mon, 01 Jan 2001 00:00:00 GMT' } });
    expect([stale.status, stale.headers.get('content-type'), await stale.text()]).toEqual([
      200,
      'text/plain; charset=utf-8',
      'abcdefghij',
    ]);
    const unchanged = await fetch(url, { headers: { 'If-Modified-Since': lastModified } });
    expect(unchanged.status).toBe(304);
  });

  it('uploads 20 MB through uploadUrl as an octet-stream POST, and lands it intact', async () => {
    const data = randomBytes(MB20);
    const url = await sbx.uploadUrl('up/big.bin', { useSignatureExpiration: 60 });
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: data,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.json()).toEqual([{ name: 'big.bin', path: '/home/user/up/big.bin', type: 'file' }]);
    expect(await sandboxSha256('up/big.bin')).toBe(sha256(data));
  });

  it('uploads a gzip body as it inflates, refuses one that is not gzip, and answers a full disk with 507', async () => {
    const data = randomBytes(3 * 1024 * 1024);
    const zipped = await fetch(await sbx.uploadUrl('up/zipped.bin'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip' },
      body: gzipSync(data),
    });
    expect(zipped.status).toBe(200);
    expect(await sandboxSha256('up/zipped.bin')).toBe(sha256(data));

    const notGzip = await fetch(await sbx.uploadUrl('up/not-gzip.bin'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip' },
      body: data,
    });
    expect([notGzip.status, await notGzip.json()]).toEqual([
      400,
      { code: 400, message: 'error decompressing request body: failed to create gzip reader: gzip: invalid header' },
    ]);

    // /dev/full: every write is ENOSPC, as on a full disk.
    const full = await fetch(await sbx.uploadUrl('/dev/full'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: data,
    });
    expect([full.status, await full.json()]).toEqual([
      507,
      { code: 507, message: `attempted to write ${data.length} bytes: not enough disk space available` },
    ]);
  });

  it('refuses an expired signature, one made for another path or operation, and HEAD (401)', async () => {
    await sbx.files.write('secret.txt', 'secret');
    const expired = await fetch(await sbx.downloadUrl('secret.txt', { useSignatureExpiration: -60 }));
    expect([expired.status, await expired.json()]).toEqual([
      401,
      { code: 401, message: 'signature is already expired' },
    ]);

    // On E2B a signed URL's host names the sandbox; a forged one names none here, so the header stands for that host.
    const named = { headers: { 'E2b-Sandbox-Id': sbx.sandboxId } };
    const otherPath = new URL(await sbx.downloadUrl('public.txt'));
    otherPath.searchParams.set('path', 'secret.txt');
    const forged = await fetch(otherPath, named);
    expect([forged.status, await forged.json()]).toEqual([401, { code: 401, message: 'invalid signature' }]);
    const writeUrl = await fetch(await sbx.uploadUrl('secret.txt'), named);
    expect(writeUrl.status).toBe(401);

    // envd's access-token check lets only GET and POST /files through on a signature.
    const head = await fetch(await sbx.downloadUrl('secret.txt'), { method: 'HEAD' });
    expect(head.status).toBe(401);
    expect(await sbx.files.read('secret.txt')).toBe('secret');
  });
});
