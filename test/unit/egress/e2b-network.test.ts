import { e2bPolicyProblems, e2bSecretProblems, toE2BEgress } from '../../../functions/mcp/egress/e2b-network';
import { type EgressMode, type EgressPolicy, parseEntry, toPolicy } from '../../../functions/mcp/egress/policy';
import { parseSecretHost, type SandboxSecret, secretHeadersFor } from '../../../functions/mcp/egress/secrets';

const policy = (mode: EgressMode, allow: string[] = [], deny: string[] = []): EgressPolicy => {
  const parse = (text: string) => {
    const entry = parseEntry(text);
    if (typeof entry === 'string') throw new Error(entry);
    return entry;
  };
  return toPolicy(mode, allow.map(parse), deny.map(parse));
};
const secret = (name: string, hosts: string[], header: string, value: string): SandboxSecret => ({
  name,
  hosts: hosts.map((text) => {
    const host = parseSecretHost(text);
    if (typeof host === 'string') throw new Error(host);
    return host;
  }),
  header,
  value,
});

/** The IPv4 special ranges E2B is sent: 0.0.0.0/8 is not (E2B refuses an unspecified address). */
const IPV4_SPECIALS = [
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
];
const WHOSE = 'MCP_SANDBOX_ALLOW/DENY';

describe('toE2BEgress', () => {
  it('none: no internet access, whatever the secrets', () => {
    expect(toE2BEgress(policy('none'), [])).toEqual({ allowInternetAccess: false });
    expect(toE2BEgress(policy('none'), [secret('gh', ['api.github.com'], 'Authorization', 'x')])).toEqual({
      allowInternetAccess: false,
    });
  });

  it('allowlist: everything denied but the allow entries, without their ports, and the deny ranges kept', () => {
    const egress = toE2BEgress(
      policy('allowlist', ['pypi.org:443', '*.github.com', '8.8.8.0/24', '[2001:db8::1]', 'pypi.org'], ['9.9.9.9']),
      [],
    );
    expect(egress).toEqual({
      allowInternetAccess: true,
      network: {
        allowOut: ['pypi.org', '*.github.com', '8.8.8.0/24', '2001:db8::1'],
        denyOut: ['0.0.0.0/0', '9.9.9.9'],
      },
    });
    expect(egress.network?.denyOut[0]).toBe('0.0.0.0/0');
  });

  it('all: the IPv4 special ranges denied, less those an allow range covers, plus the deny ranges', () => {
    const plain = toE2BEgress(policy('all'), []);
    expect(plain).toEqual({ allowInternetAccess: true, network: { allowOut: [], denyOut: IPV4_SPECIALS } });
    const egress = toE2BEgress(
      policy('all', ['10.0.0.0/8', '172.16.5.0/24', 'pypi.org', '*.github.com'], ['8.8.8.8', '1.1.0.0/16']),
      [],
    );
    const network = egress.network;
    expect(network?.allowOut).toEqual(['10.0.0.0/8', '172.16.5.0/24']);
    expect(network?.denyOut).toEqual(expect.arrayContaining(['127.0.0.0/8', '169.254.0.0/16', '100.64.0.0/10']));
    // Covered whole by an allow range: open. Only partly: denied, the allow range winning on E2B for its part.
    expect(network?.denyOut).not.toContain('10.0.0.0/8');
    expect(network?.denyOut).toContain('172.16.0.0/12');
    expect(network?.denyOut).toEqual(expect.arrayContaining(['8.8.8.8', '1.1.0.0/16']));
    expect(network?.denyOut).not.toContain('0.0.0.0/0');
    // No IPv6 (E2B's sandboxes reach out over IPv4), no names.
    expect(network?.denyOut.some((entry) => entry.includes(':'))).toBe(false);
    expect(network?.allowOut).not.toContain('pypi.org');
    expect(network?.allowOut).not.toContain('*.github.com');
  });

  it('all: a deny range that is a special range is listed once', () => {
    const denyOut = toE2BEgress(policy('all', [], ['127.0.0.0/8', '169.254.169.254']), []).network?.denyOut ?? [];
    expect(denyOut.filter((entry) => entry === '127.0.0.0/8')).toHaveLength(1);
    expect(denyOut).toContain('169.254.169.254');
  });

  it('all: an allow range over all of IPv4 opens every special range, as the proxy does', () => {
    const network = toE2BEgress(policy('all', ['0.0.0.0/0']), []).network;
    expect(network).toEqual({ allowOut: ['0.0.0.0/0'], denyOut: [] });
  });

  it('secrets: one rule per host with its headers; the later secret of the same header wins, in any case', () => {
    const network = toE2BEgress(policy('allowlist', ['api.github.com', '*.npmjs.org']), [
      secret('gh', ['api.github.com'], 'Authorization', 'Bearer gh-1'),
      secret('npm', ['*.npmjs.org'], 'Authorization', 'Bearer npm'),
      secret('gh-extra', ['api.github.com'], 'X-GitHub-Api-Version', '2022-11-28'),
      secret('gh-2', ['api.github.com'], 'AUTHORIZATION', 'Bearer gh-2'),
    ]).network;
    expect(network?.rules).toEqual({
      'api.github.com': [
        { transform: { headers: { 'X-GitHub-Api-Version': '2022-11-28', AUTHORIZATION: 'Bearer gh-2' } } },
      ],
      '*.npmjs.org': [{ transform: { headers: { Authorization: 'Bearer npm' } } }],
    });
    expect(toE2BEgress(policy('all'), []).network).not.toHaveProperty('rules');
  });

  it("secrets: a host's rule carries the headers of every secret that matches it, as the proxy adds them", () => {
    // E2B takes the exact rule, else the longest wildcard, and does not merge rule sets; the proxy adds the headers
    // of every secret whose host matches (secretHeadersFor). Each rule must then hold what the proxy would add.
    const secrets = [
      secret('org', ['*.example.com'], 'X-Org', 'org-key'),
      secret('api', ['api.example.com'], 'Authorization', 'Bearer api'),
      secret('deep', ['*.eu.example.com'], 'X-Region', 'eu'),
    ];
    const rules = toE2BEgress(policy('all'), secrets).network?.rules ?? {};
    const e2bHeaders = (host: string): Record<string, string> => {
      const exact = rules[host];
      if (exact !== undefined) return exact[0]?.transform.headers ?? {};
      const wildcards = Object.keys(rules)
        .filter((key) => key.startsWith('*.') && host.endsWith(key.slice(1)))
        .sort((a, b) => b.length - a.length);
      return rules[wildcards[0] ?? '']?.[0]?.transform.headers ?? {};
    };
    const proxyHeaders = (host: string): Record<string, string> =>
      Object.fromEntries([...secretHeadersFor(secrets, host, 443, true).values()].map((h) => [h.name, h.value]));
    for (const host of ['api.example.com', 'www.example.com', 'x.eu.example.com', 'api.eu.example.com']) {
      expect([host, e2bHeaders(host)]).toEqual([host, proxyHeaders(host)]);
    }
  });
});

