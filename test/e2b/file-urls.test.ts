/**
 * get_file_url on the E2B backend, through the built bundle and the real SDK against the local E2B service: a
 * 200 MB file made in the sandbox downloads whole and by range, and a 200 MB upload lands intact, both through
 * E2B's own signed URLs (sandboxes are created `secure`, so the bytes never pass through the server) and through
 * the server's own URLs (MCP_FILE_URLS=server, as on Alibaba Cloud), whose refusals hold here as locally.
 */
import type { TestClient } from '../support/clients';
import { ok, serviceDescribe, suiteWire } from '../support/e2b-wire';
import { randomBody, sendBody, shaOfBody } from '../support/transfers';

const MB = 1_000_000;
const SIZE = 200 * MB;

interface FileUrl {
  url: string;
  method: string;
  max_bytes: number | null;
  path: string;
  note: string | null;
}

async function shell(client: TestClient, command: string): Promise<string> {
  return ok<{ stdout: string }>(await client.callTool('run_command', { command, timeout_ms: 120_000 })).stdout;
}

async function sandboxSha(client: TestClient, path: string): Promise<string> {
  return (await shell(client, `sha256sum ${path}`)).split(' ')[0] ?? '';
}

function send(url: FileUrl, body: RequestInit['body']): Promise<Response> {
  return sendBody(url.url, url.method, body);
}

/** The transfers every kind of URL must carry, with `expected` the kind (whose URL, which upload method). */
function describeTransfers(expected: { origin: 'backend' | 'server'; uploadMethod: 'POST' | 'PUT' }): void {
  const suite = suiteWire(process.execPath, {
    env: expected.origin === 'server' ? { MCP_FILE_URLS: 'server' } : {},
  });
  const fileUrl = async (args: Record<string, unknown>): Promise<FileUrl> =>
    ok<FileUrl>(await suite.client.callTool('get_file_url', args));

  it('a 200 MB file made in the sandbox downloads whole with its sha256', async () => {
    await shell(suite.client, `head -c ${SIZE} /dev/urandom > big.bin`);
    const sha = await sandboxSha(suite.client, 'big.bin');
    const url = await fileUrl({ path: 'big.bin' });
    expect(url).toMatchObject({ method: 'GET', max_bytes: SIZE, path: '/home/user/big.bin' });
    const onServer = url.url.startsWith(suite.wire.server.origin);
    expect(onServer).toBe(expected.origin === 'server');
    const res = await fetch(url.url);
    expect(res.status).toBe(200);
    expect(await shaOfBody(res)).toEqual({ sha, bytes: SIZE });
  }, 180_000);

  it('a Range request returns exactly those bytes', async () => {
    const url = await fileUrl({ path: 'big.bin' });
    const expectedSha = (await shell(suite.client, 'tail -c +150000001 big.bin | head -c 4096 | sha256sum')).split(
      ' ',
    )[0];
    const res = await fetch(url.url, { headers: { range: 'bytes=150000000-150004095' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 150000000-150004095/${SIZE}`);
    expect(await shaOfBody(res)).toEqual({ sha: expectedSha, bytes: 4096 });
  }, 180_000);

  it('a 200 MB upload lands intact', async () => {
    const url = await fileUrl({ path: 'in/upload.bin', mode: 'upload' });
    expect(url.method).toBe(expected.uploadMethod);
    const { body, sha } = randomBody(SIZE);
    const res = await send(url, body);
    expect(res.ok).toBe(true);
    expect(await sandboxSha(suite.client, 'in/upload.bin')).toBe(sha());
    await shell(suite.client, 'rm -rf in big.bin');
  }, 180_000);
}

serviceDescribe("E2B's own signed URLs (MCP_FILE_URLS=auto, secure sandboxes)", () => {
  describeTransfers({ origin: 'backend', uploadMethod: 'POST' });
});

serviceDescribe("the server's own URLs on E2B (MCP_FILE_URLS=server)", () => {
  describeTransfers({ origin: 'server', uploadMethod: 'PUT' });

  describe('refusals', () => {
    const suite = suiteWire(process.execPath, { env: { MCP_FILE_URLS: 'server', MCP_FILE_URL_MAX_BYTES: String(MB) } });
    const fileUrl = async (args: Record<string, unknown>): Promise<FileUrl> =>
      ok<FileUrl>(await suite.client.callTool('get_file_url', args));

    it('refuses a changed URL, another method, an upload past its cap, and a URL of a reset sandbox', async () => {
      await shell(suite.client, 'echo keep > kept.txt');
      const down = await fileUrl({ path: 'kept.txt' });
      const up = await fileUrl({ path: 'kept.txt', mode: 'upload' });
      const token = new URL(down.url).searchParams.get('t') ?? '';
      const changed = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
      expect((await fetch(down.url.replace(token, changed))).status).toBe(403);
      expect((await fetch(up.url)).status).toBe(403);
      const tooLarge = await send(up, randomBody(2 * MB).body);
      expect(tooLarge.status).toBe(413);
      expect(await shell(suite.client, 'cat kept.txt; ls -a | grep -c upload || true')).toBe('keep\n0\n');
      ok(await suite.client.callTool('reset_sandbox', {}));
      expect((await fetch(down.url)).status).toBe(410);
    }, 120_000);
  });
});
