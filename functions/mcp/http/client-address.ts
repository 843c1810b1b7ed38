/**
 * Who a request comes from: the socket's peer, or, when that peer is a trusted reverse proxy (MCP_TRUSTED_PROXIES),
 * the client it forwarded for. A client writes what it likes into `X-Forwarded-For`; each proxy appends the
 * address it was reached from. So the client is the rightmost address that is not itself a trusted proxy, never
 * the leftmost. A forwarding header from a peer that is not a trusted proxy is ignored.
 *
 * `X-Forwarded-For` is read first and `Forwarded` (RFC 7239) only without it: every common proxy (nginx, Caddy,
 * HAProxy's `forwardfor`, cloud load balancers) writes `X-Forwarded-For`, and passes a `Forwarded` that the client
 * wrote on untouched, which would otherwise name any client the sender likes.
 */
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

export interface ClientAddressOptions {
  /** `address/prefix` ranges (config.ts `trustedProxies`). */
  trustedProxies: readonly string[];
  /** False where a socket's peer is a platform's front end rather than a client (FC). @default true */
  socketPeerIsClient?: boolean;
}

export interface ClientAddresses {
  /** Whether `address`, a socket's peer as `toAddress` gives it, is a trusted proxy. */
  isTrustedProxy(address: string): boolean;
  /** The address of the client that sent `req`; `undefined` when it cannot be told (behind FC's front end). */
  clientOf(req: IncomingMessage): string | undefined;
}

export function createClientAddresses({
  trustedProxies,
  socketPeerIsClient = true,
}: ClientAddressOptions): ClientAddresses {
  const proxies = new BlockList();
  for (const range of trustedProxies) {
    const [address = '', prefix] = range.split('/');
    proxies.addSubnet(address, Number(prefix), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  const isTrustedProxy = (address: string): boolean =>
    trustedProxies.length > 0 && proxies.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  return {
    isTrustedProxy,
    clientOf(req) {
      const peer = toAddress(req.socket.remoteAddress);
      if (peer === undefined) return undefined;
      if (!isTrustedProxy(peer)) return socketPeerIsClient ? peer : undefined;
      const chain = forwardedChain(req);
      let client = peer;
      for (let i = chain.length - 1; i >= 0; i -= 1) {
        // Something that is no address ("unknown", an obfuscated name): the last trusted hop is all that is known.
        const hop = toAddress(chain[i]);
        if (hop === undefined) break;
        client = hop;
        if (!isTrustedProxy(hop)) break;
      }
      return client;
    },
  };
}

/**
 * An address in one canonical form, or `undefined` when `raw` is none: brackets, quotes and a port dropped, IPv6
 * lower-cased and compressed, an IPv4-mapped IPv6 address (a dual-stack socket's) as the IPv4 address.
 */
export function toAddress(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let value = raw.trim().replace(/^"(.*)"$/, '$1');
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed?.[1] !== undefined) value = bracketed[1];
  else if (/^[\d.]+:\d+$/.test(value)) value = value.slice(0, value.indexOf(':'));
  const family = isIP(value);
  if (family === 4) return value;
  if (family !== 6 || value.includes('%')) return undefined;
  const canonical = new URL(`http://[${value}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([\da-f]{1,4}):([\da-f]{1,4})$/.exec(canonical);
  if (mapped?.[1] === undefined || mapped[2] === undefined) return canonical;
  const high = parseInt(mapped[1], 16);
  const low = parseInt(mapped[2], 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** The addresses a request was forwarded for, left (the first client named) to right (the last proxy's peer). */
function forwardedChain(req: IncomingMessage): string[] {
  const xff = req.headers['x-forwarded-for'];
  if (typeof xff === 'string') return xff.split(',');
  const forwarded = req.headers.forwarded;
  if (typeof forwarded !== 'string') return [];
  // `for=192.0.2.60;proto=https, for="[2001:db8::17]:4711"`: one element per hop, `for` among its pairs.
  return forwarded.split(',').map((element) => /(?:^|;)\s*for=("[^"]*"|[^;]*)/i.exec(element)?.[1] ?? '');
}
