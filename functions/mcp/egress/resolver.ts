/**
 * How the egress proxy finds the addresses of a name: DNS queries of its own (A and AAAA, through c-ares, never
 * the host's /etc/hosts or a sandbox's resolver), to MCP_SANDBOX_RESOLVER's servers or the host's. Every address
 * it returns is judged before one is dialled, and the connection goes to the address judged, so a name whose
 * answers change between two lookups (DNS rebinding) gains nothing.
 */
import { promises as dns } from 'node:dns';

import { parseIp } from './addresses';

export interface NameResolver {
  /** The name's IPv4 then IPv6 addresses; rejects (with an errno-like `code`) when it has none. */
  resolve(name: string): Promise<Uint8Array[]>;
}

/** How long one query waits for an answer before it is sent again (twice in all). */
const QUERY_TIMEOUT_MS = 2_500;

export function createNameResolver(servers?: readonly string[]): NameResolver {
  const resolver = new dns.Resolver({ timeout: QUERY_TIMEOUT_MS, tries: 2 });
  if (servers !== undefined) resolver.setServers([...servers]);
  return {
    async resolve(name) {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
      const texts = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
      const addresses = texts.map(parseIp).filter((a): a is Uint8Array => a !== undefined);
      if (addresses.length > 0) return addresses;
      const failed = v4.status === 'rejected' ? v4.reason : v6.status === 'rejected' ? v6.reason : undefined;
      const code = (failed as { code?: unknown } | undefined)?.code;
      throw Object.assign(new Error(`${name} has no address`), { code: typeof code === 'string' ? code : 'ENODATA' });
    },
  };
}
