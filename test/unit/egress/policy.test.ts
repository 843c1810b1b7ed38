import { embeddedIpv4, formatIp, isSpecial, parseIp } from '../../../functions/mcp/egress/addresses';
import {
  type EgressEntry,
  type EgressPolicy,
  formatEntry,
  judgeAddress,
  judgeName,
  narrow,
  parseEntry,
  toPolicy,
} from '../../../functions/mcp/egress/policy';

const entries = (...texts: string[]): EgressEntry[] =>
  texts.map((text) => {
    const entry = parseEntry(text);
    if (typeof entry === 'string') throw new Error(entry);
    return entry;
  });
const ip = (text: string): Uint8Array => {
  const bytes = parseIp(text);
  if (bytes === undefined) throw new Error(text);
  return bytes;
};
const reach = (policy: EgressPolicy, name: string | undefined, address: string, port = 443): boolean =>
  judgeAddress(policy, name, ip(address), port).ok;

describe('addresses', () => {
  it('parses IPv6 with embedded IPv4 and finds the IPv4 inside each IPv6 form', () => {
    expect(formatIp(ip('::ffff:127.0.0.1'))).toBe('::ffff:7f00:1');
    for (const form of ['::ffff:127.0.0.1', '::ffff:7f00:1', '::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::'])
      expect(formatIp(embeddedIpv4(ip(form)) as Uint8Array)).toBe('127.0.0.1');
    expect(embeddedIpv4(ip('::1'))).toBeUndefined();
    expect(embeddedIpv4(ip('2606:4700::1111'))).toBeUndefined();
    expect(parseIp('fe80::1%eth0')).toBeUndefined();
    expect(parseIp('127.1')).toBeUndefined();
  });

  it('counts private, loopback, link-local and metadata addresses as special, in every spelling', () => {
    for (const special of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.100.100.200',
      '0.0.0.0',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      '2002:a9fe:a9fe::1',
      '::a9fe:a9fe',
    ])
      expect([special, isSpecial(ip(special))]).toEqual([special, true]);
    for (const open of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '::ffff:1.1.1.1'])
      expect([open, isSpecial(ip(open))]).toEqual([open, false]);
  });
});

describe('entries', () => {
  it('reads domains, wildcards, addresses and ranges with optional ports, and writes them back', () => {
    for (const text of [
      'pypi.org',
      '*.github.com:443',
      '10.0.0.0/8',
      '1.2.3.4:22',
      '[2001:db8::1]:22',
      '2001:db8::/32',
    ])
      expect(formatEntry(entries(text)[0] as EgressEntry)).toBe(text);
    expect(formatEntry(entries('PyPI.org.')[0] as EgressEntry)).toBe('pypi.org');
    expect(formatEntry(entries('10.1.2.3/8')[0] as EgressEntry)).toBe('10.0.0.0/8');
  });

  it('says what is wrong with an entry that is none of these', () => {
    for (const bad of [
      '*',
      'a..b',
      'host:0',
      'host:70000',
      '-x.com',
      '1.2.3',
      'http://x.com',
      '[pypi.org]',
      '10.0.0.0/33',
    ])
      expect(typeof parseEntry(bad)).toBe('string');
  });
});

