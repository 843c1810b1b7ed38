/**
 * A local sandbox's egress, through the built bundle and the official client. The policy tests both backends pass
 * (test/support/egress-suite.ts) run here on the local backend; beside them, what only the local backend has:
 * the proxy variables every process starts with, entries with ports, the refusal log line, and `all` with a
 * narrower policy per credential. Destinations live on loopback addresses of their own, with a real DNS server the
 * proxy is pointed at (MCP_SANDBOX_RESOLVER).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, type TestClient } from '../support/clients';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { type HttpHost, startHttpHost } from '../support/egress-hosts';
import { type CommandOutput, describeEgressPolicy } from '../support/egress-suite';
import { needs } from '../support/needs';
import { type StartedServer, startServer, stopAllServers } from '../support/server';

const TOKEN = 'e2e-egress-token-0123456789abcdef';

needs('bubblewrap', 'network clients').describe('the egress policy on the local backend', () => {
  describeEgressPolicy({
    name: 'local',
    enforcedBy: 'the server (an HTTP proxy outside the sandbox)',
    start: async (resolver, caFile) => ({
      // The proxy checks the hosts' certificates where it ends TLS for a secret: it trusts the test CA.
      env: { SANDBOX_BACKEND: 'local', MCP_SANDBOX_RESOLVER: resolver, NODE_EXTRA_CA_CERTS: caFile },
      stop: async () => undefined,
    }),
    secretHost: (name, port) => `${name}:${port}`,
  });
});

needs('bubblewrap', 'network clients').describe('sandbox egress through the local proxy: ports, variables, log', () => {
  let server: StartedServer;
  let client: TestClient;
  let dns: DnsServer;
  let allowed: HttpHost;
  let otherPort: HttpHost;
  let denied: HttpHost;

  const run = async (command: string): Promise<CommandOutput> =>
    (await client.callTool('run_command', { command, timeout_ms: 60_000 }))
      .structuredContent as unknown as CommandOutput;

  beforeAll(async () => {
    allowed = await startHttpHost('127.0.0.2');
    otherPort = await startHttpHost('127.0.0.2');
    denied = await startHttpHost('127.0.0.3', allowed.port);
    dns = await startDnsServer({ 'allowed.test': { a: ['127.0.0.2'] }, 'denied.test': { a: ['127.0.0.3'] } });
    const p = allowed.port;
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        SANDBOX_BACKEND: 'local',
        MCP_SANDBOX_EGRESS: 'allowlist',
        MCP_SANDBOX_ALLOW: `allowed.test:${p},127.0.0.2:${p},denied.test`,
        MCP_SANDBOX_DENY: 'denied.test',
        MCP_SANDBOX_RESOLVER: dns.address,
      },
    });
    client = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await client?.close();
    await stopAllServers();
    await Promise.all([dns.close(), allowed.close(), otherPort.close(), denied.close()]);
  });

  it('points every usual client at the proxy, and says the sandbox is proxied', async () => {
    const env = await run('env | grep -i _proxy= | sort');
    expect(env.stdout).toContain('HTTPS_PROXY=http://127.0.0.1:3128');
    expect(env.stdout).toContain('https_proxy=http://127.0.0.1:3128');
    expect(env.stdout).toContain('ALL_PROXY=http://127.0.0.1:3128');
    const status = (await client.callTool('sandbox_status')).structuredContent as Record<string, unknown>;
    expect(status.network).toBe('proxied');
  });

  it('reaches an allowed port, and refuses a port the list does not allow', async () => {
    expect((await run(`curl -sS -o /dev/null -w '%{http_code}' http://allowed.test:${allowed.port}/`)).stdout).toBe(
      '200',
    );
    const out = await run(`curl -sS -w '\n%{http_code}' http://allowed.test:${otherPort.port}/`);
    expect(out.stdout.slice(-3)).toBe('403');
    expect(out.stdout).toContain(`allowed.test:${otherPort.port} is not in the allow list`);
    expect(otherPort.connections).toBe(0);
  });

  it('logs each refusal with the sandbox, the principal and the destination, and nothing of the request', async () => {
    const out = await run(`curl -sS -w '\n%{http_code}' 'http://denied.test:${allowed.port}/secret/path?q=1'`);
    expect(out.stdout.slice(-3)).toBe('403');
    expect(denied.connections).toBe(0);
    const refusals = server.logs().filter((line) => line.msg === 'sandbox egress refused');
    expect(refusals.length).toBeGreaterThan(1);
    for (const line of refusals) {
      expect(line).toMatchObject({ sandbox: expect.any(String), principal: expect.any(String) });
      expect(String(line.destination)).toMatch(/^[^/?]+:\d+$/);
      expect(JSON.stringify(line)).not.toContain(TOKEN);
      expect(JSON.stringify(line)).not.toContain('secret/path');
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
