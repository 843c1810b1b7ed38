/**
 * The local E2B service's model of E2B's sandbox network settings (test/support/e2b-local/network-config.ts and
 * sandbox-network.ts), through the real `e2b` SDK: `Sandbox.create` with `network` and `allowInternetAccess`,
 * `updateNetwork`, `getInfo`, and curl, Python and raw sockets inside the sandboxes. What the settings allow is
 * reached through the service's egress proxy (the server's own); everything else is refused by it with a 403
 * before any byte leaves, or has no route at all. A transform rule's header reaches its host over HTTP and HTTPS
 * (the proxy ending the sandbox's TLS with the sandbox's own authority, made anew when an update adds rule hosts
 * and when a resume boots the sandbox afresh) and no other host. Large transfers pass both ways through the
 * connection windows, and a sandbox holds at most 64 egress connections. Destinations live on
 * loopback addresses of their own (each named by an IP entry: the model keeps internal addresses closed unless
 * one does), with a real DNS server the proxy is pointed at and HTTPS certificates from a test CA the service
 * trusts (`upstreamCa`).
 */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { ALL_TRAFFIC, CommandExitError, Sandbox, type SandboxOpts } from 'e2b';

import { type DnsServer, startDnsServer } from '../support/dns-server';
import { type LocalE2B, startLocalE2B } from '../support/e2b-local';
import { type HttpHost, httpsWith, makeCertificates, startEchoHost, startHttpHost } from '../support/egress-hosts';
import { needs } from '../support/needs';

