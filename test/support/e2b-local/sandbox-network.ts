/**
 * How a sandbox of the model reaches only what its network settings (network-config.ts) allow.
 *
 * E2B's egress is transparent: the microVM's packets pass a firewall and, for hosts with transform rules, a proxy
 * of E2B's that ends TLS with a CA installed in the template. The model's stand-in:
 *
 * - Each sandbox has a network namespace of its own with only loopback in it (sandbox-runtime.ts), so a socket
 *   that skips the proxy gets ECONNREFUSED or ENETUNREACH, and a lookup finds no resolver.
 * - The agent listens on 127.0.0.1:3128 inside (agent.js), and every process of the sandbox starts with
 *   HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and their lower-case forms naming it, NO_PROXY=localhost,127.0.0.1,::1 and
 *   NODE_USE_ENV_PROXY=1 (`egressEnvironment`): curl, pip, git, Python and Node go through it. A client that
 *   ignores these variables has no way out, where E2B would carry its packets.
 * - Each connection comes to the service (agent-connections.ts) and is served by the server's own egress proxy
 *   (functions/mcp/egress/proxy.ts), which reads its CONNECT or absolute-form request, resolves the name with its
 *   own DNS queries, judges the address and dials it; a refusal is its 403 naming the rule.
 *
 * E2B's semantics in the server's policy words (egress/policy.ts), judged per connection, for the destination its
 * request names (read here first, `requestTarget`, and left for the proxy to read again):
 *
 * - `allow_internet_access: false` replaces `denyOut` with `0.0.0.0/0`, keeping `allowOut` (as E2B's API does).
 * - `denyOut` holding `0.0.0.0/0`: mode `allowlist` with `allowOut` for allow and no deny (allowed entries win
 *   over denied ones, and nothing else is open; IPv6 neither). With no `allowOut` nothing is reached: every
 *   request is refused before a lookup.
 * - Otherwise a name an `allowOut` domain or wildcard names is judged by that same allowlist (allow wins over
 *   any `denyOut` range its address is in); anything else by mode `all` with the `allowOut` IP and CIDR entries
 *   as allow and the `denyOut` ranges as deny, minus what an `allowOut` range covers (`subtractRanges`: allow wins).
 * - As in the server's policy, private, loopback, link-local, metadata and reserved addresses stay closed unless
 *   an `allowOut` IP or CIDR entry names them (a domain entry does not): E2B's infrastructure does not route a
 *   sandbox to internal addresses, and here they would be the host's own.
 * - A PUT applies to the next connections; connections open then go on.
 *
 * Transform rules: the rule of the destination's host (the exact key, else the longest matching `*.` key; rule
 * sets are not merged) becomes the connection's secrets (egress/secrets.ts), one a header, for that host on the
 * port asked for, over plain HTTP and through CONNECT (E2B's proxy recognises the host whatever the port; the
 * model does the same, so tests can use hosts on ports of their own). For HTTPS the proxy ends the sandbox's TLS
 * with the sandbox's own authority (egress/authority.ts), name-constrained to the rule hosts. It is made at each
 * start of the sandbox's namespace (create, and a resume that boots it afresh) when there are rules, and made anew
 * when a PUT changes the rule hosts; its certificate is in the sandbox's trust bundle, a file beside the sandbox's
 * directory (the host's bundle and that certificate) bound read-only over the system bundles, rewritten in place
 * when the authority changes. A client that loaded the bundle before a PUT changed the rule hosts keeps the old
 * authority and fails its TLS to them until it loads it again. Upstream TLS is checked against Node's trust store
 * and the service's `upstreamCa`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import type { Duplex } from 'node:stream';

import {
  type Cidr,
  inCidr,
  parseCidr,
  parseIp,
  parsePort,
  splitHostPort,
} from '../../../functions/mcp/egress/addresses';
import { createAuthority, type SandboxAuthority } from '../../../functions/mcp/egress/authority';
import {
  type CidrEntry,
  type EgressEntry,
  type EgressPolicy,
  matchesName,
  parseEntry,
  toPolicy,
} from '../../../functions/mcp/egress/policy';
import type { EgressContext, EgressProxy } from '../../../functions/mcp/egress/proxy';
import type { SandboxSecret } from '../../../functions/mcp/egress/secrets';
import { proxyEnv, SYSTEM_BUNDLES, trustEnv } from '../../../functions/mcp/sandbox/local/sandbox-egress';
import { EGRESS_PORT } from './agent-protocol';
import { ALL_TRAFFIC, type NetworkSettings } from './network-config';

/** The system trust bundles present on the host: each is replaced inside (the local backend's list). */
const PRESENT_BUNDLES = SYSTEM_BUNDLES.filter((path) => existsSync(path));
/** The bundle the trust variables name inside (undefined on a host with none of the usual ones). */
const TRUST_BUNDLE = PRESENT_BUNDLES[0];

/** The host's trust bundle, read once. */
let hostBundle: string | undefined;

/** How long the service waits for a connection's request line before handing it to the proxy as it is. */
const REQUEST_LINE_TIMEOUT_MS = 10_000;
/** The longest request line read here (the proxy's own limit for the whole head is 16 KiB). */
const MAX_REQUEST_LINE_BYTES = 16 * 1024;

