import { parseEntry } from '../../../functions/mcp/egress/policy';
import {
  parseSecretHost,
  type SandboxSecret,
  type SecretHost,
  secretDomains,
  secretHeadersFor,
  summarizeSecrets,
} from '../../../functions/mcp/egress/secrets';

const host = (text: string): SecretHost => {
  const parsed = parseSecretHost(text);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
};
const secret = (name: string, hosts: string[], header: string, value: string): SandboxSecret => ({
  name,
  hosts: hosts.map(host),
  header,
  value,
});
/** The headers a request gets, as `name: value` by lower-case name. */
const headersOf = (secrets: readonly SandboxSecret[], name: string, port: number, tls: boolean) =>
  Object.fromEntries(
    [...secretHeadersFor(secrets, name, port, tls)].map(([key, { name: header, value }]) => [
      key,
      `${header}: ${value}`,
    ]),
  );

describe('parseSecretHost', () => {
  it('reads a name, a wildcard and a port, lower-cased, a final dot dropped', () => {
    expect(parseSecretHost('api.github.com')).toEqual({ host: 'api.github.com' });
    expect(parseSecretHost(' API.GitHub.com ')).toEqual({ host: 'api.github.com' });
    expect(parseSecretHost('api.github.com.')).toEqual({ host: 'api.github.com' });
    expect(parseSecretHost('*.github.com')).toEqual({ host: '*.github.com' });
    expect(parseSecretHost('api.example.com:8443')).toEqual({ host: 'api.example.com', port: 8443 });
    expect(parseSecretHost('*.example.com:443')).toEqual({ host: '*.example.com', port: 443 });
    expect(parseSecretHost('my_service.internal.example')).toEqual({ host: 'my_service.internal.example' });
  });

  it('refuses IP addresses, brackets, names without a dot, bad ports and bad wildcards', () => {
    for (const text of [
      '1.2.3.4',
      '1.2.3.4:443',
      '127.1',
      '10.0.0.1.',
      '::1',
      '2001:db8::1',
      '[2001:db8::1]',
      '[2001:db8::1]:443',
      '[api.example.com]:443',
      '[api.example.com',
      'localhost',
      'localhost:443',
      '*.com',
      '*',
      '*.*.example.com',
      'api.*.example.com',
      '**.example.com',
      '-api.example.com',
      'api..example.com',
      'api.example.com:0',
      'api.example.com:65536',
      'api.example.com:',
      'api.example.com:https',
      'api example.com',
      '',
    ]) {
      expect([text, typeof parseSecretHost(text)]).toEqual([text, 'string']);
    }
    expect(parseSecretHost('1.2.3.4')).toContain('not an IP address');
    expect(parseSecretHost('api.example.com:99999')).toContain('port that is not 1-65535');
  });

  it('refuses other spellings of an IPv4 address: a last label that is a number, as policy entries do', () => {
    // A URL parser reads a host whose last label is a number as an IPv4 address (new URL('http://0x7f.0.0.1/')
    // is 127.0.0.1), or refuses it; policy.ts's parseEntry refuses such a name too.
    expect(new URL('http://0x7f.0.0.1/').hostname).toBe('127.0.0.1');
    for (const text of ['0x7f.0.0.1', '0x7f.1', 'example.123']) {
      expect([text, typeof parseEntry(text)]).toEqual([text, 'string']);
      expect([text, typeof parseSecretHost(text)]).toEqual([text, 'string']);
    }
  });
});