describe('e2bPolicyProblems', () => {
  it('a clean policy has none', () => {
    expect(e2bPolicyProblems(WHOSE, policy('none'))).toEqual([]);
    expect(e2bPolicyProblems(WHOSE, policy('all', ['10.0.0.0/8'], ['8.8.8.8', '192.168.0.0/16']))).toEqual([]);
    expect(
      e2bPolicyProblems(WHOSE, policy('allowlist', ['pypi.org', '*.github.com', '10.1.0.0/16'], ['10.2.0.0/16'])),
    ).toEqual([]);
    // A name denied that nothing allows is denied anyway.
    expect(e2bPolicyProblems(WHOSE, policy('allowlist', ['pypi.org', '*.github.com'], ['evil.example']))).toEqual([]);
    expect(e2bPolicyProblems(WHOSE, policy('allowlist', ['*.github.com'], ['github.com']))).toEqual([]);
  });

  it('refuses ports, on allow and deny entries alike', () => {
    expect(e2bPolicyProblems(WHOSE, policy('allowlist', ['pypi.org:443', '10.0.0.0/8:22'], ['9.9.9.9:53']))).toEqual([
      `${WHOSE}: "pypi.org:443" has a port, and E2B's egress rules have none`,
      `${WHOSE}: "10.0.0.0/8:22" has a port, and E2B's egress rules have none`,
      `${WHOSE}: "9.9.9.9:53" has a port, and E2B's egress rules have none`,
    ]);
  });

  it('refuses a deny by name under all', () => {
    expect(e2bPolicyProblems(WHOSE, policy('all', [], ['evil.example', '*.evil.example', '8.8.8.8']))).toEqual([
      `${WHOSE}: "evil.example" denies a name, and E2B denies only IPs and ranges`,
      `${WHOSE}: "*.evil.example" denies a name, and E2B denies only IPs and ranges`,
    ]);
  });

  it('refuses, under allowlist, a deny by name that an allow entry allows', () => {
    for (const [allow, deny] of [
      ['*.github.com', 'gist.github.com'],
      ['*.github.com', 'a.b.github.com'],
      ['*.github.com', '*.api.github.com'],
      ['*.github.com', '*.github.com'],
      ['*.github.com', '*.com'],
      ['api.github.com', 'api.github.com'],
      ['api.github.com', '*.github.com'],
    ] as const) {
      expect([allow, deny, e2bPolicyProblems(WHOSE, policy('allowlist', [allow], [deny]))]).toEqual([
        allow,
        deny,
        [`${WHOSE}: "${deny}" denies a name an allow entry allows, and on E2B an allow entry wins`],
      ]);
    }
  });

  it('refuses a deny range that overlaps an allow range, in either mode', () => {
    for (const mode of ['allowlist', 'all'] as const) {
      expect(e2bPolicyProblems('MCP_SANDBOX_POLICY_FILE', policy(mode, ['10.0.0.0/8'], ['10.1.0.0/16']))).toEqual([
        'MCP_SANDBOX_POLICY_FILE: "10.1.0.0/16" overlaps the allow entry "10.0.0.0/8", and on E2B an allow entry wins',
      ]);
      expect(e2bPolicyProblems(WHOSE, policy(mode, ['10.1.2.3'], ['10.0.0.0/8']))).toEqual([
        `${WHOSE}: "10.0.0.0/8" overlaps the allow entry "10.1.2.3", and on E2B an allow entry wins`,
      ]);
    }
  });
});

describe('e2bSecretProblems', () => {
  it('refuses a secret host with a port, naming the secret and never the value', () => {
    const problems = e2bSecretProblems([
      secret('gh', ['api.github.com', 'uploads.github.com:8443'], 'Authorization', 'Bearer value-0123456789'),
      secret('npm', ['*.npmjs.org:443'], 'Authorization', 'Bearer value-0123456789'),
    ]);
    expect(problems).toEqual([
      expect.stringMatching(/^MCP_SANDBOX_SECRETS_FILE: secret "gh": "uploads\.github\.com:8443" has a port/),
      expect.stringMatching(/^MCP_SANDBOX_SECRETS_FILE: secret "npm": "\*\.npmjs\.org:443" has a port/),
    ]);
    expect(problems.join('\n')).not.toContain('value-0123456789');
  });

  it('has none for hosts without a port', () => {
    expect(e2bSecretProblems([secret('gh', ['api.github.com', '*.github.com'], 'Authorization', 'x')])).toEqual([]);
    expect(e2bSecretProblems([])).toEqual([]);
  });
});