/** What every sandbox process starts with: the egress listener as its proxy, and the trust bundle. */
export function egressEnvironment(): Record<string, string> {
  return { ...proxyEnv(EGRESS_PORT), ...(TRUST_BUNDLE === undefined ? {} : trustEnv(TRUST_BUNDLE)) };
}

/** The service's egress point: the proxy every sandbox's connections go to. */
export interface EgressService {
  readonly proxy: EgressProxy;
  /** Who the proxy's log lines name as the owner. */
  readonly principal: string;
}

/** The settings in the server's policy words. */
interface Translation {
  /** `allowOut` as policy entries. */
  readonly allow: readonly EgressEntry[];
  /** Mode `allowlist` with `allowOut`: for a name `allowOut` names, and for everything when all is denied. */
  readonly allowlist: EgressPolicy;
  /** Mode `all` for everything else; undefined when `denyOut` holds 0.0.0.0/0. */
  readonly open: EgressPolicy | undefined;
  /** The rules by lower-case host key: the headers (name and value) each sets. */
  readonly rules: ReadonlyMap<string, readonly (readonly [string, string])[]>;
}

/** The policy the settings put a destination under (`host` as its request names it, lower-case). */
function policyFor(translation: Translation, host: string | undefined, port: number): EgressPolicy {
  if (translation.open === undefined) return translation.allowlist;
  const byName =
    host !== undefined &&
    parseIp(host) === undefined &&
    translation.allow.some((entry) => entry.kind !== 'cidr' && matchesName(entry, host, port));
  return byName ? translation.allowlist : translation.open;
}

/** The secrets of the rule for `host` (exact key, else the longest `*.` key that matches), for `host:port`. */
function secretsFor(translation: Translation, host: string | undefined, port: number): SandboxSecret[] {
  if (host === undefined || translation.rules.size === 0) return [];
  let key: string | undefined = translation.rules.has(host) ? host : undefined;
  if (key === undefined) {
    for (const candidate of translation.rules.keys()) {
      if (candidate.startsWith('*.') && host.endsWith(candidate.slice(1)) && candidate.length > (key?.length ?? 0))
        key = candidate;
    }
  }
  if (key === undefined) return [];
  return (translation.rules.get(key) ?? []).map(([header, value]) => ({
    name: `rule ${key} ${header}`,
    hosts: [{ host: key, port }],
    header,
    value,
  }));
}

/** The settings translated (they were checked when they were set). */
export function translate(settings: NetworkSettings): Translation {
  const network = settings.network ?? {};
  const allow = (network.allowOut ?? []).map((text) => parseEntry(text)).filter((e) => typeof e !== 'string');
  const denied = settings.allowInternetAccess === false ? [ALL_TRAFFIC] : (network.denyOut ?? []);
  const deny = denied.map((text) => parseCidr(text.trim())).filter((range) => range !== undefined);
  const allowlist = toPolicy('allowlist', allow, []);
  const ranges = allow.filter((entry): entry is CidrEntry => entry.kind === 'cidr');
  const allDenied = denied.includes(ALL_TRAFFIC);
  const open = allDenied
    ? undefined
    : toPolicy(
        'all',
        ranges,
        subtractRanges(
          deny,
          ranges.map((entry) => entry.range),
        ).map((range): EgressEntry => ({ kind: 'cidr', range })),
      );
  const rules = new Map<string, Array<[string, string]>>();
  for (const [key, list] of Object.entries(network.rules ?? {})) {
    const headers: Array<[string, string]> = [];
    for (const rule of list) headers.push(...Object.entries(rule.transform?.headers ?? {}));
    if (headers.length > 0) rules.set(key, headers);
  }
  return { allow, allowlist, open, rules };
}

/** `ranges` without what `holes` cover: each range split in halves around the holes inside it. */
export function subtractRanges(ranges: readonly Cidr[], holes: readonly Cidr[]): Cidr[] {
  const out: Cidr[] = [];
  const split = (range: Cidr): void => {
    const same = holes.filter((hole) => hole.bytes.length === range.bytes.length);
    if (same.some((hole) => hole.prefix <= range.prefix && inCidr(range.bytes, hole))) return;
    if (!same.some((hole) => hole.prefix > range.prefix && inCidr(hole.bytes, range))) {
      out.push(range);
      return;
    }
    for (const bit of [0, 1]) {
      const bytes = Uint8Array.from(range.bytes);
      const index = Math.floor(range.prefix / 8);
      const mask = 0x80 >> (range.prefix % 8);
      bytes[index] = bit === 1 ? (bytes[index] ?? 0) | mask : (bytes[index] ?? 0) & ~mask;
      split({ bytes, prefix: range.prefix + 1 });
    }
  };
  for (const range of ranges) split(range);
  return out;
}

/** The DNS names the rules' authority may certify: each key without its `*.`. */
function ruleDomains(translation: Translation): string[] {
  return [...new Set([...translation.rules.keys()].map((key) => (key.startsWith('*.') ? key.slice(2) : key)))].sort();
}

