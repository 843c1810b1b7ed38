/**
 * Secrets a local sandbox uses without holding them (MCP_SANDBOX_SECRETS_FILE), through the built bundle and the
 * official client: the proxy adds a secret's header to plain HTTP and to HTTPS requests for its host (ending the
 * sandbox's TLS with the sandbox's own authority), `git clone` over HTTPS authenticates with one, and the value is
 * found nowhere the sandbox can look (environment, files, other processes' /proc), in no tool result or log line,
 * and at no other host or port. Destinations live on loopback addresses of their own, with a real DNS server, and
 * the HTTPS hosts have certificates from a test CA the server (not the sandbox) trusts.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, type TestClient } from '../support/clients';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { type HttpHost, httpsWith, makeCertificates, startHttpHost } from '../support/egress-hosts';
import { needs } from '../support/needs';
import { type StartedServer, startServer, stopAllServers } from '../support/server';

const TOKEN = 'e2e-secrets-token-0123456789abcdef';
const API_KEY = 'sk-test-Zq8vT3mW1pR6yK0aLq2n';
const GIT_TOKEN = 'ghp-test-Hx4cV9bN2mQ7wE5rT1yU';

interface CommandOutput {
  exit_code: number | null;
  stdout: string;
  stderr: string;
}

needs('bubblewrap', 'network clients').describe('secrets added at the egress point, never in the sandbox', () => {
  let server: StartedServer;
  let client: TestClient;
  let dns: DnsServer;
  let api: HttpHost;
  let apiOtherPort: HttpHost;
  let secureApi: HttpHost;
  let other: HttpHost;
  let secureOther: HttpHost;
  /** HTTPS with a certificate from a CA nobody here trusts: the proxy must not send it the secret. */
  let untrusted: HttpHost;
  let untrustedCertDir: string;
  let git: HttpHost;
  let workDir: string;
  let certDir: string;
  /** Every tool result's text and structured content, for the check that no secret is in any of them. */
  const results: string[] = [];
  const closers: Array<() => Promise<void>> = [];

  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = await client.callTool(name, args);
    results.push(JSON.stringify(result));
    return result;
  };
  const run = async (command: string): Promise<CommandOutput> =>
    (await call('run_command', { command, timeout_ms: 60_000 })).structuredContent as unknown as CommandOutput;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'egress-secrets-'));
    certDir = makeCertificates(['secure-api.test', 'secure-other.test', 'git.test']);
    const https = httpsWith(certDir);
    // Hosts that never echo a request's headers back: what they got is read from `seen`, on this side.
    const page = { '/': 'ok\n' };
    api = await startHttpHost('127.0.0.2', 0, page);
    apiOtherPort = await startHttpHost('127.0.0.2', 0, page);
    other = await startHttpHost('127.0.0.3', 0, page);
    secureApi = await startHttpHost('127.0.0.4', 0, page, https);
    secureOther = await startHttpHost('127.0.0.5', 0, page, https);
    untrustedCertDir = makeCertificates(['untrusted.test']);
    untrusted = await startHttpHost('127.0.0.7', 0, page, httpsWith(untrustedCertDir));
    git = await startHttpHost('127.0.0.6', 0, gitRepository(workDir), https);
    dns = await startDnsServer({
      'api.test': { a: ['127.0.0.2'] },
      'other.test': { a: ['127.0.0.3'] },
      'secure-api.test': { a: ['127.0.0.4'] },
      'secure-other.test': { a: ['127.0.0.5'] },
      'untrusted.test': { a: ['127.0.0.7'] },
      'git.test': { a: ['127.0.0.6'] },
    });
    closers.push(
      () => dns.close(),
      ...[api, apiOtherPort, other, secureApi, secureOther, git, untrusted].map((h) => h.close),
    );
    const secretsFile = join(workDir, 'secrets.json');
    writeFileSync(
      secretsFile,
      JSON.stringify([
        {
          name: 'api-key',
          hosts: [`api.test:${api.port}`, `secure-api.test:${secureApi.port}`],
          header: 'Authorization',
          value: `Bearer ${API_KEY}`,
        },
        { name: 'git-token', hosts: [`git.test:${git.port}`], header: 'Authorization', value: `Bearer ${GIT_TOKEN}` },
        {
          name: 'untrusted-key',
          hosts: [`untrusted.test:${untrusted.port}`],
          header: 'X-Api-Key',
          value: API_KEY,
        },
      ]),
    );
    chmodSync(secretsFile, 0o600);
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        SANDBOX_BACKEND: 'local',
        MCP_SANDBOX_EGRESS: 'allowlist',
        // Each name, and the loopback address it leads to (a special address stays closed unless an entry names it).
        MCP_SANDBOX_ALLOW: [
          'api.test',
          'other.test',
          'secure-api.test',
          'secure-other.test',
          'untrusted.test',
          '127.0.0.7',
          'git.test',
          '127.0.0.2',
          '127.0.0.3',
          '127.0.0.4',
          '127.0.0.5',
          '127.0.0.6',
        ].join(','),
        MCP_SANDBOX_RESOLVER: dns.address,
        MCP_SANDBOX_SECRETS_FILE: secretsFile,
        // The server checks the hosts' certificates; the sandbox never sees this CA.
        NODE_EXTRA_CA_CERTS: join(certDir, 'ca.crt'),
      },
    });
    client = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await client?.close();
    await stopAllServers();
    for (const close of closers) await close();
    rmSync(workDir, { recursive: true, force: true });
    rmSync(certDir, { recursive: true, force: true });
    rmSync(untrustedCertDir, { recursive: true, force: true });
  });

  const authorizationSeenBy = (host: HttpHost) => host.seen.map((r) => r.headers.authorization);

  it('adds the secret to plain HTTP requests for its host and port, replacing what the sandbox sent', async () => {
    const url = `http://api.test:${api.port}/`;
    const out = await run(`curl -sS ${url} && curl -sS -H 'Authorization: Bearer guessed' ${url}`);
    expect(out).toMatchObject({ exit_code: 0, stdout: 'ok\nok\n' });
    expect(authorizationSeenBy(api)).toEqual([`Bearer ${API_KEY}`, `Bearer ${API_KEY}`]);
  });

  it('adds it to HTTPS requests, the sandbox trusting only its own authority for the host', async () => {
    const out = await run(
      `curl -sS https://secure-api.test:${secureApi.port}/ && python3 -c "import urllib.request as u; ` +
        `print(u.urlopen('https://secure-api.test:${secureApi.port}/').read().decode().strip())"`,
    );
    expect(out).toMatchObject({ exit_code: 0, stdout: 'ok\nok\n' });
    expect(authorizationSeenBy(secureApi)).toEqual([`Bearer ${API_KEY}`, `Bearer ${API_KEY}`]);
    // Several requests on one kept-alive connection each get it.
    const keptAlive = await run(
      `curl -sS https://secure-api.test:${secureApi.port}/ https://secure-api.test:${secureApi.port}/`,
    );
    expect(keptAlive).toMatchObject({ exit_code: 0, stdout: 'ok\nok\n' });
    expect(authorizationSeenBy(secureApi).slice(2)).toEqual([`Bearer ${API_KEY}`, `Bearer ${API_KEY}`]);
  });

  it('clones a repository over HTTPS with a token the sandbox never holds', async () => {
    const out = await run(`git clone -q https://git.test:${git.port}/repo.git cloned && cat cloned/README.md`);
    expect(out).toMatchObject({ exit_code: 0, stdout: 'from the private repository\n' });
    expect(git.seen.length).toBeGreaterThan(0);
    expect(new Set(authorizationSeenBy(git))).toEqual(new Set([`Bearer ${GIT_TOKEN}`]));
  });

  it('sends it to no other host and no other port, and other HTTPS is passed through untouched', async () => {
    const out = await run(
      `curl -sS http://other.test:${other.port}/ && curl -sS http://api.test:${apiOtherPort.port}/ && ` +
        `curl -sS https://secure-other.test:${secureOther.port}/; echo "exit $?"`,
    );
    expect(out.stdout).toMatch(/^ok\nok\n/);
    // Not a secret's host: its TLS goes through whole, so the host's certificate (from a CA the sandbox does not
    // have) is refused by curl itself, and the proxy never reads the request.
    expect(out.stdout).toMatch(/exit 60\n$/);
    expect(authorizationSeenBy(other)).toEqual([undefined]);
    expect(authorizationSeenBy(apiOtherPort)).toEqual([undefined]);
    expect(secureOther.seen).toEqual([]);
  });

  it('sends a secret only to a host whose certificate the server trusts, and says why in the TLS', async () => {
    const out = await run(`curl -sS -w '\\n%{http_code}' https://untrusted.test:${untrusted.port}/`);
    expect(out.stdout.slice(-3)).toBe('502');
    expect(out.stdout).toContain('untrusted.test: ');
    expect(out.stdout).toContain('its certificate or TLS was not accepted');
    expect(untrusted.seen).toEqual([]);
  });

  it('shows the secrets in sandbox_status by name, host and header, never the value', async () => {
    const status = (await call('sandbox_status')).structuredContent as { egress: { secrets: unknown } };
    expect(status.egress.secrets).toEqual([
      {
        name: 'api-key',
        hosts: [`api.test:${api.port}`, `secure-api.test:${secureApi.port}`],
        header: 'Authorization',
      },
      { name: 'git-token', hosts: [`git.test:${git.port}`], header: 'Authorization' },
      { name: 'untrusted-key', hosts: [`untrusted.test:${untrusted.port}`], header: 'X-Api-Key' },
    ]);
  });

  it('leaves the value nowhere in the sandbox, in no result and in no log line', async () => {
    // Searched for reversed, so that the search itself does not put the value in a command line.
    const search = `import os, sys
needles = [n[::-1].encode() for n in sys.argv[1:]]
hits = []
def look(path):
    try:
        with open(path, 'rb') as f: data = f.read(1 << 24)
    except OSError: return
    hits.extend(path for n in needles if n in data)
for root in ['/home/user', '/tmp', '/etc', '/etc-sandbox-trust.pem']:
    if os.path.isfile(root): look(root)
    for d, _, files in os.walk(root):
        for f in files: look(os.path.join(d, f))
for pid in filter(str.isdigit, os.listdir('/proc')):
    for what in ['environ', 'cmdline']: look(f'/proc/{pid}/{what}')
look('/proc/self/environ')
print(len(hits), *sorted(set(hits)))`;
    await call('write_file', { path: 'search.py', content: search });
    const reversed = (s: string) => [...s].reverse().join('');
    const env = await run('env');
    expect(env.stdout).toContain('SSL_CERT_FILE=/etc-sandbox-trust.pem');
    const found = await run(`python3 search.py '${reversed(API_KEY)}' '${reversed(GIT_TOKEN)}'`);
    expect(found).toMatchObject({ exit_code: 0, stdout: '0\n' });
    // The secrets file is hidden inside.
    const file = await run(`cat ${join(workDir, 'secrets.json')} | wc -c`);
    expect(file.stdout.trim()).toBe('0');
    for (const text of [...results, JSON.stringify(server.logs())]) {
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain(GIT_TOKEN);
    }
    // The log says which secret went to which host, by name.
    const used = server.logs().filter((line) => line.msg === 'sandbox egress with secrets');
    expect(used.map((line) => line.secrets)).toContain('git-token');
  });
});