describe('secretHeadersFor', () => {
  const secrets = [
    secret('plain', ['api.example.com'], 'Authorization', 'Bearer one'),
    secret('ported', ['alt.example.com:8443'], 'X-Api-Key', 'key-two'),
    secret('wild', ['*.wild.example'], 'X-Wild', 'three'),
  ];

  it('without a port: 443 through CONNECT, 80 for plain HTTP, and no other', () => {
    expect(headersOf(secrets, 'api.example.com', 443, true)).toEqual({ authorization: 'Authorization: Bearer one' });
    expect(headersOf(secrets, 'api.example.com', 80, false)).toEqual({ authorization: 'Authorization: Bearer one' });
    expect(headersOf(secrets, 'api.example.com', 80, true)).toEqual({});
    expect(headersOf(secrets, 'api.example.com', 443, false)).toEqual({});
    expect(headersOf(secrets, 'api.example.com', 8443, true)).toEqual({});
  });

  it('with a port: that port only, through CONNECT or plain', () => {
    expect(headersOf(secrets, 'alt.example.com', 8443, true)).toEqual({ 'x-api-key': 'X-Api-Key: key-two' });
    expect(headersOf(secrets, 'alt.example.com', 8443, false)).toEqual({ 'x-api-key': 'X-Api-Key: key-two' });
    expect(headersOf(secrets, 'alt.example.com', 443, true)).toEqual({});
    expect(headersOf(secrets, 'alt.example.com', 80, false)).toEqual({});
  });

  it('a wildcard matches subdomains at any depth, not the apex nor a look-alike', () => {
    expect(headersOf(secrets, 'a.wild.example', 443, true)).toEqual({ 'x-wild': 'X-Wild: three' });
    expect(headersOf(secrets, 'a.b.c.wild.example', 443, true)).toEqual({ 'x-wild': 'X-Wild: three' });
    expect(headersOf(secrets, 'wild.example', 443, true)).toEqual({});
    expect(headersOf(secrets, 'notwild.example', 443, true)).toEqual({});
    expect(headersOf(secrets, 'a.wild.example.evil.test', 443, true)).toEqual({});
  });

  it('an exact name matches only itself', () => {
    expect(headersOf(secrets, 'x.api.example.com', 443, true)).toEqual({});
    expect(headersOf(secrets, 'example.com', 443, true)).toEqual({});
    expect(headersOf(secrets, 'api.example.com.evil.test', 443, true)).toEqual({});
  });

  it('every matching secret adds its header; the last one for a header wins, names compared in any case', () => {
    const layered = [
      secret('org', ['*.example.com'], 'x-org', 'org-value'),
      secret('first', ['api.example.com'], 'authorization', 'Bearer first'),
      secret('second', ['*.example.com'], 'AUTHORIZATION', 'Bearer second'),
      secret('other', ['other.example.com'], 'Authorization', 'Bearer other'),
    ];
    expect(headersOf(layered, 'api.example.com', 443, true)).toEqual({
      'x-org': 'x-org: org-value',
      authorization: 'AUTHORIZATION: Bearer second',
    });
    expect(headersOf(layered, 'other.example.com', 443, true)).toEqual({
      'x-org': 'x-org: org-value',
      authorization: 'Authorization: Bearer other',
    });
    expect(secretHeadersFor([], 'api.example.com', 443, true).size).toBe(0);
  });
});

describe('secretDomains and summarizeSecrets', () => {
  const secrets = [
    secret('gh', ['api.github.com', '*.github.com:443', 'uploads.github.com:8443'], 'Authorization', 'ghp_SECRET_1'),
    secret('npm', ['registry.npmjs.org'], 'Authorization', 'npm_SECRET_2'),
    secret('again', ['api.github.com'], 'X-Extra', 'SECRET_3'),
  ];

  it('secretDomains: each host once, without "*." or port', () => {
    expect(secretDomains(secrets).sort()).toEqual(
      ['api.github.com', 'github.com', 'registry.npmjs.org', 'uploads.github.com'].sort(),
    );
    expect(secretDomains([])).toEqual([]);
  });

  it('summarizeSecrets: name, hosts as written back, header; never the value', () => {
    const summary = summarizeSecrets(secrets);
    expect(summary).toEqual([
      {
        name: 'gh',
        hosts: ['api.github.com', '*.github.com:443', 'uploads.github.com:8443'],
        header: 'Authorization',
      },
      { name: 'npm', hosts: ['registry.npmjs.org'], header: 'Authorization' },
      { name: 'again', hosts: ['api.github.com'], header: 'X-Extra' },
    ]);
    expect(JSON.stringify(summary)).not.toMatch(/SECRET_/);
  });
});
