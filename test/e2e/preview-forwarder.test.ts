/**
 * get_preview_url on the local backend under bubblewrap, through the built bundle: "start the app, then open its
 * preview" from the test process, on the default configuration (a sandbox with its own network, the server on
 * loopback). The URL is a forwarder on the host whose connections the sandbox's supervisor carries in
 * (preview-forwarder.ts); what it must not do: outlive its sandbox, reach another sandbox, take more than its
 * connections, or trust what a supervisor taken over from inside says.
 */
import { createHash } from 'node:crypto';
import { networkInterfaces } from 'node:os';

import { connectClient, type TestClient } from '../support/clients';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { runServerToExit, startServer, stopAllServers, type StartedServer } from '../support/server';
import { bodyOf, exchange, exchangeOn, httpGet, openConnection } from '../support/tcp';

const TOKEN = 'e2e-preview-token-0123456789abcdef';
const PAGE = '<h1>served from the sandbox</h1>';
/** The sandbox port the app listens on (its own network: no clash with the host or another sandbox). */
const APP_PORT = 8000;
/** A command that connects from inside a sandbox to 127.0.0.1:<port> and says whether it could. */
const CONNECT_FROM_INSIDE = (port: number): string =>
  `python3 -c "import socket
try:
    socket.create_connection(('127.0.0.1', ${port}), 2); print('connected')
except OSError as e:
    print('failed', e.errno)"`;

interface Preview {
  url: string;
  port: number;
  listening: boolean;
  reachable: boolean;
  note: string | null;
}

const previewOf = async (client: TestClient, port = APP_PORT): Promise<Preview> => (await client.callTool('get_preview_url', { port })).structuredContent as unknown as Preview;

/** Writes the page and starts `python3 -m http.server` on APP_PORT in the background; resolves with the process id. */
async function startApp(client: TestClient): Promise<string> {
  await client.callTool('write_file', { path: 'site/index.html', content: PAGE });
  const started = await client.callTool('run_command', { command: `cd site && exec python3 -m http.server ${APP_PORT} --bind 127.0.0.1`, background: true });
  return started.structuredContent?.process_id as string;
}

const untilListening = (client: TestClient): Promise<Preview> => pollUntil(() => previewOf(client), (p) => p.listening, SETTLE_MS, 100);

/** The app's preview, once it listens (started if it does not yet: each test can run alone). */
async function appPreview(client: TestClient): Promise<Preview> {
  if (!(await previewOf(client)).listening) await startApp(client);
  return untilListening(client);
}

