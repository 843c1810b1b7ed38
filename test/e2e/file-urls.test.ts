/**
 * get_file_url on the local backend, through the built bundle: a 200 MB file made in the sandbox downloads whole
 * and by range, a 200 MB upload lands intact, and every refusal (a changed, expired or other-method URL; a
 * sandbox reset, ended or deleted; a path swapped for a link or a FIFO; an upload past its cap or the disk)
 * answers with a status and leaves the files as they were. Both protocol eras make the URLs.
 */
import { createFileUrlSigner } from '../../functions/mcp/files/file-url-token';
import { connectClient, connectModern, textOf, type TestClient, type ToolResult } from '../support/clients';
import { needs } from '../support/needs';
import { startServer, stopAllServers, type StartedServer } from '../support/server';
import { randomBody, sendBody, shaOfBody } from '../support/transfers';

const TOKEN = 'e2e-file-urls-token-0123456789abcdef';
const SECRET = 'e2e-file-urls-secret-0123456789abcdef0123456789';
const MB = 1_000_000;

/** The suites see paths as a sandbox does (`/home/user`): they need bubblewrap. */
const describeInSandbox = needs('bubblewrap').describe;

let server: StartedServer;
let client: TestClient;

beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_SESSION_SECRET: SECRET } });
  client = await connectClient('v2', server.url, { token: TOKEN });
});
afterAll(async () => {
  await client.close();
  await stopAllServers();
});

async function shell(command: string, on: TestClient = client): Promise<string> {
  const result = await on.callTool('run_command', { command });
  expect(result.structuredContent).toMatchObject({ exit_code: 0 });
  return String(result.structuredContent?.stdout ?? '');
}

interface FileUrl {
  url: string;
  method: string;
  expires_at: string;
  max_bytes: number | null;
  path: string;
}

async function fileUrl(args: Record<string, unknown>, on: TestClient = client): Promise<FileUrl> {
  const result = await on.callTool('get_file_url', args);
  expect(result.isError).not.toBe(true);
  return result.structuredContent as unknown as FileUrl;
}

/** The sha256 of what the sandbox holds at `path`. */
async function sandboxSha(path: string, on: TestClient = client): Promise<string> {
  return (await shell(`sha256sum ${path}`, on)).split(' ')[0] ?? '';
}

function put(url: string, body: RequestInit['body']): Promise<Response> {
  return sendBody(url, 'PUT', body);
}

/** The token of a file URL, decoded, and a way to sign a changed one with the server's secret. */
function tokenOf(url: string): string {
  return new URL(url).searchParams.get('t') ?? '';
}

