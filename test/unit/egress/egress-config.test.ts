import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadConfig } from '../../../functions/mcp/config';
import { policyFor } from '../../../functions/mcp/egress/egress-config';
import { formatEntry } from '../../../functions/mcp/egress/policy';
import { toPrincipal } from '../../../functions/mcp/principals';
import { ConfigError } from '../../../functions/mcp/errors';

const problemsOf = (env: Record<string, string>): readonly string[] => {
  try {
    loadConfig({ SANDBOX_BACKEND: 'local', ...env }, { asRoot: true });
    return [];
  } catch (err: unknown) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
};

describe('egress settings', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'egress-config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('defaults to no egress, and reads the mode, the lists and the resolver', () => {
    const plain = loadConfig({}, { asRoot: true });
    expect(plain.egress.operator.mode).toBe('none');
    const config = loadConfig(
      {
        MCP_SANDBOX_EGRESS: 'allowlist',
        MCP_SANDBOX_ALLOW: 'pypi.org, *.github.com:443 ,10.0.0.0/8',
        MCP_SANDBOX_DENY: 'gist.github.com',
        MCP_SANDBOX_RESOLVER: '127.0.0.1:5353,[::1]:53,9.9.9.9',
      },
      { asRoot: true },
    );
    expect(config.egress.operator.allow.map(formatEntry)).toEqual(['pypi.org', '*.github.com:443', '10.0.0.0/8']);
    expect(config.egress.operator.deny.map(formatEntry)).toEqual(['gist.github.com']);
    expect(config.egress.resolvers).toEqual(['127.0.0.1:5353', '[::1]:53', '9.9.9.9']);
  });

  it('names every problem at once', () => {
    const problems = problemsOf({
      MCP_SANDBOX_EGRESS: 'some',
      MCP_SANDBOX_ALLOW: 'pypi.org:99999,ok.org',
      MCP_SANDBOX_RESOLVER: 'dns.google',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('MCP_SANDBOX_EGRESS must be none, allowlist or all'),
        expect.stringContaining('"pypi.org:99999": a port is a number from 1 to 65535'),
        expect.stringContaining('MCP_SANDBOX_RESOLVER must list DNS servers'),
      ]),
    );
    expect(problemsOf({ MCP_SANDBOX_EGRESS: 'allowlist' })).toEqual([
      expect.stringContaining('MCP_SANDBOX_EGRESS=allowlist needs MCP_SANDBOX_ALLOW'),
    ]);
    expect(problemsOf({ MCP_SANDBOX_ALLOW: 'pypi.org' })).toEqual([
      expect.stringContaining('need MCP_SANDBOX_EGRESS=allowlist or all'),
    ]);
  });

  it('refuses what it could not enforce locally: the host network, or no isolation', () => {
    expect(problemsOf({ MCP_SANDBOX_EGRESS: 'all', LOCAL_SANDBOX_NETWORK: 'on' })).toEqual([
      expect.stringContaining('LOCAL_SANDBOX_NETWORK=on'),
    ]);
    expect(problemsOf({ MCP_SANDBOX_EGRESS: 'all', LOCAL_SANDBOX_ISOLATION: 'none' })).toEqual([
      expect.stringContaining('MCP_SANDBOX_EGRESS needs a sandbox network of its own'),
    ]);
  });

  it("refuses at start-up what E2B's egress rules cannot say, and takes what they can", () => {
    const e2b = { SANDBOX_BACKEND: 'e2b', E2B_API_KEY: 'e2b_0123456789abcdef' };
    expect(
      problemsOf({
        ...e2b,
        MCP_SANDBOX_EGRESS: 'allowlist',
        MCP_SANDBOX_ALLOW: 'pypi.org:443,*.github.com,10.1.0.0/16',
        MCP_SANDBOX_DENY: 'gist.github.com,10.1.2.0/24',
      }),
    ).toEqual([
      expect.stringContaining('"pypi.org:443" has a port'),
      expect.stringContaining('"gist.github.com" denies a name an allow entry allows'),
      expect.stringContaining('"10.1.2.0/24" overlaps the allow entry "10.1.0.0/16"'),
    ]);
    expect(problemsOf({ ...e2b, MCP_SANDBOX_EGRESS: 'all', MCP_SANDBOX_DENY: 'example.com' })).toEqual([
      expect.stringContaining('"example.com" denies a name, and E2B denies only IPs and ranges'),
    ]);
    expect(
      problemsOf({
        ...e2b,
        MCP_SANDBOX_EGRESS: 'allowlist',
        MCP_SANDBOX_ALLOW: 'pypi.org,*.github.com',
        MCP_SANDBOX_DENY: '203.0.113.0/24',
      }),
    ).toEqual([]);
  });

  it('narrows the policy of the credentials a private policy file names, and refuses one others may read', () => {
    const file = join(dir, 'policy.json');
    writeFileSync(file, JSON.stringify([{ tokens: ['ci-token-0123456789'], allow: ['pypi.org'] }]), { mode: 0o600 });
    const config = loadConfig(
      {
        MCP_SANDBOX_EGRESS: 'all',
        MCP_SANDBOX_POLICY_FILE: file,
        MCP_AUTH_TOKENS: 'ci-token-0123456789,other-1234567890',
      },
      { asRoot: true },
    );
    expect(policyFor(config.egress, toPrincipal('ci-token-0123456789')).mode).toBe('allowlist');
    expect(policyFor(config.egress, toPrincipal('other-1234567890')).mode).toBe('all');
    expect(config.local.hiddenPaths).toContain(file);
    chmodSync(file, 0o644);
    expect(problemsOf({ MCP_SANDBOX_EGRESS: 'all', MCP_SANDBOX_POLICY_FILE: file })).toEqual([
      expect.stringContaining(`MCP_SANDBOX_POLICY_FILE may be read by other users of this host: chmod 600 ${file}`),
    ]);
    writeFileSync(join(dir, 'bad.json'), JSON.stringify([{ tokens: 'x', egress: 'wide', extra: 1 }]), { mode: 0o600 });
    expect(problemsOf({ MCP_SANDBOX_EGRESS: 'all', MCP_SANDBOX_POLICY_FILE: join(dir, 'bad.json') })).toEqual(
      expect.arrayContaining([
        expect.stringContaining('unknown field "extra"'),
        expect.stringContaining('"tokens" must be a list'),
      ]),
    );
  });
});
