/**
 * get_preview_url on the local backend under bubblewrap, through the built bundle: "start the app, then open its
 * preview" from the test process, on the default configuration (a sandbox with its own network, the server on
 * loopback). The URL is a forwarder on the host whose connections the sandbox's supervisor carries in
 * (preview-forwarder.ts), behind its capability URL on loopback too (its token traded for a cookie, as a browser
 * does); what it must not do: open without that, outlive its sandbox, reach another sandbox, take more than its
 * connections, or trust what a supervisor taken over from inside says. And what a browser's cookie jar makes of
 * two sandboxes' previews, on one address and on a host name per sandbox.
 */
import { createHash } from 'node:crypto';
import { networkInterfaces } from 'node:os';

import { connectClient, type TestClient } from '../support/clients';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { runServerToExit, startServer, stopAllServers, type StartedServer } from '../support/server';
import {
  bodyOf,
  exchange,
  exchangeOn,
  fetchPreview,
  httpGet,
  openConnection,
  openPreview,
  type OpenedPreview,
} from '../support/tcp';
import { needs } from '../support/needs';

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

const previewOf = async (client: TestClient, port = APP_PORT): Promise<Preview> =>
  (await client.callTool('get_preview_url', { port })).structuredContent as unknown as Preview;

/** Writes the page and starts `python3 -m http.server` on APP_PORT in the background; resolves with the process id. */
async function startApp(client: TestClient): Promise<string> {
  await client.callTool('write_file', { path: 'site/index.html', content: PAGE });
  const started = await client.callTool('run_command', {
    command: `cd site && exec python3 -m http.server ${APP_PORT} --bind 127.0.0.1`,
    background: true,
  });
  return started.structuredContent?.process_id as string;
}

const untilListening = (client: TestClient, port = APP_PORT): Promise<Preview> =>
  pollUntil(
    () => previewOf(client, port),
    (p) => p.listening,
    SETTLE_MS,
    100,
  );

/** The sandbox port of HOLD_APP. */
const HOLD_PORT = 8001;
/**
 * An app that holds every connection it accepts until the request's one byte of body comes (http.server answers a
 * head at once): `POST / HTTP/1.0`, `Content-Length: 1`, then `x` whenever the test lets it go.
 */
const HOLD_APP = `import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', ${HOLD_PORT}))
s.listen(128)
def serve(c):
    data = b''
    while b'\\r\\n\\r\\n' not in data:
        more = c.recv(65536)
        if not more:
            return c.close()
        data += more
    if not data.split(b'\\r\\n\\r\\n', 1)[1]:
        c.recv(1)
    c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Length: 4\\r\\n\\r\\nheld')
    c.close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
`;
/** A request HOLD_APP holds until `x` follows it. */
const holdRequest = (preview: OpenedPreview): string =>
  `POST / HTTP/1.0\r\nHost: preview\r\n${preview.cookie}\r\nContent-Length: 1\r\n\r\n`;

/** Starts HOLD_APP in the sandbox, once it listens its preview opened. */
async function holdApp(client: TestClient): Promise<OpenedPreview> {
  await client.callTool('write_file', { path: 'hold.py', content: HOLD_APP });
  await client.callTool('run_command', { command: 'exec python3 hold.py', background: true });
  return openPreview((await untilListening(client, HOLD_PORT)).url);
}

/** The app's preview, once it listens (started if it does not yet: each test can run alone). */
async function appPreview(client: TestClient): Promise<Preview> {
  if (!(await previewOf(client)).listening) await startApp(client);
  return untilListening(client);
}

/** The sandbox port of COOKIE_APP. */
const COOKIE_PORT = 8002;
/** An app that sets `app_session=<argv 1>` on /login and says on every page which cookies it received. */
const COOKIE_APP = `import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ('cookies: ' + (self.headers.get('Cookie') or '')).encode()
        self.send_response(200)
        if self.path == '/login':
            self.send_header('Set-Cookie', 'app_session=' + sys.argv[1] + '; Path=/; HttpOnly')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(('127.0.0.1', ${COOKIE_PORT}), Handler).serve_forever()
`;

