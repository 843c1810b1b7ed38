/**
 * The egress policy tests both backends pass (test/support/egress-suite.ts), on the E2B backend: the built bundle
 * with SANDBOX_BACKEND=e2b creates its sandboxes through the real SDK against the local E2B service, which models
 * E2B's network settings and transform rules (test/support/e2b-local/sandbox-network.ts). What reaches a
 * destination there is what the settings the server sent allow, so these tests check the server's translation of
 * the policy (functions/mcp/egress/e2b-network.ts) end to end.
 */
import { readFileSync } from 'node:fs';

import { connectClient, type TestClient } from '../support/clients';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { type LocalE2B, startLocalE2B } from '../support/e2b-local';
import { type HttpHost, startHttpHost } from '../support/egress-hosts';
import { type CommandOutput, describeEgressPolicy } from '../support/egress-suite';
import { needs } from '../support/needs';
import { type StartedServer, startServer, stopAllServers } from '../support/server';

needs('bubblewrap', 'network clients').describe('the egress policy on the E2B backend (local E2B service)', () => {
  describeEgressPolicy({
    name: 'e2b',
    enforcedBy: "E2B's egress rules, set when the sandbox is created",
    start: async (resolver, caFile) => {
      const e2b: LocalE2B = await startLocalE2B({ resolver: [resolver], upstreamCa: [readFileSync(caFile, 'utf8')] });
      return { env: { SANDBOX_BACKEND: 'e2b', ...e2b.env() }, stop: () => e2b.stop() };
    },
    // E2B's transform rules are per name, for any port.
    secretHost: (name) => name,
  });
});

needs('bubblewrap', 'network clients').describe('MCP_SANDBOX_EGRESS=all on the E2B backend (local E2B service)', () => {
  const TOKEN = 'e2b-egress-all-token-0123456789abcd';
  let e2b: LocalE2B;
  let server: StartedServer;
  let client: TestClient;
  let dns: DnsServer;
  let host: HttpHost;
  let denied: HttpHost;

  const codeOf = async (url: string): Promise<string> => {
    const result = await client.callTool('run_command', { command: `curl -sS -w '\\n%{http_code}' '${url}'` });
    if (result.isError) throw new Error(JSON.stringify(result.content));
    const out = result.structuredContent as unknown as CommandOutput;
    return `${out.stdout.slice(-3)} ${out.stdout.slice(0, -4).trim()}`;
  };

  beforeAll(async () => {
    host = await startHttpHost('127.0.0.2');
    denied = await startHttpHost('127.0.0.3', host.port);
    dns = await startDnsServer({ 'public.test': { a: ['127.0.0.2'] }, 'denied.test': { a: ['127.0.0.3'] } });
    e2b = await startLocalE2B({ resolver: [dns.address] });
    server = await startServer({
      env: {
        ...e2b.env(),
        SANDBOX_BACKEND: 'e2b',
        MCP_AUTH_TOKENS: TOKEN,
        MCP_SANDBOX_EGRESS: 'all',
        // 127.0.0.0/8 is special: only the address named here opens in it; a deny range outside is sent too.
        MCP_SANDBOX_ALLOW: '127.0.0.2/32',
        MCP_SANDBOX_DENY: '8.8.8.0/24',
      },
    });
    client = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await client?.close();
    await stopAllServers();
    await e2b?.stop();
    await Promise.all([dns.close(), host.close(), denied.close()]);
  });

  it('sends the special ranges and the deny ranges as denyOut, and the named range as allowOut', async () => {
    expect(await codeOf(`http://public.test:${host.port}/`)).toMatch(/^200 /);
    const created = e2b.requests().find((r) => r.route === 'create')?.body as { network?: Record<string, string[]> };
    expect(created.network?.allowOut).toEqual(['127.0.0.2']);
    expect(created.network?.denyOut).toEqual(
      expect.arrayContaining(['10.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '100.64.0.0/10', '8.8.8.0/24']),
    );
    // E2B refuses a range whose address is unspecified.
    expect(created.network?.denyOut).not.toContain('0.0.0.0/8');
  });

  it('keeps the rest of the special ranges closed: another loopback address, the metadata addresses', async () => {
    expect(await codeOf(`http://denied.test:${host.port}/`)).toMatch(/^403 /);
    expect(await codeOf(`http://127.0.0.3:${host.port}/`)).toMatch(/^403 /);
    expect(await codeOf('http://169.254.169.254/')).toMatch(/^403 /);
    expect(await codeOf('http://100.100.100.200/')).toMatch(/^403 /);
    expect(denied.connections).toBe(0);
  });
});
