/**
 * A local sandbox's egress under MCP_SANDBOX_EGRESS=allowlist, through the built bundle and the official client:
 * what the policy allows works from inside (HTTP, HTTPS and raw TCP through the proxy, a pip download from a
 * loopback index), and everything else is refused by the proxy with the rule, before any byte leaves: a host not
 * allowed, the IP literal of a host, names that resolve to the server's own loopback address or to the metadata
 * address (in IPv4 and IPv6 forms), a name that answers differently each time (rebinding), a port not allowed,
 * and a socket that skips the proxy. Destinations live on loopback addresses of their own, with a real DNS server
 * the proxy is pointed at (MCP_SANDBOX_RESOLVER).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, type TestClient } from '../support/clients';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { type HttpHost, makeCertificates, startEchoHost, startHttpHost } from '../support/egress-hosts';
import { needs } from '../support/needs';
import { type StartedServer, startServer, stopAllServers } from '../support/server';

const TOKEN = 'e2e-egress-token-0123456789abcdef';

interface CommandOutput {
  exit_code: number | null;
  stdout: string;
  stderr: string;
}

needs('bubblewrap', 'network clients').describe('sandbox egress through the proxy (allowlist)', () => {
  let server: StartedServer;
  let client: TestClient;
  let dns: DnsServer;
  let allowed: HttpHost;
  let otherPort: HttpHost;
  let denied: HttpHost;
  let canary: HttpHost;
  let secure: HttpHost;
  let registry: HttpHost;
  let echo: { port: number; close(): Promise<void> };
  let certDir: string;
  const closers: Array<() => Promise<void>> = [];

  const run = async (command: string): Promise<CommandOutput> =>
    (await client.callTool('run_command', { command, timeout_ms: 60_000 }))
      .structuredContent as unknown as CommandOutput;

  beforeAll(async () => {
    allowed = await startHttpHost('127.0.0.2');
    otherPort = await startHttpHost('127.0.0.2');
    // The same port on other addresses: a refused request must reach none of them.
    denied = await startHttpHost('127.0.0.3', allowed.port);
    canary = await startHttpHost('127.0.0.1', allowed.port);
    echo = await startEchoHost('127.0.0.4');
    certDir = makeCertificates(['secure.test']);
    secure = await startHttpHost('127.0.0.5', 0, {}, (s) => {
      const tls = createHttpsServer({
        key: readFileSync(join(certDir, 'host.key')),
        cert: readFileSync(join(certDir, 'host.crt')),
      });
      for (const listener of s.listeners('request')) tls.on('request', listener as () => void);
      return tls as unknown as typeof s;
    });
    registry = await startHttpHost('127.0.0.6', 0, pypiIndex());
    dns = await startDnsServer({
      'allowed.test': { a: ['127.0.0.2'] },
      'denied.test': { a: ['127.0.0.3'] },
      'elsewhere.test': { a: ['127.0.0.3'] },
      'loopback.test': { a: ['127.0.0.1'] },
      'metadata.test': { a: ['169.254.169.254'] },
      'mapped.test': { aaaa: ['::ffff:7f00:1'] },
      // Each A query of it answers in turn the allowed host's address and the server's own loopback.
      'rebind.test': (query) => ({ a: [query % 2 === 0 ? '127.0.0.2' : '127.0.0.1'] }),
      'tcp.test': { a: ['127.0.0.4'] },
      'secure.test': { a: ['127.0.0.5'] },
      'registry.test': { a: ['127.0.0.6'] },
    });
    closers.push(
      () => dns.close(),
      ...[allowed, otherPort, denied, canary, secure, registry, echo].map((h) => () => h.close()),
    );
    const p = allowed.port;
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        SANDBOX_BACKEND: 'local',
        MCP_SANDBOX_EGRESS: 'allowlist',
        MCP_SANDBOX_ALLOW: [
          `allowed.test:${p}`,
          `127.0.0.2:${p}`,
          'rebind.test',
          // Allowed names that lead to addresses no entry names: the addresses still stay closed.
          'loopback.test',
          'metadata.test',
          'mapped.test',
          `tcp.test:${echo.port}`,
          `127.0.0.4:${echo.port}`,
          'secure.test',
          `127.0.0.5:${secure.port}`,
          'registry.test',
          `127.0.0.6:${registry.port}`,
        ].join(','),
        MCP_SANDBOX_DENY: 'denied.test',
        MCP_SANDBOX_RESOLVER: dns.address,
      },
    });
    client = await connectClient('v2', server.url, { token: TOKEN });
    await client.callTool('write_file', { path: 'ca.crt', content: readFileSync(join(certDir, 'ca.crt'), 'utf8') });
  });
  afterAll(async () => {
    await client?.close();
    await stopAllServers();
    for (const close of closers) await close();
    rmSync(certDir, { recursive: true, force: true });
  });

  it('points every usual client at the proxy, and sandbox_status shows the policy', async () => {
    const env = await run('env | grep -i _proxy= | sort');
    expect(env.stdout).toContain('HTTPS_PROXY=http://127.0.0.1:3128');
    expect(env.stdout).toContain('https_proxy=http://127.0.0.1:3128');
    expect(env.stdout).toContain('ALL_PROXY=http://127.0.0.1:3128');
    const status = (await client.callTool('sandbox_status')).structuredContent as Record<string, unknown>;
    expect(status.network).toBe('proxied');
    expect(status.egress).toEqual({
      mode: 'allowlist',
      allow: expect.arrayContaining([`allowed.test:${allowed.port}`, 'rebind.test']),
      deny: ['denied.test'],
      enforced_by: 'the server (an HTTP proxy outside the sandbox)',
      secrets: [],
    });
  });

  it('reaches an allowed host over HTTP, HTTPS and raw TCP, and installs a package from an allowed index', async () => {
    const http = await run(`curl -sS http://allowed.test:${allowed.port}/hello?x=1`);
    expect(JSON.parse(http.stdout)).toMatchObject({ host: '127.0.0.2', url: '/hello?x=1' });
    const https = await run(`curl -sS --cacert ca.crt https://secure.test:${secure.port}/tls`);
    expect(https.stderr).toBe('');
    expect(JSON.parse(https.stdout)).toMatchObject({ host: '127.0.0.5', url: '/tls' });
    const tcp = await run(`python3 - <<'EOF'
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT tcp.test:${echo.port} HTTP/1.1\\r\\nHost: tcp.test\\r\\n\\r\\n")
head = b""
while not head.endswith(b"\\r\\n\\r\\n"):
    head += s.recv(1)
print(head.split(b"\\r\\n")[0].decode())
s.sendall(b"plain tcp\\n")
print(s.recv(100).decode().strip())
EOF`);
    expect(tcp.stdout.trim().split('\n')).toEqual(['HTTP/1.1 200 Connection established', 'PLAIN TCP']);
    const pip = await run(
      `python3 -m pip download --no-deps --disable-pip-version-check -d wheels --index-url ` +
        `http://registry.test:${registry.port}/simple/ --trusted-host registry.test demo-pkg && ls wheels`,
    );
    expect(pip.stdout).toContain('demo_pkg-1.0-py3-none-any.whl');
  });

  it.each([
    ['a host not in the list', 'http://elsewhere.test:PORT/', 'not in the allow list'],
    ['a denied host', 'http://denied.test:PORT/', 'deny entry denied.test'],
    ['the IP literal of a host', 'http://127.0.0.3:PORT/', 'not in the allow list'],
    ['a name that resolves to the server loopback', 'http://loopback.test:PORT/', '127.0.0.1 is a private'],
    ['a name that resolves to the metadata address', 'http://metadata.test:PORT/', '169.254.169.254 is a private'],
    ['the metadata address itself', 'http://169.254.169.254/latest/meta-data/', '169.254.169.254:80 is not in'],
    ["Alibaba Cloud's metadata address", 'http://100.100.100.200/latest/', '100.100.100.200:80 is not in'],
    ['an IPv6-mapped form', 'http://[::ffff:127.0.0.3]:PORT/', 'is not in the allow list'],
    ['a name with an IPv6-mapped answer', 'http://mapped.test:PORT/', 'is a private'],
  ])('refuses %s with a 403 that names the rule, and nothing reaches it', async (_what, url, rule) => {
    const before = [denied.connections, canary.connections];
    const out = await run(`curl -sS -w '\\n%{http_code}' '${url.replace('PORT', String(allowed.port))}'`);
    const [body, code] = [out.stdout.slice(0, out.stdout.lastIndexOf('\n')), out.stdout.slice(-3)];
    expect(code).toBe('403');
    expect(body).toContain("Refused by the sandbox's egress policy");
    expect(body).toContain(rule);
    expect([denied.connections, canary.connections]).toEqual(before);
  });

  it('refuses a CONNECT tunnel the policy does not allow', async () => {
    const out = await run(`curl -sS --cacert ca.crt https://denied.test:${allowed.port}/ ; echo "exit $?"`);
    expect(out.stderr).toMatch(/403/);
    expect(out.stdout).toContain('exit 56');
    expect(denied.connections).toBe(0);
  });

  it('judges every lookup of a rebinding name, and never dials the address it turns to', async () => {
    const codes: string[] = [];
    for (let i = 0; i < 4; i++) {
      const out = await run(`curl -sS -o /dev/null -w '%{http_code}' http://rebind.test:${allowed.port}/`);
      codes.push(out.stdout);
    }
    expect(codes).toEqual(['200', '403', '200', '403']);
    expect(canary.connections).toBe(0);
  });

  it('refuses a port the list does not allow', async () => {
    const out = await run(`curl -sS -w '\\n%{http_code}' http://allowed.test:${otherPort.port}/`);
    expect(out.stdout.slice(-3)).toBe('403');
    expect(otherPort.connections).toBe(0);
  });

  it('has no route out for a socket that skips the proxy', async () => {
    const out = await run(`python3 - <<'EOF'
import socket
for address in [("127.0.0.2", ${allowed.port}), ("1.1.1.1", 80), ("169.254.169.254", 80)]:
    try:
        socket.create_connection(address, timeout=3)
        print("connected")
    except OSError as e:
        print(type(e).__name__)
EOF`);
    expect(out.stdout).not.toContain('connected');
    expect(out.stdout.trim().split('\n')).toEqual([
      'ConnectionRefusedError',
      expect.stringMatching(/OSError|TimeoutError/),
      expect.stringMatching(/OSError|TimeoutError/),
    ]);
    const lookup = await run(`python3 -c 'import socket; socket.getaddrinfo("allowed.test", 80)' 2>&1 | tail -1`);
    expect(lookup.stdout).toMatch(/gaierror/);
    expect(allowed.seen.filter((r) => r.url === '/direct')).toEqual([]);
  });

  it('logs each refusal with the sandbox, the principal and the destination, and nothing of the request', () => {
    const refusals = server.logs().filter((line) => line.msg === 'sandbox egress refused');
    expect(refusals.length).toBeGreaterThan(5);
    for (const line of refusals) {
      expect(line).toMatchObject({ sandbox: expect.any(String), principal: expect.any(String) });
      expect(String(line.destination)).toMatch(/^[^/?]+:\d+$/);
      expect(JSON.stringify(line)).not.toContain(TOKEN);
    }
    expect(refusals.map((line) => line.destination)).toContain(`denied.test:${allowed.port}`);
  });
});

needs('bubblewrap', 'network clients').describe('sandbox egress with all, and a narrower policy per credential', () => {
  const NARROW_TOKEN = 'e2e-egress-narrow-token-0123456789ab';
  let server: StartedServer;
  let wide: TestClient;
  let narrow: TestClient;
  let dns: DnsServer;
  let host: HttpHost;
  let denied: HttpHost;
  let policyDir: string;

  const codeOf = async (client: TestClient, url: string): Promise<string> => {
    const out = (await client.callTool('run_command', { command: `curl -sS -w '\\n%{http_code}' '${url}'` }))
      .structuredContent as unknown as CommandOutput;
    return `${out.stdout.slice(-3)} ${out.stdout.slice(0, -4).trim()}`;
  };

  beforeAll(async () => {
    host = await startHttpHost('127.0.0.2');
    denied = await startHttpHost('127.0.0.3', host.port);
    dns = await startDnsServer({
      'allowed.test': { a: ['127.0.0.2'] },
      'other.test': { a: ['127.0.0.2'] },
      'denied.test': { a: ['127.0.0.3'] },
    });
    policyDir = mkdtempSync(join(tmpdir(), 'egress-policy-'));
    const policyFile = join(policyDir, 'policy.json');
    // The narrower credential may reach allowed.test only, and asks in vain for the metadata address.
    writeFileSync(
      policyFile,
      JSON.stringify([{ tokens: [NARROW_TOKEN], allow: ['allowed.test', '127.0.0.2', '169.254.169.254'] }]),
      { mode: 0o600 },
    );
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: `${TOKEN},${NARROW_TOKEN}`,
        SANDBOX_BACKEND: 'local',
        MCP_SANDBOX_EGRESS: 'all',
        MCP_SANDBOX_ALLOW: '127.0.0.2',
        MCP_SANDBOX_DENY: 'denied.test',
        MCP_SANDBOX_POLICY_FILE: policyFile,
        MCP_SANDBOX_RESOLVER: dns.address,
      },
    });
    wide = await connectClient('v2', server.url, { token: TOKEN });
    narrow = await connectClient('v2', server.url, { token: NARROW_TOKEN });
  });
  afterAll(async () => {
    await wide?.close();
    await narrow?.close();
    await stopAllServers();
    await Promise.all([dns.close(), host.close(), denied.close()]);
    rmSync(policyDir, { recursive: true, force: true });
  });

  it('reaches any public or named address, and keeps special addresses and denied names closed', async () => {
    const port = host.port;
    expect(await codeOf(wide, `http://other.test:${port}/`)).toMatch(/^200 /);
    expect(await codeOf(wide, `http://127.0.0.2:${port}/`)).toMatch(/^200 /);
    expect(await codeOf(wide, `http://denied.test:${port}/`)).toMatch(/^403 .*deny entry denied\.test/);
    expect(await codeOf(wide, `http://127.0.0.3:${port}/`)).toMatch(/^403 .*127\.0\.0\.3 is a private/);
    expect(await codeOf(wide, `http://[::ffff:127.0.0.3]:${port}/`)).toMatch(/^403 .*is a private/);
    expect(await codeOf(wide, 'http://169.254.169.254/')).toMatch(/^403 .*169\.254\.169\.254 is a private/);
    expect(await codeOf(wide, 'http://100.100.100.200/')).toMatch(/^403 .*100\.100\.100\.200 is a private/);
    expect(denied.connections).toBe(0);
  });

  it("holds a credential to its narrower policy, which cannot open what the operator's keeps closed", async () => {
    const port = host.port;
    expect(await codeOf(narrow, `http://allowed.test:${port}/`)).toMatch(/^200 /);
    expect(await codeOf(narrow, `http://127.0.0.2:${port}/`)).toMatch(/^200 /);
    expect(await codeOf(narrow, `http://other.test:${port}/`)).toMatch(
      /^403 .*other\.test:\d+ is not in the allow list/,
    );
    expect(await codeOf(narrow, 'http://169.254.169.254/')).toMatch(/^403 /);
    const status = (await narrow.callTool('sandbox_status')).structuredContent as { egress: unknown };
    expect(status.egress).toMatchObject({ mode: 'allowlist', allow: ['allowed.test', '127.0.0.2'] });
    const wideStatus = (await wide.callTool('sandbox_status')).structuredContent as { egress: unknown };
    expect(wideStatus.egress).toMatchObject({ mode: 'all', allow: ['127.0.0.2'], deny: ['denied.test'] });
  });
});

/** A PEP 503 index with one pure-Python wheel (built by Python's zipfile). */
function pypiIndex(): Record<string, Buffer | string> {
  const name = 'demo_pkg-1.0-py3-none-any.whl';
  const wheel = execFileSync('python3', [
    '-c',
    `import io, sys, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("demo_pkg/__init__.py", "VALUE = 1\\n")
    z.writestr("demo_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.0\\n")
    z.writestr("demo_pkg-1.0.dist-info/WHEEL",
               "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr("demo_pkg-1.0.dist-info/RECORD", "")
sys.stdout.buffer.write(buf.getvalue())`,
  ]);
  const sha = createHash('sha256').update(wheel).digest('hex');
  return {
    '/simple/demo-pkg/': `<html><body><a href="/files/${name}#sha256=${sha}">${name}</a></body></html>`,
    [`/files/${name}`]: wheel,
  };
}
