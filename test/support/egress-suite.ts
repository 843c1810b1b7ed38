/**
 * The egress policy tests both backends pass, through the built bundle and the official client: the local backend
 * (test/e2e/sandbox-egress.test.ts) and E2B through the real SDK against the local E2B service
 * (test/e2b/egress.test.ts), with the same settings (MCP_SANDBOX_EGRESS=allowlist, entries without ports, which
 * E2B's rules cannot carry), the same destinations and the same checks:
 * - allowed: HTTP, HTTPS (a test CA), raw TCP through `CONNECT`, a `pip download` from a PEP 503 index;
 * - refused with a 403 that says so, and nothing reaching the destination: a host not allowed, a denied host, the IP
 *   literal of a host, names that resolve to loopback or to the metadata address, both metadata addresses, an
 *   IPv6-mapped literal and a name with an IPv6-mapped answer, a refused `CONNECT`, a rebinding name (its allowed
 *   answers reached, its loopback answers never dialled), and sockets that skip the proxy (no route at all);
 * - a secret reaches its host over HTTP and HTTPS, not another host, and is nowhere the sandbox can look, in no
 *   tool result and in no log line of the server;
 * - a credential's narrower policy (MCP_SANDBOX_POLICY_FILE) holds.
 * Destinations live on loopback addresses of their own, with a real DNS server the egress point resolves with.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, type TestClient } from './clients';
import { type DnsServer, startDnsServer } from './dns-server';
import { type HttpHost, httpsWith, makeCertificates, pypiIndex, startEchoHost, startHttpHost } from './egress-hosts';
import { type StartedServer, startServer, stopAllServers } from './server';

/** How one backend is started for the suite. */
export interface EgressBackend {
  readonly name: 'local' | 'e2b';
  /** What sandbox_status says enforces the policy. */
  readonly enforcedBy: string;
  /**
   * Starts what the backend needs beside the server: resolving with `resolver` (`ip:port`) and trusting the test
   * CA `caPem` for the hosts' certificates. Resolves with the server's environment for it and how to stop it.
   */
  start(resolver: string, caFile: string): Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
  /** A secret's host for a destination on `port`: with the port where the backend's secrets take one. */
  secretHost(name: string, port: number): string;
}

export interface CommandOutput {
  exit_code: number | null;
  stdout: string;
  stderr: string;
}

const TOKEN = 'suite-egress-token-0123456789abcdef';
const NARROW_TOKEN = 'suite-egress-narrow-token-012345678';
const API_KEY = 'sk-suite-Vb3nM8qW2eR5tY7u';