/** Starts COOKIE_APP in the sandbox as `who`; its preview URL once it listens. */
async function cookieApp(client: TestClient, who: string): Promise<string> {
  await client.callTool('write_file', { path: 'cookies.py', content: COOKIE_APP });
  await client.callTool('run_command', { command: `exec python3 cookies.py ${who}`, background: true });
  return (await untilListening(client, COOKIE_PORT)).url;
}

/**
 * A browser's cookie jar, as browsers keep one (RFC 6265): host-only cookies by host name, whatever the port. It
 * connects to the preview's port on loopback whatever the name (a browser resolves every *.localhost there; Node
 * does not), sends the jar of the URL's host, keeps what Set-Cookie gives, and follows redirects.
 */
class Browser {
  private readonly jars = new Map<string, Map<string, string>>();

  async open(url: string, path: string): Promise<{ status: number; body: string }> {
    let target = new URL(url);
    target.pathname = path;
    for (;;) {
      const jar = this.jars.get(target.hostname) ?? new Map<string, string>();
      this.jars.set(target.hostname, jar);
      const cookies = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
      const request = [
        `GET ${target.pathname}${target.search} HTTP/1.1`,
        `Host: ${target.host}`,
        ...(cookies === '' ? [] : [`Cookie: ${cookies}`]),
        'Connection: close',
        '',
        '',
      ];
      const answer = (await exchange(`http://127.0.0.1:${target.port}`, request.join('\r\n'))).received.toString(
        'latin1',
      );
      const at = answer.indexOf('\r\n\r\n');
      const head = answer.slice(0, at);
      for (const [, name = '', value = ''] of head.matchAll(/^Set-Cookie: ([^=]+)=([^;\r\n]*)/gim))
        jar.set(name, value);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      const location = /^Location: (.*)$/im.exec(head)?.[1];
      if (status !== 302 || location === undefined) return { status, body: answer.slice(at + 4) };
      target = new URL(location, target);
    }
  }
}

