/**
 * get_file_url on the E2B backend, through the built bundle and the real SDK against the local E2B service: a 20 MB
 * file downloads whole and by range and an upload lands intact, through E2B's own signed URLs (sandboxes are created
 * `secure`, so the bytes never pass through the server) and through the server's own (MCP_FILE_URLS=server, as on
 * Alibaba Cloud), whose refusals hold here as locally. 200 MB each way: test/reliability/e2b-file-urls.test.ts.
 */
import { describeTransfers, type FileUrl, MB, send, shell } from '../support/e2b-file-url-suite';
import { ok, serviceDescribe, suiteWire } from '../support/e2b-wire';
import { randomBody } from '../support/transfers';
import { tamperBase64Url } from '../support/tamper';

serviceDescribe("E2B's own signed URLs (MCP_FILE_URLS=auto, secure sandboxes)", () => {
  describeTransfers(20 * MB, { origin: 'backend', uploadMethod: 'POST' });
});

serviceDescribe("the server's own URLs on E2B (MCP_FILE_URLS=server)", () => {
  describeTransfers(20 * MB, { origin: 'server', uploadMethod: 'PUT' });

  describe('refusals', () => {
    const suite = suiteWire(process.execPath, { env: { MCP_FILE_URLS: 'server', MCP_FILE_URL_MAX_BYTES: String(MB) } });
    const fileUrl = async (args: Record<string, unknown>): Promise<FileUrl> =>
      ok<FileUrl>(await suite.client.callTool('get_file_url', args));

    it('refuses a changed URL, another method, an upload past its cap, and a URL of a reset sandbox', async () => {
      await shell(suite.client, 'echo keep > kept.txt');
      const down = await fileUrl({ path: 'kept.txt' });
      const up = await fileUrl({ path: 'kept.txt', mode: 'upload' });
      const token = new URL(down.url).searchParams.get('t') ?? '';
      const changed = tamperBase64Url(token);
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
