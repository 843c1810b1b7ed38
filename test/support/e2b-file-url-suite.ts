/**
 * get_file_url on the E2B backend, through the built bundle and the real SDK against the local E2B service: a file
 * made in the sandbox downloads whole and by range, and an upload lands intact, through E2B's own signed URLs or
 * through the server's own (test/e2b/file-urls.test.ts at 20 MB, test/reliability/e2b-file-urls.test.ts at 200 MB).
 */
import type { TestClient } from './clients';
import { ok, suiteWire } from './e2b-wire';
import { randomBody, sendBody, shaOfBody } from './transfers';

/** A megabyte, as file sizes are counted here. */
export const MB = 1_000_000;

/** What get_file_url answers. */
export interface FileUrl {
  url: string;
  method: string;
  max_bytes: number | null;
  path: string;
  note: string | null;
}

/** Runs `command` in the client's sandbox; its stdout. */
export async function shell(client: TestClient, command: string): Promise<string> {
  return ok<{ stdout: string }>(await client.callTool('run_command', { command, timeout_ms: 120_000 })).stdout;
}

async function sandboxSha(client: TestClient, path: string): Promise<string> {
  return (await shell(client, `sha256sum ${path}`)).split(' ')[0] ?? '';
}

/** Uploads `body` through `url` with its method. */
export function send(url: FileUrl, body: RequestInit['body']): Promise<Response> {
  return sendBody(url.url, url.method, body);
}

/**
 * The transfers every kind of URL must carry, of a file of `size` bytes: `expected` is the kind (whose URL, which
 * upload method). Registers its tests in the calling describe block.
 */
export function describeTransfers(
  size: number,
  expected: { origin: 'backend' | 'server'; uploadMethod: 'POST' | 'PUT' },
): void {
  const suite = suiteWire(process.execPath, {
    env: expected.origin === 'server' ? { MCP_FILE_URLS: 'server' } : {},
  });
  const fileUrl = async (args: Record<string, unknown>): Promise<FileUrl> =>
    ok<FileUrl>(await suite.client.callTool('get_file_url', args));

  it(`a ${size / MB} MB file made in the sandbox downloads whole with its sha256`, async () => {
    await shell(suite.client, `head -c ${size} /dev/urandom > big.bin`);
    const sha = await sandboxSha(suite.client, 'big.bin');
    const url = await fileUrl({ path: 'big.bin' });
    expect(url).toMatchObject({ method: 'GET', max_bytes: size, path: '/home/user/big.bin' });
    const onServer = url.url.startsWith(suite.wire.server.origin);
    expect(onServer).toBe(expected.origin === 'server');
    const res = await fetch(url.url);
    expect(res.status).toBe(200);
    expect(await shaOfBody(res)).toEqual({ sha, bytes: size });
  }, 180_000);

  it('a Range request returns exactly those bytes', async () => {
    const url = await fileUrl({ path: 'big.bin' });
    const from = (size / 4) * 3;
    const command = `tail -c +${from + 1} big.bin | head -c 4096 | sha256sum`;
    const expectedSha = (await shell(suite.client, command)).split(' ')[0];
    const res = await fetch(url.url, { headers: { range: `bytes=${from}-${from + 4095}` } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes ${from}-${from + 4095}/${size}`);
    expect(await shaOfBody(res)).toEqual({ sha: expectedSha, bytes: 4096 });
  }, 180_000);

  it(`a ${size / MB} MB upload lands intact`, async () => {
    const url = await fileUrl({ path: 'in/upload.bin', mode: 'upload' });
    expect(url.method).toBe(expected.uploadMethod);
    const { body, sha } = randomBody(size);
    const res = await send(url, body);
    expect(res.ok).toBe(true);
    expect(await sandboxSha(suite.client, 'in/upload.bin')).toBe(sha());
    await shell(suite.client, 'rm -rf in big.bin');
  }, 180_000);
}