/** A bare repository with one commit, served as files (git's dumb HTTP), only to `Bearer GIT_TOKEN`. */
function gitRepository(dir: string): Record<string, Buffer | string> {
  const work = join(dir, 'work');
  mkdirSync(work);
  const sh = (command: string, cwd = work) => execFileSync('sh', ['-c', command], { cwd, stdio: 'pipe' });
  writeFileSync(join(work, 'README.md'), 'from the private repository\n');
  sh('git init -q && git add README.md && git -c user.name=t -c user.email=t@t commit -qm one');
  sh('git clone -q --bare work repo.git && cd repo.git && git update-server-info', dir);
  const files: Record<string, Buffer | string> = {};
  const list = execFileSync('find', ['.', '-type', 'f'], { cwd: join(dir, 'repo.git') })
    .toString()
    .trim()
    .split('\n');
  for (const file of list) files[`/repo.git/${file.slice(2)}`] = readFileSync(join(dir, 'repo.git', file));
  return files;
}

needs('bubblewrap', 'network clients', 'disk images').describe(
  'secrets on a sandbox whose disk it filled (LOCAL_SANDBOX_DISK_MB=64)',
  () => {
    let server: StartedServer;
    let client: TestClient;
    let dns: DnsServer;
    let api: HttpHost;
    let certDir: string;
    let workDir: string;

    const run = async (command: string): Promise<CommandOutput> =>
      (await client.callTool('run_command', { command, timeout_ms: 60_000 }))
        .structuredContent as unknown as CommandOutput;

    beforeAll(async () => {
      workDir = mkdtempSync(join(tmpdir(), 'egress-secrets-disk-'));
      certDir = makeCertificates(['secure-api.test']);
      api = await startHttpHost('127.0.0.4', 0, { '/': 'ok\n' }, httpsWith(certDir));
      dns = await startDnsServer({ 'secure-api.test': { a: ['127.0.0.4'] } });
      const secretsFile = join(workDir, 'secrets.json');
      writeFileSync(
        secretsFile,
        JSON.stringify([
          { name: 'k', hosts: [`secure-api.test:${api.port}`], header: 'Authorization', value: `Bearer ${API_KEY}` },
        ]),
        { mode: 0o600 },
      );
      server = await startServer({
        env: {
          MCP_AUTH_TOKENS: TOKEN,
          SANDBOX_BACKEND: 'local',
          LOCAL_SANDBOX_DISK_MB: '64',
          MCP_SANDBOX_EGRESS: 'allowlist',
          MCP_SANDBOX_ALLOW: 'secure-api.test,127.0.0.4',
          MCP_SANDBOX_RESOLVER: dns.address,
          MCP_SANDBOX_SECRETS_FILE: secretsFile,
          NODE_EXTRA_CA_CERTS: join(certDir, 'ca.crt'),
        },
      });
      client = await connectClient('v2', server.url, { token: TOKEN });
    });
    afterAll(async () => {
      await client?.close();
      await stopAllServers();
      await Promise.all([dns.close(), api.close()]);
      rmSync(workDir, { recursive: true, force: true });
      rmSync(certDir, { recursive: true, force: true });
    });

    it('starts a supervisor again, with a new authority, after the sandbox filled its disk, killed it', async () => {
      const url = `https://secure-api.test:${api.port}/`;
      expect(await run(`curl -sS ${url}`)).toMatchObject({ exit_code: 0, stdout: 'ok\n' });
      const before = (await run('cat /etc-sandbox-trust.pem | tail -c 400')).stdout;
      const fill = await run('head -c 100M /dev/zero > fill; df -k . | tail -1');
      expect(fill.stderr).toMatch(/No space left on device/);
      // Everything of the sandbox's user, its supervisor included: the next call starts a new one.
      await client.callTool('run_command', { command: 'kill -9 -1' });
      const after = await run(`tail -c 400 /etc-sandbox-trust.pem; curl -sS ${url}`);
      expect(after).toMatchObject({ exit_code: 0 });
      expect(after.stdout.endsWith('ok\n')).toBe(true);
      // A new authority: the bundle's last certificate changed.
      expect(after.stdout.slice(0, -3)).not.toBe(before);
      expect(api.seen.map((r) => r.headers.authorization)).toEqual([`Bearer ${API_KEY}`, `Bearer ${API_KEY}`]);
    });
  },
);