/** The destination a request line names (CONNECT's authority, or an absolute http URL), lower-case. */
export function requestTarget(line: string): { host: string; port: number } | undefined {
  const parts = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) ([\x21-\x7e]+) HTTP\/1\.[01]$/.exec(line);
  if (parts === null) return undefined;
  const [, method, target = ''] = parts;
  let host: string;
  let port: number | undefined;
  if (method === 'CONNECT') {
    const split = splitHostPort(target);
    if (split?.port === undefined) return undefined;
    host = split.host;
    port = parsePort(split.port);
  } else {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return undefined;
    }
    if (url.protocol !== 'http:') return undefined;
    host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    port = url.port === '' ? 80 : parsePort(url.port);
  }
  if (port === undefined || host === '') return undefined;
  return { host: host.toLowerCase().replace(/\.$/, ''), port };
}

/**
 * Reads `client`'s first line (its request line) and puts the bytes back for the proxy; undefined when none came
 * (the client took too long, or sent too much without a line break): the proxy then answers it as it would. Null
 * when the client ended or went away first. Read in paused mode ('readable'), so that once this listener is gone
 * the stream flows again to whoever listens for 'data' next.
 */
function peekRequestLine(client: Duplex): Promise<string | undefined | null> {
  return new Promise((resolve) => {
    let held: Buffer = Buffer.alloc(0);
    const finish = (line: string | undefined | null): void => {
      clearTimeout(timer);
      client.off('readable', onReadable);
      client.off('end', onGone);
      client.off('close', onGone);
      if (line !== null && held.length > 0) client.unshift(held);
      resolve(line);
    };
    const onReadable = (): void => {
      for (let chunk: Buffer | null = client.read(); chunk !== null; chunk = client.read()) {
        held = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
        const end = held.indexOf('\n');
        if (end >= 0) return finish(held.subarray(0, end).toString('latin1').replace(/\r$/, ''));
        if (held.length >= MAX_REQUEST_LINE_BYTES) return finish(undefined);
      }
    };
    const onGone = (): void => finish(null);
    const timer = setTimeout(() => finish(undefined), REQUEST_LINE_TIMEOUT_MS);
    client.on('readable', onReadable);
    client.once('end', onGone);
    client.once('close', onGone);
  });
}

/** One sandbox's network: its settings as the API holds them, and its way out. */
export class SandboxNetwork {
  private translation: Translation;
  private authority: SandboxAuthority | undefined;
  /** The rule domains `authority` was made for. */
  private authorityDomains = '';

  constructor(
    readonly sandboxId: string,
    /** The trust bundle's file on the host (outside what the sandbox sees). */
    private readonly bundlePath: string,
    private currentSettings: NetworkSettings,
    private readonly egress: EgressService,
  ) {
    this.translation = translate(currentSettings);
  }

  get settings(): NetworkSettings {
    return this.currentSettings;
  }

  /**
   * Before each start of the sandbox's namespace: a new authority when there are rules, and the trust bundle
   * written. Resolves with the files to bind read-only inside.
   */
  async launch(): Promise<Array<[string, string]>> {
    this.authority = undefined;
    this.authorityDomains = '';
    this.makeAuthority();
    await this.writeBundle();
    return PRESENT_BUNDLES.map((path) => [this.bundlePath, path]);
  }

  /** New settings (a PUT): they apply to the next connections; a new authority when the rule hosts changed. */
  async update(settings: NetworkSettings): Promise<void> {
    this.currentSettings = settings;
    this.translation = translate(settings);
    if (ruleDomains(this.translation).join(',') !== this.authorityDomains) {
      this.makeAuthority();
      await this.writeBundle();
    }
  }

  /** Serves a connection from inside the sandbox under the settings in force when its request line came. */
  serve(client: Duplex): void {
    client.on('error', () => client.destroy());
    void peekRequestLine(client).then((line) => {
      if (line === null) {
        client.destroy();
        return;
      }
      const target = line === undefined ? undefined : requestTarget(line);
      const port = target?.port ?? 0;
      const secrets = secretsFor(this.translation, target?.host, port);
      const context: EgressContext = {
        policy: policyFor(this.translation, target?.host, port),
        principal: this.egress.principal,
        sandboxId: this.sandboxId,
        secrets,
        ...(secrets.length > 0 && this.authority !== undefined && { authority: this.authority }),
      };
      this.egress.proxy.serve(client, context);
    });
  }

  private makeAuthority(): void {
    const domains = ruleDomains(this.translation);
    this.authorityDomains = domains.join(',');
    this.authority = domains.length === 0 ? undefined : createAuthority(this.sandboxId, domains);
  }

  /** The host's bundle and the authority's certificate, written over the same file (the bind sees it). */
  private async writeBundle(): Promise<void> {
    hostBundle ??= TRUST_BUNDLE === undefined ? '' : readFileSync(TRUST_BUNDLE, 'utf8').trimEnd();
    const text = `${hostBundle}\n${this.authority?.certificatePem ?? ''}`;
    await writeFile(this.bundlePath, text, { mode: 0o644 });
  }
}