needs('bubblewrap').describe('the preview URL of a local sandbox with its own network', () => {
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

  it(
    'reaches the app from the test process once it runs, over more than one connection, on the URL given before it ' +
      'started',
    async () => {
      const before = await previewOf(client);
      expect(before).toMatchObject({
        port: APP_PORT,
        listening: false,
        reachable: true,
        note: expect.stringContaining('access token'),
      });
      expect(before.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?mcp_preview=[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
      expect(new URL(before.url).port).not.toBe(String(APP_PORT));
      await startApp(client);
      const after = await untilListening(client);
      expect(new URL(after.url).origin).toBe(new URL(before.url).origin);

      // The browser's way: the token for a cookie, then the app with it.
      const preview = await openPreview(before.url);
      const response = await fetchPreview(preview, '/index.html');
      expect({ status: response.status, body: await response.text() }).toEqual({ status: 200, body: PAGE });
      expect(bodyOf((await exchange(preview.origin, httpGet('/index.html', [preview.cookie]))).received)).toBe(PAGE);
      expect(await (await fetchPreview(preview, '/index.html')).text()).toBe(PAGE);
    },
  );

  it(
    'opens only with its capability on loopback too: ' + 'without the token or cookie, 401, and the app sees nothing',
    async () => {
      const { url } = await appPreview(client);
      const { origin } = new URL(url);
      const bare = await fetch(new URL('/secret-without-token', origin), { redirect: 'manual' });
      expect({ status: bare.status, body: await bare.text() }).toEqual({
        status: 401,
        body: expect.stringContaining('get_preview_url'),
      });
      expect((await exchange(origin, httpGet('/secret-raw'))).received.toString()).toMatch(/^HTTP\/1\.1 401 /);
      // A request that did get in shows in the app's log; the refused ones never do.
      const preview = await openPreview(url);
      await fetchPreview(preview, '/admitted');
      const id = (
        (await client.callTool('manage_process', { action: 'list' })).structuredContent!.processes as {
          process_id: string;
          command: string;
        }[]
      ).find((p) => p.command.includes('http.server'))?.process_id;
      const logs = await pollUntil(
        async () =>
          String(
            (
              (await client.callTool('manage_process', { action: 'logs', process_id: id })).structuredContent as {
                log: { text: string };
              }
            ).log.text,
          ),
        (text) => text.includes('GET /admitted'),
        SETTLE_MS,
      );
      expect(logs).not.toContain('/secret');
    },
  );

  it('carries a 10 MiB answer whole', async () => {
    await appPreview(client);
    const made = await client.callTool('run_command', {
      command: 'head -c 10485760 /dev/urandom > site/big.bin && sha256sum site/big.bin',
    });
    const inside = String(made.structuredContent?.stdout).split(' ')[0];
    const preview = await openPreview((await appPreview(client)).url);
    const started = process.hrtime.bigint();
    const body = Buffer.from(await (await fetchPreview(preview, '/big.bin')).arrayBuffer());
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    expect({ bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') }).toEqual({
      bytes: 10_485_760,
      sha256: inside,
    });
    console.log(
      `10 MiB from python3 -m http.server in the sandbox through the forwarder: ${ms.toFixed(0)} ms ` +
        `(${((10 / ms) * 1000).toFixed(1)} MiB/s)`,
    );
  });

  it('is out of reach of another sandbox: its own network has neither the app nor the forwarder', async () => {
    const { url } = await appPreview(client);
    const ours = await openPreview(url);
    const other = await connectClient('v2', server.url, { token: TOKEN });
    for (const port of [APP_PORT, Number(new URL(url).port)]) {
      expect(
        (await other.callTool('run_command', { command: CONNECT_FROM_INSIDE(port) })).structuredContent?.stdout,
      ).toMatch(/^failed/);
    }
    // Its own preview of the same port is a listener of its own, where nothing listens: our cookie does not open it.
    const theirs = await previewOf(other);
    expect(theirs).toMatchObject({ listening: false });
    expect(new URL(theirs.url).origin).not.toBe(ours.origin);
    const theirOrigin = new URL(theirs.url).origin;
    expect(
      (
        await exchange(
          theirOrigin,
          httpGet('/index.html', [ours.cookie.replace(/mcp_preview_\d+/, `mcp_preview_${new URL(theirs.url).port}`)]),
        )
      ).received.toString(),
    ).toMatch(/^HTTP\/1\.1 401 /);
    const theirPreview = await openPreview(theirs.url);
    expect((await exchange(theirOrigin, httpGet('/index.html', [theirPreview.cookie]))).received.toString()).toMatch(
      /^HTTP\/1\.1 502 /,
    );
    await other.terminate();
  });

  it(
    'carries 64 connections of a sandbox at once and closes the 65th at once, ' + 'then takes new ones as others end',
    async () => {
      const preview = await holdApp(client);
      // Each carried, and held by the app until its body's byte comes.
      const held = [];
      for (let i = 0; i < 64; i += 1) {
        const socket = await openConnection(preview.origin);
        socket.write(holdRequest(preview));
        held.push(socket);
      }
      const beyond = await pollUntil(
        () => exchange(preview.origin, holdRequest(preview) + 'x'),
        (answer) => answer.received.length === 0,
        SETTLE_MS,
        100,
      );
      expect(beyond.received.length).toBe(0);
      // One is let go: answered, and closed …
      expect(bodyOf((await exchangeOn(held[0]!, 'x')).received)).toBe('held');
      // … which makes room for one more.
      const next = await pollUntil(
        () => exchange(preview.origin, holdRequest(preview) + 'x'),
        (answer) => bodyOf(answer.received) === 'held',
        SETTLE_MS,
        100,
      );
      expect(bodyOf(next.received)).toBe('held');
      for (const socket of held) socket.destroy();
    },
  );

  it(
    'ignores frames for stream ids the supervisor never had, and kills a supervisor that sends an oversized frame ' +
      '(taken over from inside)',
    async () => {
      const { url } = await appPreview(client);
      const preview = await openPreview(url);
      // The command's parent is the supervisor, running as the sandbox's user: the command takes a copy of its
      // stdout (pidfd_open, pidfd_getfd: 434, 438) and writes frames there as if it were the supervisor.
      const write = async (frame: string): Promise<void> => {
        const command =
          `python3 -c "import ctypes, os, struct, sys; libc = ctypes.CDLL(None, use_errno=True); fd = ` +
          `libc.syscall(438, libc.syscall(434, int(sys.argv[1]), 0), 1, 0); assert fd >= 0, ctypes.get_errno(); ` +
          `os.write(fd, ${frame})" "$PPID"`;
        const result = (await client.callTool('run_command', { command })).structuredContent;
        expect(result).toMatchObject({ stderr: '' });
      };
      await write(`struct.pack('>IBIB', 1, 2, 999999, 0) + b'x'`);
      await write(`struct.pack('>IBIB', 0, 10, 999998, 0) + struct.pack('>IBIB', 1, 11, 999997, 0) + b'1'`);
      expect(await previewOf(client)).toMatchObject({ listening: true });
      expect(bodyOf((await exchange(preview.origin, httpGet('/index.html', [preview.cookie]))).received)).toBe(PAGE);

      const holding = await holdApp(client);
      const heldOpen = await openConnection(holding.origin);
      const heldOutcome = exchangeOn(heldOpen, holdRequest(holding));
      await write(`struct.pack('>IBIB', 2 << 20, 2, 1, 1)`);
      // Killed with everything it started: the apps, and the connection it carried.
      expect((await heldOutcome).received.length).toBe(0);
      expect(await previewOf(client)).toMatchObject({ listening: false });
      expect((await exchange(preview.origin, httpGet('/index.html', [preview.cookie]))).received.toString()).toMatch(
        /^HTTP\/1\.1 502 /,
      );
      // The next call starts a new supervisor, and the same URL (and cookie) serves the app started again.
      await startApp(client);
      expect(new URL((await untilListening(client)).url).origin).toBe(new URL(url).origin);
      expect(bodyOf((await exchange(preview.origin, httpGet('/index.html', [preview.cookie]))).received)).toBe(PAGE);
    },
  );

  it('closes the forwarder when the sandbox is reset, and when its session is deleted', async () => {
    const own = await connectClient('v2', server.url, { token: TOKEN });
    await startApp(own);
    const preview = await openPreview((await untilListening(own)).url);
    expect(bodyOf((await exchange(preview.origin, httpGet('/index.html', [preview.cookie]))).received)).toBe(PAGE);
    await own.callTool('reset_sandbox');
    expect((await exchange(preview.origin, httpGet('/index.html'))).error).toBe('ECONNREFUSED');

    await startApp(own);
    const fresh = new URL((await untilListening(own)).url);
    expect(fresh.origin).not.toBe(preview.origin);
    const held = await openConnection(fresh.origin);
    const heldOutcome = exchangeOn(held, '');
    await own.terminate();
    expect((await heldOutcome).received.length).toBe(0);
    expect((await exchange(fresh.origin, httpGet('/index.html'))).error).toBe('ECONNREFUSED');
  });
});

describe('the cookies of two sandboxes’ previews, in one browser', () => {
  afterAll(stopAllServers);

  it(
    'on one address (the default) share its jar: the app of one sees the app cookie of the other, never a preview ' +
      'cookie',
    async () => {
      const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, SANDBOX_BACKEND: 'local' } });
      const a = await connectClient('v2', server.url, { token: TOKEN });
      const b = await connectClient('v2', server.url, { token: TOKEN });
      const browser = new Browser();
      expect(await browser.open(await cookieApp(a, 'tenant-a'), '/login')).toEqual({ status: 200, body: 'cookies: ' });
      // What the issue saw: a browser sends the jar of 127.0.0.1 to every port of it. The preview cookies (A's and
      // B's) are taken out; the app's own cookie is not the front's to judge.
      expect(await browser.open(await cookieApp(b, 'tenant-b'), '/whoami')).toEqual({
        status: 200,
        body: 'cookies: app_session=tenant-a',
      });
      await a.terminate();
      await b.terminate();
    },
  );

  needs('bubblewrap').it(
    'on a host name per sandbox (LOCAL_SANDBOX_PREVIEW_DOMAIN) are apart: each app sees its own only, and a ' +
      'preview answers only to its name',
    async () => {
      const server = await startServer({
        env: { MCP_AUTH_TOKENS: TOKEN, SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_PREVIEW_DOMAIN: 'localhost' },
      });
      const a = await connectClient('v2', server.url, { token: TOKEN });
      const b = await connectClient('v2', server.url, { token: TOKEN });
      const urlA = await cookieApp(a, 'tenant-a');
      const idA = String((await a.callTool('sandbox_status')).structuredContent?.sandbox_id);
      expect(new URL(urlA).hostname).toBe(`${idA}.localhost`);
      const browser = new Browser();
      expect(await browser.open(urlA, '/login')).toEqual({ status: 200, body: 'cookies: ' });
      const urlB = await cookieApp(b, 'tenant-b');
      expect(new URL(urlB).hostname).not.toBe(new URL(urlA).hostname);
      expect(await browser.open(urlB, '/login')).toEqual({ status: 200, body: 'cookies: ' });
      expect(await browser.open(urlB, '/whoami')).toEqual({ status: 200, body: 'cookies: app_session=tenant-b' });
      expect(await browser.open(urlA, '/whoami')).toEqual({ status: 200, body: 'cookies: app_session=tenant-a' });
      // A's preview under another name (the address, B's name): refused before the token is even looked at.
      for (const host of [`127.0.0.1:${new URL(urlA).port}`, `${new URL(urlB).hostname}:${new URL(urlA).port}`]) {
        const answer = (
          await exchange(
            `http://127.0.0.1:${new URL(urlA).port}`,
            `GET /${new URL(urlA).search} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
          )
        ).received.toString();
        expect({ host, answer: answer.split('\r\n')[0] }).toEqual({ host, answer: 'HTTP/1.1 421 Misdirected Request' });
      }
      await a.terminate();
      await b.terminate();
    },
  );
});

describe('the preview address', () => {
  afterAll(stopAllServers);

  needs('bubblewrap').it(
    'on a server other hosts reach, stays on loopback and says the URL is on the server’s host',
    async () => {
      const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, SANDBOX_BACKEND: 'local', HOST: '0.0.0.0' } });
      const client = await connectClient('v2', `http://127.0.0.1:${server.port}/mcp`, { token: TOKEN });
      await startApp(client);
      const preview = await untilListening(client);
      expect(preview).toMatchObject({
        listening: true,
        reachable: false,
        note: expect.stringContaining("on the server's host"),
      });
      expect(preview.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?mcp_preview=/);
      const opened = await openPreview(preview.url);
      expect(bodyOf((await exchange(opened.origin, httpGet('/index.html', [opened.cookie]))).received)).toBe(PAGE);
      await client.terminate();
    },
  );

  it('refuses an address other than loopback at start-up unless LOCAL_SANDBOX_PREVIEW_PUBLIC=on', async () => {
    const refused = await runServerToExit({ MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_PREVIEW_HOST: '192.0.2.10' });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr + refused.stdout).toContain('LOCAL_SANDBOX_PREVIEW_PUBLIC=on');
  });

  const address = Object.values(networkInterfaces())
    .flat()
    .find((info) => info?.family === 'IPv4' && !info.internal)?.address;
  (address === undefined ? it.skip : needs('bubblewrap').it)(
    'serves previews on a public address on purpose, behind a capability URL: its token buys a cookie, nothing ' +
      'else opens it, and it opens no other sandbox',
    async () => {
      const server = await startServer({
        env: {
          MCP_AUTH_TOKENS: TOKEN,
          SANDBOX_BACKEND: 'local',
          LOCAL_SANDBOX_PREVIEW_HOST: address ?? '',
          LOCAL_SANDBOX_PREVIEW_PUBLIC: 'on',
        },
      });
      const client = await connectClient('v2', server.url, { token: TOKEN });
      await startApp(client);
      const preview = await untilListening(client);
      expect(preview).toMatchObject({
        listening: true,
        reachable: true,
        note: expect.stringContaining('access token'),
      });
      const url = new URL(preview.url);
      expect(url.hostname).toBe(address);
      expect(url.pathname).toBe('/');
      const token = url.searchParams.get('mcp_preview') ?? '';
      expect(token).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);

      // The browser's way, redirects followed by hand: 302 to the path without the token, and a cookie …
      const first = await fetch(preview.url, { redirect: 'manual' });
      expect({ status: first.status, location: first.headers.get('location') }).toEqual({ status: 302, location: '/' });
      const [setCookie = ''] = first.headers.getSetCookie();
      expect(setCookie).toMatch(
        new RegExp(`^mcp_preview_${url.port}=[^;]+; Max-Age=\\d+; Path=/; HttpOnly; SameSite=Lax$`),
      );
      expect(setCookie).not.toContain(token);
      const cookie = setCookie.split(';')[0] ?? '';
      // … which opens the app from then on.
      const page = await fetch(new URL('/index.html', url.origin), { headers: { cookie }, redirect: 'manual' });
      expect({ status: page.status, body: await page.text() }).toEqual({ status: 200, body: PAGE });

      // Without the token or the cookie: 401, saying where preview URLs come from.
      const bare = await fetch(new URL('/index.html', url.origin), { redirect: 'manual' });
      expect({ status: bare.status, body: await bare.text() }).toEqual({
        status: 401,
        body: expect.stringContaining('get_preview_url'),
      });
      expect((await exchange(url.origin, httpGet('/index.html'))).received.toString()).toMatch(/^HTTP\/1\.1 401 /);

      // Another sandbox's preview of the same port: its own URL opens it; this one's token and cookie do not.
      const other = await connectClient('v2', server.url, { token: TOKEN });
      await other.callTool('run_command', {
        command:
          `mkdir -p site && echo other > site/index.html && cd site && exec python3 -m http.server ${APP_PORT} ` +
          `--bind 127.0.0.1`,
        background: true,
      });
      const theirs = new URL((await untilListening(other)).url);
      expect(theirs.origin).not.toBe(url.origin);
      const withToken = await fetch(`${theirs.origin}/?mcp_preview=${token}`, { redirect: 'manual' });
      expect(withToken.status).toBe(401);
      const withCookie = await fetch(new URL('/index.html', theirs.origin), {
        headers: { cookie: `mcp_preview_${theirs.port}=${cookie.split('=')[1] ?? ''}` },
        redirect: 'manual',
      });
      expect(withCookie.status).toBe(401);
      const own = await fetch(theirs.href, { redirect: 'manual' });
      expect(own.status).toBe(302);
      const theirPage = await fetch(new URL('/index.html', theirs.origin), {
        headers: { cookie: own.headers.getSetCookie()[0]?.split(';')[0] ?? '' },
      });
      expect(await theirPage.text()).toBe('other\n');
      await other.terminate();
      await client.terminate();
    },
  );
});