describe('judging a destination', () => {
  const allowlist = toPolicy(
    'allowlist',
    entries('pypi.org', '*.github.com:443', '1.1.1.0/24'),
    entries('evil.github.com'),
  );
  const all = toPolicy('all', entries('10.9.0.0/16'), entries('8.8.8.8', 'bad.example'));

  it('with allowlist, reaches what the list names, by name or by address, and at its port only', () => {
    expect(reach(allowlist, 'pypi.org', '151.101.0.223', 443)).toBe(true);
    expect(reach(allowlist, 'pypi.org', '151.101.0.223', 8080)).toBe(true);
    expect(reach(allowlist, 'api.github.com', '140.82.112.6', 443)).toBe(true);
    expect(reach(allowlist, 'api.github.com', '140.82.112.6', 22)).toBe(false);
    expect(reach(allowlist, 'github.com', '140.82.112.4', 443)).toBe(false);
    expect(reach(allowlist, undefined, '1.1.1.1', 53)).toBe(true);
    // A name is allowed by name only: one the list does not name is never looked up.
    expect(reach(allowlist, 'anything.test', '1.1.1.9', 80)).toBe(false);
    expect(judgeName(allowlist, 'exfiltrate.attacker.test', 443)).toEqual({
      ok: false,
      rule: 'exfiltrate.attacker.test:443 is not in the allow list',
    });
    expect(reach(allowlist, 'example.com', '93.184.216.34')).toBe(false);
    expect(reach(allowlist, undefined, '151.101.0.223')).toBe(false);
  });

  it('denies what a deny entry names, even where an allow entry covers it, and says which entry', () => {
    const verdict = judgeName(allowlist, 'evil.github.com', 443);
    expect(verdict).toEqual({ ok: false, rule: expect.stringContaining('deny entry evil.github.com') });
    expect(reach(all, undefined, '8.8.8.8')).toBe(false);
    expect(reach(all, undefined, '::ffff:8.8.8.8')).toBe(false);
    expect(reach(all, 'bad.example', '93.184.216.34')).toBe(false);
    expect(reach(all, 'good.example', '93.184.216.34')).toBe(true);
  });

  it('never opens a special address that no IP or CIDR entry names, whatever name leads there', () => {
    for (const policy of [allowlist, all]) {
      expect(reach(policy, 'pypi.org', '127.0.0.1')).toBe(false);
      expect(reach(policy, 'pypi.org', '169.254.169.254')).toBe(false);
      expect(reach(policy, 'pypi.org', '::ffff:127.0.0.1')).toBe(false);
      expect(reach(policy, undefined, '100.100.100.200')).toBe(false);
    }
    expect(judgeAddress(all, undefined, ip('10.1.0.1'), 80)).toEqual({
      ok: false,
      rule: expect.stringContaining('10.1.0.1 is a private, loopback, link-local or metadata address'),
    });
    expect(reach(all, 'db.internal', '10.9.3.4')).toBe(true);
    expect(reach(all, undefined, '::ffff:10.9.3.4')).toBe(true);
  });

  it('refuses everything with none', () => {
    const none = toPolicy('none', [], []);
    expect(judgeName(none, 'pypi.org', 443).ok).toBe(false);
    expect(reach(none, undefined, '1.1.1.1')).toBe(false);
  });
});

describe('narrowing the operator policy for a credential', () => {
  it('keeps only what both allow, the lower mode, and both deny lists', () => {
    const operator = toPolicy('allowlist', entries('*.github.com', 'pypi.org', '10.0.0.0/8'), entries('8.8.8.8'));
    const narrowed = narrow(operator, {
      mode: 'all',
      allow: entries('api.github.com:443', 'example.com', '10.1.0.0/16', '192.168.0.0/16'),
      deny: entries('1.1.1.1'),
    });
    expect(narrowed.mode).toBe('allowlist');
    expect(narrowed.allow.map(formatEntry)).toEqual(['api.github.com:443', '10.1.0.0/16']);
    expect(narrowed.deny.map(formatEntry)).toEqual(['8.8.8.8', '1.1.1.1']);
    expect(reach(narrowed, undefined, '10.2.0.1')).toBe(false);
    expect(reach(narrowed, undefined, '10.1.0.1')).toBe(true);
    expect(reach(narrowed, 'pypi.org', '151.101.0.223')).toBe(false);
  });

  it('never widens: a credential cannot name a special address the operator did not, nor raise the mode', () => {
    const operator = toPolicy('all', [], []);
    const narrowed = narrow(operator, { allow: entries('127.0.0.1', 'pypi.org') });
    expect(narrowed.mode).toBe('all');
    expect(reach(narrowed, undefined, '127.0.0.1')).toBe(false);
    expect(narrow(toPolicy('none', [], []), { mode: 'all' }).mode).toBe('none');
    const list = narrow(operator, { mode: 'allowlist', allow: entries('pypi.org', '169.254.169.254', '1.1.1.1') });
    expect(list.allow.map(formatEntry)).toEqual(['pypi.org', '1.1.1.1']);
    expect(reach(list, 'pypi.org', '151.101.0.223')).toBe(true);
    expect(reach(list, 'example.com', '93.184.216.34')).toBe(false);
    expect(narrow(operator, { mode: 'none' }).mode).toBe('none');
  });
});