const API_KEY = 'sk-model-Jc7uW2nQ5vX8zA1b';
const BEARER = 'Bearer tok-model-Rt6yP3kL9mN0qS4d';
const WILD = 'wild-model-Hd2fG5hJ8kL1zX3c';
/** Served by the big host: more than the windows of the agent's frames and the proxy's stream hold at once. */
const BIG = Buffer.alloc(12 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz');

interface Run {
  exitCode: number;
  stdout: string;
  stderr: string;
}

needs('bubblewrap', 'network clients').describe('the local E2B service models E2B network settings', () => {
  let e2b: LocalE2B;
  let dns: DnsServer;
  let certDir: string;
  /** 127.0.0.2 (allowed.test, plain.test) */
  let allowed: HttpHost;
  /** 127.0.0.3 (other.test), on the same port */
  let other: HttpHost;
  /** 127.0.0.4: HTTPS (secure.test, api.wild.test, unruled.test) */
  let secure: HttpHost;
  /** 127.0.0.5: serves BIG at /big */
  let big: HttpHost;
  /** 127.0.0.6: raw TCP, echoes upper-cased */
  let echo: { port: number; close(): Promise<void> };
  let opts: Pick<SandboxOpts, 'apiKey' | 'apiUrl' | 'sandboxUrl'>;
  const sandboxes: Sandbox[] = [];

  const create = async (more: Partial<SandboxOpts> = {}): Promise<Sandbox> => {
    const sandbox = await Sandbox.create('base', { ...opts, ...more });
    sandboxes.push(sandbox);
    return sandbox;
  };
  const run = async (sandbox: Sandbox, command: string): Promise<Run> => {
    try {
      const { exitCode, stdout, stderr } = await sandbox.commands.run(command, { timeoutMs: 20_000 });
      return { exitCode, stdout, stderr };
    } catch (err) {
      if (!(err instanceof CommandExitError)) throw err;
      return { exitCode: err.exitCode, stdout: err.stdout, stderr: err.stderr };
    }
  };
  /** curl's status line for `url`: the HTTP status, or 000 and curl's exit code when there was none. */
  const status = async (sandbox: Sandbox, url: string, flags = ''): Promise<string> => {
    const out = await run(sandbox, `curl -sS -o /dev/null -w '%{http_code}' ${flags} ${url}`);
    return out.exitCode === 0 ? out.stdout : `${out.stdout} exit ${out.exitCode}: ${out.stderr.trim()}`;
  };
  const body = async (sandbox: Sandbox, url: string): Promise<string> => {
    const out = await run(sandbox, `curl -sS ${url}`);
    expect(out).toMatchObject({ exitCode: 0, stderr: '' });
    return out.stdout;
  };

  beforeAll(async () => {
    certDir = makeCertificates(['secure.test', 'api.wild.test', 'unruled.test']);
    const https = httpsWith(certDir);
    allowed = await startHttpHost('127.0.0.2');
    other = await startHttpHost('127.0.0.3', allowed.port);
    secure = await startHttpHost('127.0.0.4', 0, {}, https);
    big = await startHttpHost('127.0.0.5', 0, { '/big': BIG });
    echo = await startEchoHost('127.0.0.6');
    dns = await startDnsServer({
      'allowed.test': { a: ['127.0.0.2'] },
      'plain.test': { a: ['127.0.0.2'] },
      'other.test': { a: ['127.0.0.3'] },
      'secure.test': { a: ['127.0.0.4'] },
      'api.wild.test': { a: ['127.0.0.4'] },
      'unruled.test': { a: ['127.0.0.4'] },
    });
    e2b = await startLocalE2B({
      resolver: [dns.address],
      upstreamCa: [readFileSync(join(certDir, 'ca.crt'), 'utf8')],
    });
    opts = { apiKey: e2b.apiKey, apiUrl: e2b.url, sandboxUrl: e2b.url };
  });
  afterAll(async () => {
    await e2b?.stop();
    for (const host of [allowed, other, secure, big, echo]) await host?.close();
    await dns?.close();
    if (certDir !== undefined) rmSync(certDir, { recursive: true, force: true });
  });

  it('allowlist by domain: the allowed host is reached (curl, Python), another is refused, never reached', async () => {
    const sandbox = await create({
      network: { denyOut: [ALL_TRAFFIC], allowOut: ['allowed.test', '127.0.0.2'] },
    });
    const env = await run(sandbox, 'env | grep -i _proxy= | sort');
    expect(env.stdout).toContain('HTTPS_PROXY=http://127.0.0.1:3128');
    expect(env.stdout).toContain('no_proxy=localhost,127.0.0.1,::1');

    const p = allowed.port;
    expect(JSON.parse(await body(sandbox, `http://allowed.test:${p}/hello`))).toMatchObject({
      host: '127.0.0.2',
      url: '/hello',
    });
    const python = await run(
      sandbox,
      `python3 -c "import urllib.request as u; print(u.urlopen('http://allowed.test:${p}/py').read().decode())"`,
    );
    expect(JSON.parse(python.stdout)).toMatchObject({ url: '/py' });

    const before = other.connections;
    const refused = await run(sandbox, `curl -sS -i http://other.test:${p}/`);
    expect(refused.stdout).toMatch(/^HTTP\/1\.1 403 /);
    expect(refused.stdout).toContain('X-Sandbox-Egress: refused');
    expect(refused.stdout).toContain(`other.test:${p} is not in the allow list`);
    expect(await status(sandbox, `http://127.0.0.3:${p}/`)).toBe('403');
    expect(await status(sandbox, `https://other.test:${p}/`)).toMatch(/CONNECT tunnel failed, response 403/);
    expect(other.connections).toBe(before);

    const created = e2b.requests().find((r) => r.route === 'create' && r.body !== undefined);
    expect(created?.body).toMatchObject({
      allow_internet_access: true,
      network: { denyOut: [ALL_TRAFFIC], allowOut: ['allowed.test', '127.0.0.2'] },
    });
  });

  it('allowInternetAccess: false reaches nothing, and getInfo says so', async () => {
    const sandbox = await create({ allowInternetAccess: false });
    const seen = allowed.seen.length;
    expect(await status(sandbox, `http://allowed.test:${allowed.port}/`)).toBe('403');
    expect(await status(sandbox, `http://127.0.0.2:${allowed.port}/`)).toBe('403');
    expect(allowed.seen.length).toBe(seen);
    const info = await Sandbox.getInfo(sandbox.sandboxId, opts);
    expect(info.allowInternetAccess).toBe(false);
    expect(info.network).toBeUndefined();
  });

  it('denies a CIDR under all, where an allowed address still wins', async () => {
    const sandbox = await create({
      network: { denyOut: ['127.0.0.0/8', '8.8.8.0/24'], allowOut: ['127.0.0.2'] },
    });
    const p = allowed.port;
    expect(JSON.parse(await body(sandbox, `http://127.0.0.2:${p}/wins`))).toMatchObject({ url: '/wins' });
    const before = other.connections;
    const denied = await run(sandbox, `curl -sS http://127.0.0.3:${p}/`);
    expect(denied.stdout).toMatch(/127\.0\.0\.3 is denied \(deny entry 127\.0\.0\.\d+(\/\d+)?\)/);
    expect(await run(sandbox, 'curl -sS http://8.8.8.8/')).toMatchObject({
      stdout: expect.stringContaining('8.8.8.8 is denied (deny entry 8.8.8.0/24)'),
    });
    expect(other.connections).toBe(before);
  });

  it('updateNetwork changes what the next connections reach; getInfo and the request log show it', async () => {
    const sandbox = await create({
      network: { denyOut: [ALL_TRAFFIC], allowOut: ['allowed.test', '127.0.0.2'] },
    });
    const p = allowed.port;
    expect(await status(sandbox, `http://allowed.test:${p}/`)).toBe('200');
    expect(await status(sandbox, `http://other.test:${p}/`)).toBe('403');

    await sandbox.updateNetwork({ denyOut: [ALL_TRAFFIC], allowOut: ['other.test', '127.0.0.3'] });
    expect(await status(sandbox, `http://other.test:${p}/`)).toBe('200');
    expect(await status(sandbox, `http://allowed.test:${p}/`)).toBe('403');
    const info = await sandbox.getInfo();
    expect(info.network).toMatchObject({ denyOut: [ALL_TRAFFIC], allowOut: ['other.test', '127.0.0.3'] });
    const put = e2b.requests().filter((r) => r.route === 'network' && r.sandboxId === sandbox.sandboxId);
    expect(put.map((r) => [r.method, r.body])).toEqual([
      ['PUT', { denyOut: [ALL_TRAFFIC], allowOut: ['other.test', '127.0.0.3'] }],
    ]);

    // Omitting a field clears it: everything is open again, the host's loopback addresses aside.
    await sandbox.updateNetwork({});
    expect(await run(sandbox, `curl -sS http://127.0.0.3:${p}/`)).toMatchObject({
      stdout: expect.stringContaining('private, loopback, link-local or metadata address'),
    });
    expect((await sandbox.getInfo()).network).toEqual({ rules: undefined });
  });

  it('adds a transform rule’s headers for its host over HTTP and HTTPS, and for no other host', async () => {
    const sandbox = await create({
      network: {
        denyOut: [ALL_TRAFFIC],
        allowOut: [
          'plain.test',
          'other.test',
          'secure.test',
          'unruled.test',
          '*.wild.test',
          '127.0.0.2',
          '127.0.0.3',
          '127.0.0.4',
        ],
        rules: {
          'plain.test': [{ transform: { headers: { 'X-Api-Key': API_KEY } } }],
          'Secure.TEST': [{ transform: { headers: { Authorization: BEARER } } }],
          '*.wild.test': [{ transform: { headers: { 'X-Wild': WILD } } }],
        },
      },
    });
    const p = allowed.port;
    const s = secure.port;
    await sandbox.files.write('/home/user/ca.crt', readFileSync(join(certDir, 'ca.crt'), 'utf8'));

    await body(sandbox, `http://plain.test:${p}/plain`);
    expect(allowed.seen.at(-1)).toMatchObject({ url: '/plain', headers: { 'x-api-key': API_KEY } });
    await body(sandbox, `https://secure.test:${s}/tls`);
    expect(secure.seen.at(-1)).toMatchObject({ url: '/tls', headers: { authorization: BEARER } });
    await body(sandbox, `https://api.wild.test:${s}/wild`);
    expect(secure.seen.at(-1)).toMatchObject({ url: '/wild', headers: { 'x-wild': WILD } });
    const python = await run(
      sandbox,
      `python3 -c "import urllib.request; print(urllib.request.urlopen('https://secure.test:${s}/py').status)"`,
    );
    expect(python).toMatchObject({ exitCode: 0, stdout: '200\n' });
    expect(secure.seen.at(-1)).toMatchObject({ url: '/py', headers: { authorization: BEARER } });

    // Another host, plain and TLS (not ended by the proxy: checked with the test CA inside).
    await body(sandbox, `http://other.test:${p}/none`);
    await body(sandbox, `--cacert ca.crt https://unruled.test:${s}/none`);
    const unruled = [other.seen.at(-1), secure.seen.at(-1)];
    expect(unruled.map((r) => r?.url)).toEqual(['/none', '/none']);
    for (const seen of unruled) {
      expect(JSON.stringify(seen?.headers)).not.toMatch(new RegExp(`${API_KEY}|${BEARER}|${WILD}`));
    }
    // The sandbox holds none of the values.
    const inside = await run(sandbox, 'env; cat /etc/ssl/certs/ca-certificates.crt');
    expect(inside.stdout).not.toMatch(new RegExp(`${API_KEY}|${BEARER}|${WILD}`));

    const info = await sandbox.getInfo();
    expect(Object.keys(info.network?.rules ?? {}).sort()).toEqual(['*.wild.test', 'plain.test', 'secure.test']);
  });

  it('makes a new authority when an update adds rule hosts, and when a resume boots the sandbox afresh', async () => {
    const allow = ['secure.test', 'api.wild.test', '127.0.0.4'];
    const sandbox = await create({
      network: {
        denyOut: [ALL_TRAFFIC],
        allowOut: allow,
        rules: { 'secure.test': [{ transform: { headers: { Authorization: BEARER } } }] },
      },
    });
    const s = secure.port;
    const bundle = async () => (await run(sandbox, 'cat /etc/ssl/certs/ca-certificates.crt')).stdout;
    const first = await bundle();
    await body(sandbox, `https://secure.test:${s}/first`);
    expect(secure.seen.at(-1)).toMatchObject({ url: '/first', headers: { authorization: BEARER } });

    // A rule for another host: the authority is made anew (its names are fixed), the bundle rewritten in place.
    await sandbox.updateNetwork({
      denyOut: [ALL_TRAFFIC],
      allowOut: allow,
      rules: {
        'secure.test': [{ transform: { headers: { Authorization: BEARER } } }],
        'api.wild.test': [{ transform: { headers: { 'X-Wild': WILD } } }],
      },
    });
    const second = await bundle();
    expect(second).not.toBe(first);
    await body(sandbox, `https://api.wild.test:${s}/second`);
    expect(secure.seen.at(-1)).toMatchObject({ url: '/second', headers: { 'x-wild': WILD } });

    // Paused with its files only, it boots afresh on resume: another authority, and the rules still apply.
    expect(await sandbox.pause({ keepMemory: false })).toBe(true);
    const resumed = await Sandbox.connect(sandbox.sandboxId, opts);
    expect((await run(resumed, 'cat /etc/ssl/certs/ca-certificates.crt')).stdout).not.toBe(second);
    await body(resumed, `https://secure.test:${s}/resumed`);
    expect(secure.seen.at(-1)).toMatchObject({ url: '/resumed', headers: { authorization: BEARER } });
  });

  it('carries large transfers both ways through the windows', async () => {
    const sandbox = await create({ network: { denyOut: [ALL_TRAFFIC], allowOut: ['127.0.0.5', '127.0.0.6'] } });
    const down = await run(sandbox, `curl -sS http://127.0.0.5:${big.port}/big | sha256sum`);
    expect(down.stdout.split(' ')[0]).toBe(createHash('sha256').update(BIG).digest('hex'));
    // Through CONNECT to the echo host: 12 MiB out while the upper-cased echo comes back, read slowly at first.
    const both = await run(
      sandbox,
      `python3 -c "
import socket, threading, time
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'CONNECT 127.0.0.6:${echo.port} HTTP/1.1\\r\\n\\r\\n')
head = b''
while not head.endswith(b'\\r\\n\\r\\n'):
    head += s.recv(1)
total = 12 * 1024 * 1024
def send():
    for _ in range(total // 65536):
        s.sendall(b'a' * 65536)
threading.Thread(target=send, daemon=True).start()
time.sleep(0.5)
got = 0
while got < total:
    chunk = s.recv(1 << 20)
    if not chunk:
        break
    assert chunk == b'A' * len(chunk)
    got += len(chunk)
print(head.split(b' ')[1].decode(), got)
"`,
    );
    expect(both).toMatchObject({ exitCode: 0, stdout: `200 ${12 * 1024 * 1024}\n` });
  });

  it('keeps at most 64 egress connections open per sandbox', async () => {
    const sandbox = await create({ network: { denyOut: [ALL_TRAFFIC] } });
    // 70 connections that send nothing: the proxy waits for their request heads; those past 64 are closed at once.
    const out = await run(
      sandbox,
      `python3 -c "
import select, socket, time
held = [socket.create_connection(('127.0.0.1', 3128)) for _ in range(70)]
time.sleep(1)
readable, _, _ = select.select(held, [], [], 0)
print(sum(1 for s in readable if s.recv(1) == b''))
"`,
    );
    expect(out.stdout.trim()).toBe('6');
  });

  it('has no way out for a socket that skips the proxy', async () => {
    const sandbox = await create({ network: { allowOut: ['127.0.0.2'] } });
    const p = allowed.port;
    const before = allowed.connections;
    expect(await status(sandbox, `http://127.0.0.2:${p}/`)).toBe('200');
    expect(await status(sandbox, `http://127.0.0.2:${p}/`, "--noproxy '*'")).toMatch(/^000 exit 7/);
    // Straight to the host's address, and to an address out of the host: nothing listens, no route.
    const python = await run(
      sandbox,
      `python3 -c "
import socket
for target in [('127.0.0.2', ${p}), ('8.8.8.8', 53)]:
    try:
        socket.create_connection(target, timeout=3)
        print('connected')
    except OSError as err:
        print(type(err).__name__, err.errno)
"`,
    );
    expect(python.stdout.trim().split('\n')).toEqual(['ConnectionRefusedError 111', 'OSError 101']);
    expect(allowed.connections).toBe(before + 1);
  });

  it('refuses settings E2B refuses, with the reason', async () => {
    await expect(create({ network: { denyOut: ['example.com'] } })).rejects.toThrow(
      /domain names are not supported for deny rules/,
    );
    await expect(create({ network: { allowOut: ['example.com'] } })).rejects.toThrow(/ALL_TRAFFIC/);
    await expect(
      create({ network: { denyOut: [ALL_TRAFFIC], rules: { '*': [{ transform: { headers: { A: 'b' } } }] } } }),
    ).rejects.toThrow(/rule domain "\*"/);
    await expect(create({ network: { egressProxy: { address: 'proxy.example:1080' } } })).rejects.toThrow(
      /not supported/,
    );
    expect(e2b.sandboxes().length).toBe(sandboxes.length);
  });
});