describe('the preview URL of a local sandbox with its own network', () => {
  let server: StartedServer;
  let client: TestClient;

  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, SANDBOX_BACKEND: 'local' } });
    client = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await client.close();
    await stopAllServers();
  });

  it('reaches the app from the test process once it runs, over more than one connection, on the URL given before it started', async () => {
    const before = await previewOf(client);
    expect(before).toMatchObject({ port: APP_PORT, listening: false, reachable: true, note: null });
    expect(before.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(before.url).not.toBe(`http://127.0.0.1:${APP_PORT}`);
    await startApp(client);
    const after = await untilListening(client);
    expect(after).toEqual({ ...before, listening: true });

    const response = await fetch(`${after.url}/index.html`);
    expect({ status: response.status, body: await response.text() }).toEqual({ status: 200, body: PAGE });
    expect(bodyOf((await exchange(after.url, httpGet('/index.html'))).received)).toBe(PAGE);
    expect(await (await fetch(`${after.url}/index.html`)).text()).toBe(PAGE);
  });

  it('carries a 10 MiB answer whole', async () => {
    await appPreview(client);
    const made = await client.callTool('run_command', { command: 'head -c 10485760 /dev/urandom > site/big.bin && sha256sum site/big.bin' });
    const inside = String(made.structuredContent?.stdout).split(' ')[0];
    const { url } = await appPreview(client);
    const started = process.hrtime.bigint();
    const body = Buffer.from(await (await fetch(`${url}/big.bin`)).arrayBuffer());
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    expect({ bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') }).toEqual({ bytes: 10_485_760, sha256: inside });
    console.log(`10 MiB from python3 -m http.server in the sandbox through the forwarder: ${ms.toFixed(0)} ms (${((10 / ms) * 1000).toFixed(1)} MiB/s)`);
  });

  it('is out of reach of another sandbox: its own network has neither the app nor the forwarder', async () => {
    const { url } = await appPreview(client);
    const other = await connectClient('v2', server.url, { token: TOKEN });
    for (const port of [APP_PORT, Number(new URL(url).port)]) {
      expect((await other.callTool('run_command', { command: CONNECT_FROM_INSIDE(port) })).structuredContent?.stdout).toMatch(/^failed/);
    }
    // Its own preview of the same port is a listener of its own, where nothing listens.
    const theirs = await previewOf(other);
    expect(theirs).toMatchObject({ listening: false });
    expect(theirs.url).not.toBe(url);
    expect((await exchange(theirs.url, httpGet('/index.html'))).received.length).toBe(0);
    await other.terminate();
  });

  it('carries 64 connections of a sandbox at once and closes the 65th at once, then takes new ones as others end', async () => {
    const { url } = await appPreview(client);
    // Idle connections: http.server waits on each for a request line, so all 64 stay open.
    const held = [];
    for (let i = 0; i < 64; i += 1) held.push(await openConnection(url));
    const beyond = await exchange(url, httpGet('/index.html'));
    expect(beyond.received.length).toBe(0);
    // The held ones are carried: one answers, and closes (HTTP/1.0) …
    expect(bodyOf((await exchangeOn(held[0]!, httpGet('/index.html'))).received)).toBe(PAGE);
    // … which makes room for one more.
    const next = await pollUntil(() => exchange(url, httpGet('/index.html')), (answer) => bodyOf(answer.received) === PAGE, SETTLE_MS, 100);
    expect(bodyOf(next.received)).toBe(PAGE);
    for (const socket of held) socket.destroy();
  });

  it("ignores frames for stream ids the supervisor never had, and kills a supervisor that sends an oversized frame (taken over from inside)", async () => {
    const { url } = await appPreview(client);
    // The command's parent is the supervisor, running as the sandbox's user: the command takes a copy of its
    // stdout (pidfd_open, pidfd_getfd: 434, 438) and writes frames there as if it were the supervisor.
    const write = async (frame: string): Promise<void> => {
      const command = `python3 -c "import ctypes, os, struct, sys; libc = ctypes.CDLL(None, use_errno=True); fd = libc.syscall(438, libc.syscall(434, int(sys.argv[1]), 0), 1, 0); assert fd >= 0, ctypes.get_errno(); os.write(fd, ${frame})" "$PPID"`;
      const result = (await client.callTool('run_command', { command })).structuredContent;
      expect(result).toMatchObject({ stderr: '' });
    };
    await write(`struct.pack('>IBIB', 1, 2, 999999, 0) + b'x'`);
    await write(`struct.pack('>IBIB', 0, 10, 999998, 0) + struct.pack('>IBIB', 1, 11, 999997, 0) + b'1'`);
    expect(await previewOf(client)).toMatchObject({ url, listening: true });
    expect(bodyOf((await exchange(url, httpGet('/index.html'))).received)).toBe(PAGE);

    const heldOpen = await openConnection(url);
    const heldOutcome = exchangeOn(heldOpen, '');
    await write(`struct.pack('>IBIB', 2 << 20, 2, 1, 1)`);
    // Killed with everything it started: the app, and the connection it carried.
    expect((await heldOutcome).received.length).toBe(0);
    expect(await previewOf(client)).toMatchObject({ url, listening: false });
    expect((await exchange(url, httpGet('/index.html'))).received.length).toBe(0);
    // The next call starts a new supervisor, and the same URL serves the app started again.
    await startApp(client);
    await untilListening(client);
    expect(bodyOf((await exchange(url, httpGet('/index.html'))).received)).toBe(PAGE);
  });

  it('closes the forwarder when the sandbox is reset, and when its session is deleted', async () => {
    const own = await connectClient('v2', server.url, { token: TOKEN });
    await startApp(own);
    const { url } = await untilListening(own);
    expect(bodyOf((await exchange(url, httpGet('/index.html'))).received)).toBe(PAGE);
    await own.callTool('reset_sandbox');
    expect((await exchange(url, httpGet('/index.html'))).error).toBe('ECONNREFUSED');

    await startApp(own);
    const fresh = await untilListening(own);
    expect(fresh.url).not.toBe(url);
    const held = await openConnection(fresh.url);
    const heldOutcome = exchangeOn(held, '');
    await own.terminate();
    expect((await heldOutcome).received.length).toBe(0);
    expect((await exchange(fresh.url, httpGet('/index.html'))).error).toBe('ECONNREFUSED');
  });
});

describe('the preview address', () => {
  afterAll(stopAllServers);

  it('on a server other hosts reach, stays on loopback and says the URL is on the server’s host', async () => {
    const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, SANDBOX_BACKEND: 'local', HOST: '0.0.0.0' } });
    const client = await connectClient('v2', `http://127.0.0.1:${server.port}/mcp`, { token: TOKEN });
    await startApp(client);
    const preview = await untilListening(client);
    expect(preview).toMatchObject({ listening: true, reachable: false, note: expect.stringContaining("on the server's host") });
    expect(preview.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(bodyOf((await exchange(preview.url, httpGet('/index.html'))).received)).toBe(PAGE);
    await client.terminate();
  });

  it('refuses an address other than loopback at start-up unless LOCAL_SANDBOX_PREVIEW_PUBLIC=on', async () => {
    const refused = await runServerToExit({ MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_PREVIEW_HOST: '192.0.2.10' });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr + refused.stdout).toContain('LOCAL_SANDBOX_PREVIEW_PUBLIC=on');
  });

  const address = Object.values(networkInterfaces())
    .flat()
    .find((info) => info?.family === 'IPv4' && !info.internal)?.address;
  (address === undefined ? it.skip : it)(
    'serves previews on a public address on purpose, behind a capability URL: its token buys a cookie, nothing else opens it, and it opens no other sandbox',
    async () => {
      const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_PREVIEW_HOST: address ?? '', LOCAL_SANDBOX_PREVIEW_PUBLIC: 'on' } });
      const client = await connectClient('v2', server.url, { token: TOKEN });
      await startApp(client);
      const preview = await untilListening(client);
      expect(preview).toMatchObject({ listening: true, reachable: true, note: null });
      const url = new URL(preview.url);
      expect(url.hostname).toBe(address);
      expect(url.pathname).toBe('/');
      const token = url.searchParams.get('mcp_preview') ?? '';
      expect(token).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);

      // The browser's way, redirects followed by hand: 302 to the path without the token, and a cookie …
      const first = await fetch(preview.url, { redirect: 'manual' });
      expect({ status: first.status, location: first.headers.get('location') }).toEqual({ status: 302, location: '/' });
      const [setCookie = ''] = first.headers.getSetCookie();
      expect(setCookie).toMatch(new RegExp(`^mcp_preview_${url.port}=[^;]+; Max-Age=\\d+; Path=/; HttpOnly; SameSite=Lax$`));
      expect(setCookie).not.toContain(token);
      const cookie = setCookie.split(';')[0] ?? '';
      // … which opens the app from then on.
      const page = await fetch(new URL('/index.html', url.origin), { headers: { cookie }, redirect: 'manual' });
      expect({ status: page.status, body: await page.text() }).toEqual({ status: 200, body: PAGE });

      // Without the token or the cookie: 401, saying where preview URLs come from.
      const bare = await fetch(new URL('/index.html', url.origin), { redirect: 'manual' });
      expect({ status: bare.status, body: await bare.text() }).toEqual({ status: 401, body: expect.stringContaining('get_preview_url') });
      expect((await exchange(url.origin, httpGet('/index.html'))).received.toString()).toMatch(/^HTTP\/1\.1 401 /);

      // Another sandbox's preview of the same port: its own URL opens it; this one's token and cookie do not.
      const other = await connectClient('v2', server.url, { token: TOKEN });
      await other.callTool('run_command', { command: `mkdir -p site && echo other > site/index.html && cd site && exec python3 -m http.server ${APP_PORT} --bind 127.0.0.1`, background: true });
      const theirs = new URL((await untilListening(other)).url);
      expect(theirs.origin).not.toBe(url.origin);
      const withToken = await fetch(`${theirs.origin}/?mcp_preview=${token}`, { redirect: 'manual' });
      expect(withToken.status).toBe(401);
      const withCookie = await fetch(new URL('/index.html', theirs.origin), { headers: { cookie: `mcp_preview_${theirs.port}=${cookie.split('=')[1] ?? ''}` }, redirect: 'manual' });
      expect(withCookie.status).toBe(401);
      const own = await fetch(theirs.href, { redirect: 'manual' });
      expect(own.status).toBe(302);
      const theirPage = await fetch(new URL('/index.html', theirs.origin), { headers: { cookie: own.headers.getSetCookie()[0]?.split(';')[0] ?? '' } });
      expect(await theirPage.text()).toBe('other\n');
      await other.terminate();
      await client.terminate();
    },
  );
});
