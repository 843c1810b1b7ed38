import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadEgressConfig, secretsFor } from '../../../functions/mcp/egress/egress-config';
import { type EgressMode, type EgressPolicy, parseEntry, toPolicy } from '../../../functions/mcp/egress/policy';
import { loadSecretsFile } from '../../../functions/mcp/egress/secrets-file';
import { toPrincipal, toSubjectPrincipal } from '../../../functions/mcp/principals';

/** A value no problem may ever show. */
const VALUE = 'sk-live-7f3a9c0d1e2b4f6a8c0e';
const ISSUER = 'https://issuer.example';

const policy = (mode: EgressMode, allow: string[] = [], deny: string[] = []): EgressPolicy => {
  const parse = (text: string) => {
    const entry = parseEntry(text);
    if (typeof entry === 'string') throw new Error(entry);
    return entry;
  };
  return toPolicy(mode, allow.map(parse), deny.map(parse));
};
const ALL = policy('all');

describe('MCP_SANDBOX_SECRETS_FILE', () => {
  let dir: string;
  let count = 0;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'secrets-file-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A new file holding `content` (JSON unless a string), with `mode`. */
  const fileOf = (content: unknown, mode = 0o600): string => {
    count += 1;
    const file = join(dir, `secrets-${count}.json`);
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    chmodSync(file, mode);
    return file;
  };
  const load = (content: unknown, operator: EgressPolicy = ALL, issuer?: string) => {
    const problems: string[] = [];
    const secrets = loadSecretsFile(fileOf(content), operator, problems, issuer === undefined ? {} : { issuer });
    return { secrets, problems };
  };
  /** The problems of one entry (`fields` over a valid one); none of them shows a value. */
  const problemsOf = (fields: Record<string, unknown>, operator: EgressPolicy = ALL): string[] => {
    const entry = { name: 'gh', hosts: ['api.github.com'], header: 'Authorization', value: VALUE, ...fields };
    const { problems } = load([entry], operator);
    for (const problem of problems) expect(problem).not.toContain(VALUE);
    if (typeof entry.value === 'string' && entry.value.length >= 8)
      for (const problem of problems) expect(problem).not.toContain(entry.value);
    return problems;
  };

  it('reads secrets with and without tokens and subjects, each for its principals', () => {
    const file = fileOf([
      { name: 'shared', hosts: ['api.github.com', '*.npmjs.org:443'], header: 'Authorization', value: 'Bearer all' },
      { name: 'ci-only', hosts: ['api.example.com'], header: 'X-Api-Key', value: 'ci-key', tokens: ['ci-0123456789'] },
      { name: 'alice-only', hosts: ['api.example.com'], header: 'X-User', value: 'alice-key', subjects: ['alice'] },
    ]);
    const problems: string[] = [];
    const config = loadEgressConfig({ MCP_SANDBOX_EGRESS: 'all', MCP_SANDBOX_SECRETS_FILE: ` ${file} ` }, problems, {
      issuer: ISSUER,
    });
    expect(problems).toEqual([]);
    expect(config.hiddenPaths).toContain(file);
    expect(config.secrets.map((s) => s.secret)).toEqual([
      {
        name: 'shared',
        hosts: [{ host: 'api.github.com' }, { host: '*.npmjs.org', port: 443 }],
        header: 'Authorization',
        value: 'Bearer all',
      },
      { name: 'ci-only', hosts: [{ host: 'api.example.com' }], header: 'X-Api-Key', value: 'ci-key' },
      { name: 'alice-only', hosts: [{ host: 'api.example.com' }], header: 'X-User', value: 'alice-key' },
    ]);
    const names = (principal: string) => secretsFor(config, principal).map((s) => s.name);
    expect(names(toPrincipal('ci-0123456789'))).toEqual(['shared', 'ci-only']);
    expect(names(toSubjectPrincipal(ISSUER, 'alice'))).toEqual(['shared', 'alice-only']);
    expect(names(toPrincipal('other-0123456789'))).toEqual(['shared']);
    expect(names(toSubjectPrincipal('https://other.example', 'alice'))).toEqual(['shared']);
    // A token is not its principal.
    expect(names('ci-0123456789')).toEqual(['shared']);
  });

  it('is optional: no file, no secrets', () => {
    const problems: string[] = [];
    const config = loadEgressConfig({ MCP_SANDBOX_EGRESS: 'all', MCP_SANDBOX_SECRETS_FILE: ' ' }, problems);
    expect(problems).toEqual([]);
    expect(config.secrets).toEqual([]);
    expect(config.hiddenPaths).toEqual([]);
  });

  it('refuses a file that group or others may read, naming chmod 600', () => {
    const entries = [{ name: 'gh', hosts: ['api.github.com'], header: 'Authorization', value: VALUE }];
    for (const mode of [0o644, 0o640, 0o604]) {
      const file = fileOf(entries, mode);
      const problems: string[] = [];
      expect(loadSecretsFile(file, ALL, problems, {})).toEqual([]);
      expect(problems).toEqual([`MCP_SANDBOX_SECRETS_FILE may be read by other users of this host: chmod 600 ${file}`]);
    }
    const problems: string[] = [];
    const config = loadEgressConfig(
      { MCP_SANDBOX_EGRESS: 'all', MCP_SANDBOX_SECRETS_FILE: fileOf(entries, 0o644) },
      problems,
    );
    expect(config.secrets).toEqual([]);
    expect(problems).toEqual([expect.stringContaining('chmod 600')]);
    // Owner-only modes are fine.
    expect(load(entries).problems).toEqual([]);
  });

  it('names a file it cannot read', () => {
    const problems: string[] = [];
    expect(loadSecretsFile(join(dir, 'missing.json'), ALL, problems, {})).toEqual([]);
    expect(problems).toEqual([expect.stringContaining('MCP_SANDBOX_SECRETS_FILE cannot be read (ENOENT)')]);
  });

  it('refuses a file that is not JSON, or not a list, or holds what is not an object, without showing it', () => {
    const broken = load(`[{"name": "gh", "value": "${VALUE}",]`);
    expect(broken.secrets).toEqual([]);
    expect(broken.problems).toEqual([expect.stringContaining('MCP_SANDBOX_SECRETS_FILE is not JSON')]);
    expect(broken.problems.join('\n')).not.toContain(VALUE);
    const object = load({ name: 'gh', hosts: ['api.github.com'], header: 'Authorization', value: VALUE });
    expect(object.secrets).toEqual([]);
    expect(object.problems).toEqual([expect.stringContaining('must hold a JSON list')]);
    expect(object.problems.join('\n')).not.toContain(VALUE);
    const items = load(['api.github.com', null, [VALUE]]);
    expect(items.secrets).toEqual([]);
    expect(items.problems).toEqual([
      'MCP_SANDBOX_SECRETS_FILE entry 1 must be an object',
      'MCP_SANDBOX_SECRETS_FILE entry 2 must be an object',
      'MCP_SANDBOX_SECRETS_FILE entry 3 must be an object',
    ]);
  });

  it('refuses an unknown field, naming it', () => {
    expect(problemsOf({ scope: 'all' })).toEqual(['MCP_SANDBOX_SECRETS_FILE entry 1: unknown field "scope"']);
  });

  it('refuses a bad or missing name, and a name used twice', () => {
    for (const name of ['', 'has space', '-leading', 'x'.repeat(65), 'slash/name', 42, undefined]) {
      expect(problemsOf({ name })).toEqual([expect.stringContaining('"name" must be letters, digits')]);
    }
    const entry = { hosts: ['api.github.com'], header: 'Authorization', value: VALUE };
    const { problems } = load([
      { name: 'gh', ...entry },
      { name: 'other', ...entry },
      { name: 'gh', ...entry },
    ]);
    expect(problems).toEqual(['MCP_SANDBOX_SECRETS_FILE entry 3: the name "gh" is used twice']);
  });

  it('refuses empty or malformed hosts: none, not strings, an IP address, a bracket, a bad port', () => {
    for (const hosts of [[], 'api.github.com', [42], undefined]) {
      expect(problemsOf({ hosts })).toEqual([expect.stringContaining('"hosts" must be a non-empty list')]);
    }
    for (const text of ['93.184.215.14', '93.184.215.14:443', '2001:db8::1', 'localhost']) {
      expect(problemsOf({ hosts: ['api.github.com', text] })).toEqual([
        expect.stringContaining(`"${text}": a secret is for a DNS name`),
      ]);
    }
    for (const text of ['[2001:db8::1]', '[2001:db8::1]:443', '[api.github.com]']) {
      expect(problemsOf({ hosts: [text] })).toEqual([
        expect.stringContaining(`"${text}" is not a host name with an optional :port`),
      ]);
    }
    for (const text of ['api.github.com:0', 'api.github.com:65536', 'api.github.com:x']) {
      expect(problemsOf({ hosts: [text] })).toEqual([expect.stringContaining('has a port that is not 1-65535')]);
    }
  });

  it('refuses a header that frames or routes the request, or is not a header name', () => {
    for (const header of [
      'Host',
      'host',
      'Content-Length',
      'Transfer-Encoding',
      'TRANSFER-ENCODING',
      'Connection',
      'Keep-Alive',
      'Upgrade',
      'TE',
      'Trailer',
      'Proxy-Connection',
      'Proxy-Authorization',
      'Expect',
    ]) {
      expect(problemsOf({ header })).toEqual([expect.stringContaining('frames or routes the request')]);
    }
    for (const header of ['', 'X Api Key', 'X-Key:', 'X-Key\r\nX-Evil', 'Ünicode', 'x'.repeat(65), 7, undefined]) {
      expect(problemsOf({ header })).toEqual([expect.stringContaining('MCP_SANDBOX_SECRETS_FILE entry 1: "')]);
    }
    // Headers that are not framing are fine, in any spelling.
    for (const header of ['Authorization', 'x-api-key', 'PRIVATE-TOKEN', 'X-Goog-Api-Key']) {
      expect(problemsOf({ header })).toEqual([]);
    }
  });

  it('refuses a value a header cannot carry, and never shows it', () => {
    const bad = [
      `${VALUE}\r\nX-Evil: 1`,
      `${VALUE}\nX-Evil: 1`,
      `${VALUE}\rX`,
      `${VALUE}\u0000`,
      `${VALUE}\u0007tail`,
      `${VALUE}\u007f`,
      `${VALUE}\ttail`,
      `${VALUE}é`,
      ` ${VALUE}`,
      `${VALUE} `,
      `${VALUE}${'x'.repeat(8192)}`,
    ];
    for (const value of bad) {
      const problems = problemsOf({ value });
      expect(problems).toEqual([expect.stringMatching(/^MCP_SANDBOX_SECRETS_FILE entry 1: "value": /)]);
    }
    expect(problemsOf({ value: '' })).toEqual(['MCP_SANDBOX_SECRETS_FILE entry 1: "value": the value is empty']);
    for (const value of [42, null, undefined, [VALUE], { VALUE }]) {
      expect(problemsOf({ value })).toEqual(['MCP_SANDBOX_SECRETS_FILE entry 1: "value": "value" must be a string']);
    }
    // Spaces inside, and every visible character, are fine.
    expect(problemsOf({ value: `Bearer ${VALUE} !"#~` })).toEqual([]);
  });

  it('names every problem of every entry at once, and none shows a value', () => {
    const values = ['first-value-0123456789', 'second-value-0123456789', 'third-value-0123456789'];
    const { secrets, problems } = load([
      { name: 'bad name', hosts: ['10.0.0.1'], header: 'Host', value: values[0], extra: true },
      { name: 'ok', hosts: ['api.github.com'], header: 'Authorization', value: `${values[1]}\r\n` },
      { name: 'fine', hosts: ['api.github.com'], header: 'Authorization', value: values[2], tokens: 'one' },
    ]);
    expect(secrets).toEqual([]);
    expect(problems).toEqual(
      expect.arrayContaining([
        'MCP_SANDBOX_SECRETS_FILE entry 1: unknown field "extra"',
        expect.stringContaining('entry 1: "name"'),
        expect.stringContaining('entry 1: "10.0.0.1"'),
        expect.stringContaining('entry 1: "Host" frames or routes the request'),
        expect.stringContaining('entry 2: "value"'),
        'MCP_SANDBOX_SECRETS_FILE entry 3: "tokens" must be a list of non-empty strings',
      ]),
    );
    expect(problems).toHaveLength(6);
    for (const value of values) expect(problems.join('\n')).not.toContain(value);
  });

  it("refuses a secret for a host the operator's policy refuses, naming the rule", () => {
    const allowlist = policy('allowlist', ['api.github.com', '*.npmjs.org', 'uploads.example.com:8443']);
    expect(problemsOf({ hosts: ['api.github.com', 'registry.npmjs.org', '*.npmjs.org'] }, allowlist)).toEqual([]);
    expect(problemsOf({ hosts: ['uploads.example.com:8443'] }, allowlist)).toEqual([]);
    expect(problemsOf({ hosts: ['api.github.com', 'gist.github.com'] }, allowlist)).toEqual([
      'MCP_SANDBOX_SECRETS_FILE entry 1 ("gh"): gist.github.com is refused by the policy: ' +
        'gist.github.com:443 is not in the allow list',
    ]);
    expect(problemsOf({ hosts: ['*.github.com'] }, allowlist)).toEqual([
      expect.stringContaining('*.github.com is refused by the policy'),
    ]);
    expect(problemsOf({ hosts: ['uploads.example.com'] }, allowlist)).toEqual([
      expect.stringContaining('uploads.example.com:443 is not in the allow list'),
    ]);
    const all = policy('all', [], ['evil.example', '*.blocked.example']);
    expect(problemsOf({ hosts: ['evil.example'] }, all)).toEqual([
      'MCP_SANDBOX_SECRETS_FILE entry 1 ("gh"): evil.example is refused by the policy: ' +
        'evil.example is denied (deny entry evil.example)',
    ]);
    expect(problemsOf({ hosts: ['*.blocked.example'] }, all)).toEqual([
      expect.stringContaining('(deny entry *.blocked.example)'),
    ]);
    expect(problemsOf({ hosts: ['good.example'] }, all)).toEqual([]);
  });

  it('refuses a secrets file with MCP_SANDBOX_EGRESS=none', () => {
    const file = fileOf([{ name: 'gh', hosts: ['api.github.com'], header: 'Authorization', value: VALUE }]);
    const problems: string[] = [];
    const config = loadEgressConfig({ MCP_SANDBOX_SECRETS_FILE: file }, problems);
    expect(config.secrets).toEqual([]);
    expect(problems).toEqual([expect.stringContaining('MCP_SANDBOX_SECRETS_FILE needs MCP_SANDBOX_EGRESS=allowlist')]);
    expect(problems.join('\n')).not.toContain(VALUE);
    const direct: string[] = [];
    expect(loadSecretsFile(file, policy('none'), direct, {})).toEqual([]);
    expect(direct).toEqual(problems);
  });

  it('refuses subjects without an issuer, and tokens or subjects that are not lists of strings', () => {
    expect(problemsOf({ subjects: ['alice'] })).toEqual([
      'MCP_SANDBOX_SECRETS_FILE entry 1: "subjects" are OAuth subjects and need MCP_OAUTH_ISSUER',
    ]);
    for (const tokens of ['one', [''], [1], {}]) {
      expect(problemsOf({ tokens })).toEqual([
        'MCP_SANDBOX_SECRETS_FILE entry 1: "tokens" must be a list of non-empty strings',
      ]);
    }
    const { secrets, problems } = load(
      [{ name: 'gh', hosts: ['api.github.com'], header: 'Authorization', value: VALUE, subjects: ['alice'] }],
      ALL,
      ISSUER,
    );
    expect(problems).toEqual([]);
    expect(secrets).toHaveLength(1);
    expect([...(secrets[0]?.principals ?? [])]).toEqual([toSubjectPrincipal(ISSUER, 'alice')]);
  });

  it('takes a secret without a port when the policy reaches its host on either default port', () => {
    expect(problemsOf({ hosts: ['api.github.com'] }, policy('allowlist', ['api.github.com:80']))).toEqual([]);
    expect(problemsOf({ hosts: ['api.github.com'] }, policy('allowlist', ['api.github.com:8080']))).toEqual([
      expect.stringContaining('api.github.com is refused by the policy'),
    ]);
  });

  it('does not quote a header back that holds more than a name (a whole header line, value and all)', () => {
    const problems = problemsOf({ header: `Authorization: Bearer ${VALUE}` });
    expect(problems).toEqual([expect.stringContaining('"header" is not an HTTP header name')]);
  });
});
