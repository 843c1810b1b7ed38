/**
 * Who a request comes from (functions/mcp/http/client-address.ts): the socket's peer, or behind a trusted proxy
 * (MCP_TRUSTED_PROXIES) the rightmost forwarded address that is not itself a trusted proxy; and the setting's checks.
 */
import type { IncomingMessage } from 'node:http';

import { loadConfig } from '../../../functions/mcp/config';
import { ConfigError } from '../../../functions/mcp/errors';
import { createClientAddresses, toAddress } from '../../../functions/mcp/http/client-address';

/** The parts of a request that clientOf reads. */
function requestFrom(remoteAddress: string, headers: Record<string, string> = {}): IncomingMessage {
  return { socket: { remoteAddress }, headers } as unknown as IncomingMessage;
}

const trustedProxies = (value: string): readonly string[] => loadConfig({ MCP_TRUSTED_PROXIES: value }).trustedProxies;

describe('toAddress', () => {
  it.each([
    ['192.0.2.7', '192.0.2.7'],
    [' 192.0.2.7 ', '192.0.2.7'],
    ['192.0.2.7:4711', '192.0.2.7'],
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['::FFFF:C000:0207', '192.0.2.7'],
    ['2001:DB8:0:0::17', '2001:db8::17'],
    ['[2001:db8::17]:4711', '2001:db8::17'],
    ['"[2001:db8::17]:4711"', '2001:db8::17'],
  ])('reads %j as %j', (raw, address) => {
    expect(toAddress(raw)).toBe(address);
  });

  it.each(['unknown', '_hidden', '', 'example.com', '300.1.1.1', 'fe80::1%eth0', '[::1'])(
    'reads %j as no address',
    (raw) => {
      expect(toAddress(raw)).toBeUndefined();
    },
  );
});

describe('clientOf', () => {
  const clients = createClientAddresses({ trustedProxies: trustedProxies('10.0.0.0/8, 2001:db8:aa::/48, 192.0.2.1') });

  it('is the socket peer for a peer that is not a trusted proxy, whatever it forwards', () => {
    expect(clients.clientOf(requestFrom('198.51.100.9'))).toBe('198.51.100.9');
    expect(clients.clientOf(requestFrom('198.51.100.9', { 'x-forwarded-for': '203.0.113.5' }))).toBe('198.51.100.9');
    expect(clients.clientOf(requestFrom('::ffff:198.51.100.9', { forwarded: 'for=203.0.113.5' }))).toBe('198.51.100.9');
  });

  it('is the rightmost forwarded address that is not a trusted proxy, never the leftmost the client wrote', () => {
    expect(clients.clientOf(requestFrom('10.1.2.3', { 'x-forwarded-for': '203.0.113.5' }))).toBe('203.0.113.5');
    // The client wrote "1.2.3.4" itself; the proxy appended the address it saw.
    expect(clients.clientOf(requestFrom('10.1.2.3', { 'x-forwarded-for': '1.2.3.4, 203.0.113.5' }))).toBe(
      '203.0.113.5',
    );
    // Two trusted proxies in a row (10.9.9.9 forwarded to 10.1.2.3).
    expect(clients.clientOf(requestFrom('10.1.2.3', { 'x-forwarded-for': '1.2.3.4, 203.0.113.5, 10.9.9.9' }))).toBe(
      '203.0.113.5',
    );
    expect(clients.clientOf(requestFrom('2001:db8:aa::1', { 'x-forwarded-for': '2001:db8:bb::2' }))).toBe(
      '2001:db8:bb::2',
    );
  });

  it('reads Forwarded only without X-Forwarded-For', () => {
    expect(
      clients.clientOf(
        requestFrom('192.0.2.1', { forwarded: 'for=1.2.3.4, for="[2001:db8:cafe::17]:4711";proto=https' }),
      ),
    ).toBe('2001:db8:cafe::17');
    expect(clients.clientOf(requestFrom('192.0.2.1', { forwarded: 'proto=https;for=203.0.113.5;by=192.0.2.1' }))).toBe(
      '203.0.113.5',
    );
    expect(
      clients.clientOf(requestFrom('192.0.2.1', { forwarded: 'for=1.2.3.4', 'x-forwarded-for': '203.0.113.5' })),
    ).toBe('203.0.113.5');
  });

  it('is the last trusted hop when a proxy forwards no address, or none that can be read', () => {
    expect(clients.clientOf(requestFrom('10.1.2.3'))).toBe('10.1.2.3');
    expect(clients.clientOf(requestFrom('10.1.2.3', { forwarded: 'for=unknown' }))).toBe('10.1.2.3');
    expect(clients.clientOf(requestFrom('10.1.2.3', { 'x-forwarded-for': '203.0.113.5, garbage, 10.9.9.9' }))).toBe(
      '10.9.9.9',
    );
  });

  it('is unknown behind a front end whose socket peers are not clients (FC), unless a trusted proxy names one', () => {
    const onFc = createClientAddresses({ trustedProxies: trustedProxies('10.0.0.0/8'), socketPeerIsClient: false });
    expect(onFc.clientOf(requestFrom('100.64.0.1', { 'x-forwarded-for': '203.0.113.5' }))).toBeUndefined();
    expect(onFc.clientOf(requestFrom('10.1.2.3', { 'x-forwarded-for': '203.0.113.5' }))).toBe('203.0.113.5');
  });

  it('trusts nobody without MCP_TRUSTED_PROXIES', () => {
    const none = createClientAddresses({ trustedProxies: trustedProxies('') });
    expect(none.isTrustedProxy('127.0.0.1')).toBe(false);
    expect(none.clientOf(requestFrom('127.0.0.1', { 'x-forwarded-for': '203.0.113.5' }))).toBe('127.0.0.1');
  });
});

describe('MCP_TRUSTED_PROXIES (config.ts)', () => {
  it('takes IPv4 and IPv6 addresses and CIDR ranges, comma-separated', () => {
    expect(trustedProxies('10.0.0.0/8, 192.0.2.1,2001:DB8::/32')).toEqual([
      '10.0.0.0/8',
      '192.0.2.1/32',
      '2001:db8::/32',
    ]);
    expect(loadConfig({}).trustedProxies).toEqual([]);
  });

  it.each([
    'proxy.example.com',
    '10.0.0.0/33',
    '2001:db8::/129',
    '10.0.0.0/',
    '10.0.0.0/8/8',
    '10.0.0.0/-1',
    'fe80::1%eth0',
  ])('refuses %j, naming it', (value) => {
    let problems: readonly string[] = [];
    try {
      loadConfig({ MCP_TRUSTED_PROXIES: `192.0.2.1, ${value}` });
    } catch (err: unknown) {
      if (err instanceof ConfigError) problems = err.problems;
    }
    expect(problems).toEqual([expect.stringContaining(`MCP_TRUSTED_PROXIES must list IP addresses or CIDR ranges`)]);
    expect(problems[0]).toContain(`"${value}"`);
  });
});