describeInSandbox('downloads', () => {
  let url: FileUrl;
  let sha: string;
  beforeAll(async () => {
    await shell('mkdir -p out && head -c 200000000 /dev/urandom > out/big.bin');
    sha = await sandboxSha('out/big.bin');
    url = await fileUrl({ path: 'out/big.bin' });
  }, 120_000);

  it('a 200 MB file downloads whole, with its length, name and sha256', async () => {
    expect(url.method).toBe('GET');
    expect(url.max_bytes).toBe(200 * MB);
    expect(url.path).toBe('/home/user/out/big.bin');
    expect(url.url.startsWith(`${server.origin}/files/big.bin?t=`)).toBe(true);
    const res = await fetch(url.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(200 * MB));
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('content-disposition')).toContain('filename="big.bin"');
    const got = await shaOfBody(res);
    expect(got).toEqual({ sha, bytes: 200 * MB });
  }, 120_000);

  it('a Range request returns exactly those bytes', async () => {
    const expected = (await shell('tail -c +150000001 out/big.bin | head -c 1000 | sha256sum')).split(' ')[0];
    const res = await fetch(url.url, { headers: { range: 'bytes=150000000-150000999' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 150000000-150000999/${200 * MB}`);
    expect(res.headers.get('content-length')).toBe('1000');
    expect((await shaOfBody(res)).sha).toBe(expected);
    const suffix = await fetch(url.url, { headers: { range: 'bytes=-10' } });
    expect(suffix.status).toBe(206);
    expect(Buffer.from(await suffix.arrayBuffer()).toString('hex')).toBe(
      (await shell('tail -c 10 out/big.bin | od -An -tx1 | tr -d " \\n"')).trim(),
    );
    const past = await fetch(url.url, { headers: { range: `bytes=${200 * MB}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${200 * MB}`);
  });

  it('HEAD answers the length without the body', async () => {
    const res = await fetch(url.url, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(200 * MB));
  });
});

describeInSandbox('uploads', () => {
  it('a 200 MB upload lands intact, parent directories made', async () => {
    const url = await fileUrl({ path: 'in/deep/upload.bin', mode: 'upload' });
    expect(url.method).toBe('PUT');
    expect(url.max_bytes).toBe(2 ** 30);
    const { body, sha } = randomBody(200 * MB);
    const res = await put(url.url, body);
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ path: '/home/user/in/deep/upload.bin', bytes: 200 * MB, created: true });
    expect(await sandboxSha('in/deep/upload.bin')).toBe(sha());
    // Again: the file is replaced whole.
    const again = await put(url.url, 'small\n');
    expect(again.status).toBe(200);
    expect(await shell('cat in/deep/upload.bin; ls -a in/deep')).toBe('small\n.\n..\nupload.bin\n');
    await shell('rm -rf in');
  }, 120_000);
});

describeInSandbox('refusals', () => {
  it('a changed URL gets 403 and nothing is read or written', async () => {
    await shell('echo keep > kept.txt && echo secret > other.txt');
    const down = await fileUrl({ path: 'kept.txt' });
    const up = await fileUrl({ path: 'kept.txt', mode: 'upload' });
    const token = tokenOf(down.url);
    const [payload = '', mac = ''] = token.split('.');
    // Another path under the same signature.
    const wire = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
    wire[8] = '/home/user/other.txt';
    const otherPath = `${Buffer.from(JSON.stringify(wire)).toString('base64url')}.${mac}`;
    const flipped = `${payload}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'AB' : 'AA'}`;
    for (const bad of [otherPath, flipped, payload, '', 'x'.repeat(5000)]) {
      const res = await fetch(`${server.origin}/files/kept.txt?t=${bad}`);
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('not valid');
    }
    // Another method: a download URL does not upload, an upload URL does not download.
    const wrongPut = await put(down.url, 'overwritten\n');
    expect(wrongPut.status).toBe(403);
    expect(wrongPut.headers.get('allow')).toBe('GET, HEAD');
    const wrongGet = await fetch(up.url);
    expect(wrongGet.status).toBe(403);
    expect(await wrongGet.text()).toContain('upload URL');
    expect(await shell('cat kept.txt')).toBe('keep\n');
  });

  it('an expired URL gets 403, signed right but past its time', async () => {
    const down = await fileUrl({ path: 'kept.txt' });
    const wire = JSON.parse(Buffer.from(tokenOf(down.url).split('.')[0] ?? '', 'base64url').toString()) as unknown[];
    const signer = createFileUrlSigner(SECRET);
    const place = {
      kind: wire[1] === 's' ? ('session' as const) : ('handle' as const),
      key: String(wire[2]),
      tag: String(wire[3]),
      principal: String(wire[4]),
      issuedAtMs: Number(wire[5]),
    };
    const grant = { place, sandboxId: String(wire[7]), path: String(wire[8]), maxBytes: 0 };
    const fresh = signer.sign({ ...grant, mode: 'download', expiresAtS: Math.floor(Date.now() / 1000) + 60 });
    expect((await fetch(`${server.origin}/files/kept.txt?t=${fresh}`)).status).toBe(200);
    const old = signer.sign({ ...grant, mode: 'download', expiresAtS: Math.floor(Date.now() / 1000) - 1 });
    const res = await fetch(`${server.origin}/files/kept.txt?t=${old}`);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('expired');
  });

  it('get_file_url refuses what the file tools refuse: ../, links out, FIFOs, directories', async () => {
    await shell('ln -sf /etc/passwd out-link && mkfifo pipe && mkdir -p adir');
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ path: '../../etc/passwd' }, "outside the sandbox's working directory"],
      [{ path: 'out-link' }, 'symbolic link'],
      [{ path: 'pipe' }, 'not a regular file'],
      [{ path: 'adir' }, 'is a directory'],
      [{ path: 'missing.bin' }, 'No such file'],
    ];
    for (const [args, fragment] of refusals) {
      const result = await client.callTool('get_file_url', args);
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain(fragment);
    }
  });

  it('a file swapped for a link out or a FIFO after the URL was made is refused, nothing leaked', async () => {
    await shell('echo mine > swap.txt && mkdir -p updir');
    const down = await fileUrl({ path: 'swap.txt' });
    const up = await fileUrl({ path: 'updir/new.txt', mode: 'upload' });
    await shell('rm swap.txt && ln -s /etc/passwd swap.txt && rm -r updir && ln -s /tmp updir');
    const leaked = await fetch(down.url);
    expect(leaked.status).toBe(403);
    expect(await leaked.text()).not.toContain('root:');
    const written = await put(up.url, 'escape\n');
    expect(written.status).toBe(403);
    expect(await shell('ls /tmp/new.txt 2>/dev/null || echo absent')).toBe('absent\n');
    await shell('rm swap.txt && mkfifo swap.txt');
    expect((await fetch(down.url)).status).toBe(403);
    await shell('rm -f swap.txt updir');
  });

  it('an upload past its cap gets 413 and leaves the file as it was, no partial file behind', async () => {
    const capped = await startServer({
      env: { MCP_AUTH_TOKENS: TOKEN, MCP_FILE_URL_MAX_BYTES: String(MB) },
    });
    const other = await connectClient('v2', capped.url, { token: TOKEN });
    try {
      await shell('echo before > capped.txt', other);
      const url = await fileUrl({ path: 'capped.txt', mode: 'upload' }, other);
      expect(url.max_bytes).toBe(MB);
      // Declared too large: refused before a byte is read.
      expect((await put(url.url, Buffer.alloc(MB + 1))).status).toBe(413);
      // Not declared (chunked): refused once it passes the cap.
      const res = await put(url.url, randomBody(3 * MB).body);
      expect(res.status).toBe(413);
      expect(await res.text()).toContain('nothing was written');
      expect(await shell('cat capped.txt; ls -a', other)).toBe('before\n.\n..\ncapped.txt\n');
    } finally {
      await other.close();
    }
  });

  it('query strings are in no log line', () => {
    const lines = server.stdout();
    expect(lines).toContain('"path":"/files/kept.txt"');
    expect(lines).not.toMatch(/[?&]t=/);
  });
});

needs('bubblewrap', 'disk images').describe('the disk limit', () => {
  it('an upload past the disk gets 507, the old file kept and no partial file left', async () => {
    const small = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_DISK_MB: '64' } });
    const other = await connectClient('v2', small.url, { token: TOKEN });
    try {
      await shell('echo before > full.bin', other);
      const url = await fileUrl({ path: 'full.bin', mode: 'upload' }, other);
      const res = await put(url.url, randomBody(100 * MB).body);
      expect(res.status).toBe(507);
      expect(await res.text()).toContain('disk');
      expect(await shell('cat full.bin; ls -a', other)).toBe('before\n.\n..\nfull.bin\n');
    } finally {
      await other.close();
    }
  }, 60_000);
});

describeInSandbox('ended sandboxes', () => {
  it('a URL of a reset sandbox gets 410, of an ended session 410, of a deleted named sandbox 404', async () => {
    const own = await connectClient('v2', server.url, { token: TOKEN });
    await shell('echo one > a.txt', own);
    const before = await fileUrl({ path: 'a.txt' }, own);
    expect((await fetch(before.url)).status).toBe(200);
    expect((await own.callTool('reset_sandbox', {})).isError).not.toBe(true);
    await shell('echo two > a.txt', own);
    const reset = await fetch(before.url);
    expect(reset.status).toBe(410);
    expect(await reset.text()).toContain('reset');
    const after = await fileUrl({ path: 'a.txt' }, own);
    await own.terminate();
    const ended = await fetch(after.url);
    expect(ended.status).toBe(410);

    const named = await connectClient('v2', server.url, { token: TOKEN });
    expect((await named.callTool('open_sandbox', { name: 'files-e2e' })).isError).not.toBe(true);
    await shell('echo named > n.txt', named);
    const inNamed = await fileUrl({ path: 'n.txt' }, named);
    expect(await (await fetch(inNamed.url)).text()).toBe('named\n');
    expect((await named.callTool('delete_sandbox', { name: 'files-e2e' })).isError).not.toBe(true);
    expect((await fetch(inNamed.url)).status).toBe(404);
    await named.close();
  });
});

describeInSandbox('the 2026-07-28 lane', () => {
  it('makes URLs for the sandbox a handle names', async () => {
    const modern = await connectModern(server.url, TOKEN, 'file-urls-e2e');
    const first = (await modern.callTool({
      name: 'run_command',
      arguments: { command: 'echo modern > m.txt' },
    })) as ToolResult;
    const sandbox = first.structuredContent?.sandbox;
    const made = (await modern.callTool({ name: 'get_file_url', arguments: { path: 'm.txt', sandbox } })) as ToolResult;
    const { url } = made.structuredContent as unknown as FileUrl;
    expect(await (await fetch(url)).text()).toBe('modern\n');
    const up = (await modern.callTool({
      name: 'get_file_url',
      arguments: { path: 'm.txt', mode: 'upload', sandbox },
    })) as ToolResult;
    expect((await put((up.structuredContent as unknown as FileUrl).url, 'changed\n')).status).toBe(200);
    const read = (await modern.callTool({ name: 'read_file', arguments: { path: 'm.txt', sandbox } })) as ToolResult;
    expect(read.structuredContent?.content).toBe('changed\n');
    await modern.close();
  });
});