export function describeEgressPolicy(backend: EgressBackend): void {
  let server: StartedServer;
  let client: TestClient;
  let narrow: TestClient;
  let dns: DnsServer;
  let allowed: HttpHost;
  let denied: HttpHost;
  let canary: HttpHost;
  let secure: HttpHost;
  let registry: HttpHost;
  let api: HttpHost;
  let secureApi: HttpHost;
  let echo: { port: number; close(): Promise<void> };
  let dir: string;
  let certDir: string;
  let stopBackend: () => Promise<void> = async () => undefined;
  /** Every tool result, for the check that no secret is in any of them. */
  const results: string[] = [];
  const closers: Array<() => Promise<void>> = [];

  const runAs = async (who: TestClient, command: string): Promise<CommandOutput> => {
    const result = await who.callTool('run_command', { command, timeout_ms: 60_000 });
    results.push(JSON.stringify(result));
    return result.structuredContent as unknown as CommandOutput;
  };
  const run = (command: string) => runAs(client, command);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `egress-suite-${backend.name}-`));
    certDir = makeCertificates(['secure.test', 'secure-api.test']);
    const https = httpsWith(certDir);
    allowed = await startHttpHost('127.0.0.2');
    // The same port on other addresses: a refused request must reach none of them.
    denied = await startHttpHost('127.0.0.3', allowed.port);
    canary = await startHttpHost('127.0.0.1', allowed.port);
    echo = await startEchoHost('127.0.0.4');
    secure = await startHttpHost('127.0.0.5', 0, {}, https);
    registry = await startHttpHost('127.0.0.6', 0, pypiIndex());
    // Secret hosts never echo a request's headers back: what they got is read from `seen`, on this side.
    api = await startHttpHost('127.0.0.7', 0, { '/': 'ok\n' });
    secureApi = await startHttpHost('127.0.0.8', 0, { '/': 'ok\n' }, https);
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
      'api.test': { a: ['127.0.0.7'] },
      'secure-api.test': { a: ['127.0.0.8'] },
    });
    closers.push(
      () => dns.close(),
      ...[allowed, denied, canary, secure, registry, api, secureApi, echo].map((h) => () => h.close()),
    );
    const secretsFile = join(dir, 'secrets.json');
    writeFileSync(
      secretsFile,
      JSON.stringify([
        {
          name: 'api-key',
          hosts: [backend.secretHost('api.test', api.port), backend.secretHost('secure-api.test', secureApi.port)],
          header: 'Authorization',
          value: `Bearer ${API_KEY}`,
        },
      ]),
    );
    chmodSync(secretsFile, 0o600);
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify([{ tokens: [NARROW_TOKEN], allow: ['allowed.test', '127.0.0.2'] }]));
    chmodSync(policyFile, 0o600);
    const started = await backend.start(dns.address, join(certDir, 'ca.crt'));
    stopBackend = started.stop;
    server = await startServer({
      env: {
        ...started.env,
        MCP_AUTH_TOKENS: `${TOKEN},${NARROW_TOKEN}`,
        MCP_SANDBOX_EGRESS: 'allowlist',
        // Each name, and the loopback address it leads to: a special address stays closed unless an entry names it.
        MCP_SANDBOX_ALLOW: [
          'allowed.test',
          '127.0.0.2',
          'rebind.test',
          // Allowed names that lead to addresses no entry names: the addresses still stay closed.
          'loopback.test',
          'metadata.test',
          'mapped.test',
          'tcp.test',
          '127.0.0.4',
          'secure.test',
          '127.0.0.5',
          'registry.test',
          '127.0.0.6',
          'api.test',
          '127.0.0.7',
          'secure-api.test',
          '127.0.0.8',
        ].join(','),
        MCP_SANDBOX_DENY: 'denied.test',
        MCP_SANDBOX_SECRETS_FILE: secretsFile,
        MCP_SANDBOX_POLICY_FILE: policyFile,
      },
    });
    client = await connectClient('v2', server.url, { token: TOKEN });
    narrow = await connectClient('v2', server.url, { token: NARROW_TOKEN });
    await client.callTool('write_file', { path: 'ca.crt', content: readFileSync(join(certDir, 'ca.crt'), 'utf8') });
  });
  afterAll(async () => {
    await client?.close();
    await narrow?.close();
    await stopAllServers();
    await stopBackend();
    for (const close of closers) await close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(certDir, { recursive: true, force: true });
  });

  it('shows the policy in sandbox_status, secrets by name only', async () => {
    const status = (await client.callTool('sandbox_status')).structuredContent as Record<string, unknown>;
    expect(status.egress).toEqual({
      mode: 'allowlist',
      allow: expect.arrayContaining(['allowed.test', 'rebind.test', '127.0.0.2']),
      deny: ['denied.test'],
      enforced_by: backend.enforcedBy,
      secrets: [{ name: 'api-key', hosts: expect.any(Array), header: 'Authorization' }],
    });
  });

  it('reaches an allowed host over HTTP, HTTPS and raw TCP, and downloads from an allowed index', async () => {
    const http = await run(`curl -sS http://allowed.test:${allowed.port}/hello?x=1`);
    expect(JSON.parse(http.stdout)).toMatchObject({ host: '127.0.0.2', url: '/hello?x=1' });
    const secured = await run(`curl -sS --cacert ca.crt https://secure.test:${secure.port}/tls`);
    expect(secured.stderr).toBe('');
    expect(JSON.parse(secured.stdout)).toMatchObject({ host: '127.0.0.5', url: '/tls' });
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
    ['a host not in the list', 'http://elsewhere.test:PORT/', /not in the allow list/],
    ['a denied host', 'http://denied.test:PORT/', /deny entry denied\.test|not in the allow list/],
    ['the IP literal of a host', 'http://127.0.0.3:PORT/', /not in the allow list/],
    ['a name that resolves to the server loopback', 'http://loopback.test:PORT/', /127\.0\.0\.1 is a private/],
    ['a name that resolves to the metadata address', 'http://metadata.test:PORT/', /169\.254\.169\.254 is a/],
    ['the metadata address itself', 'http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254:80 is not in/],
    ["Alibaba Cloud's metadata address", 'http://100.100.100.200/latest/', /100\.100\.100\.200:80 is not in/],
    ['an IPv6-mapped form', 'http://[::ffff:127.0.0.3]:PORT/', /is not in the allow list/],
    ['a name with an IPv6-mapped answer', 'http://mapped.test:PORT/', /is a private/],
  ])('refuses %s with a 403 that names the rule, and nothing reaches it', async (_what, url, rule) => {
    const before = [denied.connections, canary.connections];
    const out = await run(`curl -sS -w '\\n%{http_code}' '${url.replace('PORT', String(allowed.port))}'`);
    const [body, code] = [out.stdout.slice(0, out.stdout.lastIndexOf('\n')), out.stdout.slice(-3)];
    expect(code).toBe('403');
    expect(body).toContain("Refused by the sandbox's egress policy");
    expect(body).toMatch(rule);
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

  it('has no route out for a socket that skips the proxy, and no resolver', async () => {
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
  });

  it('adds a secret to requests for its host over HTTP and HTTPS, and to no other host', async () => {
    const before = allowed.seen.length;
    const out = await run(
      `curl -sS -H 'Authorization: Bearer guessed' http://api.test:${api.port}/ && ` +
        `curl -sS https://secure-api.test:${secureApi.port}/ && curl -sS http://allowed.test:${allowed.port}/`,
    );
    expect(out).toMatchObject({ exit_code: 0 });
    expect(out.stdout).toMatch(/^ok\nok\n/);
    expect(api.seen.map((r) => r.headers.authorization)).toEqual([`Bearer ${API_KEY}`]);
    expect(secureApi.seen.map((r) => r.headers.authorization)).toEqual([`Bearer ${API_KEY}`]);
    expect(allowed.seen.slice(before).map((r) => r.headers.authorization)).toEqual([undefined]);
  });

  it('leaves the secret nowhere in the sandbox, in no tool result and in no log line', async () => {
    // Searched for reversed, so that the search itself does not put the value in a command line.
    const search = `import os, sys
needle = sys.argv[1][::-1].encode()
hits = []
def look(path):
    try:
        with open(path, 'rb') as f: data = f.read(1 << 24)
    except OSError: return
    if needle in data: hits.append(path)
for root in ['/home/user', '/tmp', '/etc']:
    for d, _, files in os.walk(root):
        for f in files: look(os.path.join(d, f))
for pid in filter(str.isdigit, os.listdir('/proc')):
    for what in ['environ', 'cmdline']: look(f'/proc/{pid}/{what}')
print(len(hits), *sorted(set(hits)))`;
    await client.callTool('write_file', { path: 'search.py', content: search });
    const found = await run(`python3 search.py '${[...API_KEY].reverse().join('')}'`);
    expect(found).toMatchObject({ exit_code: 0, stdout: '0\n' });
    for (const text of [...results, JSON.stringify(server.logs())]) expect(text).not.toContain(API_KEY);
  });

  it("holds a credential to its narrower policy, which cannot open what the operator's keeps closed", async () => {
    const code = async (url: string) =>
      (await runAs(narrow, `curl -sS -o /dev/null -w '%{http_code}' ${url}`)).stdout.slice(-3);
    expect(await code(`http://allowed.test:${allowed.port}/`)).toBe('200');
    expect(await code(`http://registry.test:${registry.port}/simple/`)).toBe('403');
    expect(await code(`http://api.test:${api.port}/`)).toBe('403');
    const status = (await narrow.callTool('sandbox_status')).structuredContent as { egress: unknown };
    expect(status.egress).toMatchObject({ mode: 'allowlist', allow: ['allowed.test', '127.0.0.2'] });
  });
}
