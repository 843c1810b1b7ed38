/**
 * The egress policy of a sandbox, one vocabulary for both backends: a mode (`none`, `allowlist`, `all`), allow
 * and deny entries (a domain `pypi.org`, a wildcard `*.github.com` for its subdomains at any depth, an IP or CIDR
 * range; each optionally `:port`), and the special ranges (addresses.ts) that stay closed in every mode unless an
 * IP or CIDR entry of the allow list names them. A per-credential policy only narrows the operator's (`narrow`).
 * Pure: judging a destination here needs its resolved address; the proxy (proxy.ts) resolves it.
 */
import {
  type Cidr,
  facesOf,
  formatCidr,
  inCidr,
  intersectCidr,
  isSpecial,
  isDnsName,
  isSpecialRange,
  parseCidr,
  parsePort,
  splitHostPort,
} from './addresses';

export type EgressMode = 'none' | 'allowlist' | 'all';

export type EgressEntry =
  /** Exactly this name. */
  | { readonly kind: 'domain'; readonly name: string; readonly port?: number }
  /** Every name below `suffix` (not `suffix` itself). */
  | { readonly kind: 'wildcard'; readonly suffix: string; readonly port?: number }
  | { readonly kind: 'cidr'; readonly range: Cidr; readonly port?: number };

export type CidrEntry = Extract<EgressEntry, { kind: 'cidr' }>;

export interface EgressPolicy {
  readonly mode: EgressMode;
  /** With `allowlist`: all that may be reached (names by domain and wildcard entries, addresses by ranges). */
  readonly allow: readonly EgressEntry[];
  /** Never reached, in any mode; wins over allow. */
  readonly deny: readonly EgressEntry[];
  /** Ranges that open the special addresses they cover (the IP and CIDR entries of the allow list). */
  readonly named: readonly CidrEntry[];
}

export const NO_EGRESS: EgressPolicy = Object.freeze({ mode: 'none', allow: [], deny: [], named: [] });

/** Whether a destination may be reached, and if not, the rule that says so (for the refusal and the log). */
export type Verdict = { readonly ok: true } | { readonly ok: false; readonly rule: string };

const OK: Verdict = Object.freeze({ ok: true });

/** The policy the operator's settings describe (entries already parsed). */
export function toPolicy(mode: EgressMode, allow: readonly EgressEntry[], deny: readonly EgressEntry[]): EgressPolicy {
  if (mode === 'none') return NO_EGRESS;
  return Object.freeze({ mode, allow, deny, named: allow.filter(isCidr) });
}

/** One entry (`pypi.org`, `*.github.com:443`, `10.0.0.0/8`, `[2001:db8::1]:22`); a message when it is none. */
export function parseEntry(text: string): EgressEntry | string {
  const split = splitHostPort(text.trim().toLowerCase());
  if (split === undefined) return badEntry(text);
  const { host, bracketed } = split;
  const port = split.port === undefined ? undefined : parsePort(split.port);
  if (split.port !== undefined && port === undefined) return `"${text}": a port is a number from 1 to 65535`;
  const range = parseCidr(host);
  const withPort = port === undefined ? {} : { port };
  if (range !== undefined) return { kind: 'cidr', range, ...withPort };
  if (bracketed) return `"${text}": brackets hold an IPv6 address or range`;
  if (host.startsWith('*.')) {
    const suffix = host.slice(2).replace(/\.$/, '');
    return isDnsName(suffix) ? { kind: 'wildcard', suffix, ...withPort } : badEntry(text);
  }
  const name = host.replace(/\.$/, '');
  return isDnsName(name) ? { kind: 'domain', name, ...withPort } : badEntry(text);
}

/** An entry as it is written. */
export function formatEntry(entry: EgressEntry): string {
  const port = entry.port === undefined ? '' : `:${entry.port}`;
  if (entry.kind === 'domain') return `${entry.name}${port}`;
  if (entry.kind === 'wildcard') return `*.${entry.suffix}${port}`;
  const range = formatCidr(entry.range);
  return port !== '' && range.includes(':') ? `[${range}]${port}` : `${range}${port}`;
}

/**
 * A request by name, before its name is resolved: refused at once when the mode or a deny entry says so, and with
 * `allowlist` when no entry allows the name (it is then never looked up: lookups of names of the sandbox's choice
 * would be a way out for its data).
 */
export function judgeName(policy: EgressPolicy, name: string, port: number): Verdict {
  if (policy.mode === 'none') return { ok: false, rule: 'egress is off for this sandbox (MCP_SANDBOX_EGRESS=none)' };
  const denied = policy.deny.find((entry) => matchesName(entry, name, port));
  if (denied !== undefined) return { ok: false, rule: `${name} is denied (deny entry ${formatEntry(denied)})` };
  if (policy.mode === 'allowlist' && !policy.allow.some((entry) => matchesName(entry, name, port)))
    return { ok: false, rule: `${name}:${port} is not in the allow list` };
  return OK;
}

/**
 * The address a connection would go to, reached by `name` (undefined for an IP literal): a deny entry refuses it,
 * in `allowlist` mode the name (judgeName) or the IP literal must be allowed, and a special address needs an IP or
 * CIDR entry that names it.
 */
export function judgeAddress(
  policy: EgressPolicy,
  name: string | undefined,
  address: Uint8Array,
  port: number,
): Verdict {
  if (name !== undefined) {
    const byName = judgeName(policy, name, port);
    if (!byName.ok) return byName;
  } else if (policy.mode === 'none') return judgeName(policy, '', port);
  const faces = facesOf(address);
  const shown = formatCidr({ bytes: address, prefix: address.length * 8 });
  const denied = policy.deny.find((entry) => faces.some((face) => matchesAddress(entry, face, port)));
  if (denied !== undefined) return { ok: false, rule: `${shown} is denied (deny entry ${formatEntry(denied)})` };
  // A name was allowed by name above; an IP literal needs an entry that covers it.
  if (policy.mode === 'allowlist' && name === undefined) {
    const allowed = policy.allow.some((entry) => faces.some((face) => matchesAddress(entry, face, port)));
    if (!allowed) return { ok: false, rule: `${shown}:${port} is not in the allow list` };
  }
  if (isSpecial(address) && !policy.named.some((entry) => faces.some((face) => matchesAddress(entry, face, port)))) {
    return {
      ok: false,
      rule:
        `${shown} is a private, loopback, link-local or metadata address, which only an IP or CIDR entry of ` +
        `MCP_SANDBOX_ALLOW opens`,
    };
  }
  return OK;
}

/**
 * The operator's policy narrowed by a credential's: the lower mode, both deny lists, and only what both allow
 * (an entry of one that lies within an entry of the other, ports included). `allow` undefined: the credential
 * keeps the operator's allow list.
 */
export function narrow(
  outer: EgressPolicy,
  inner: {
    readonly mode?: EgressMode;
    readonly allow?: readonly EgressEntry[];
    readonly deny?: readonly EgressEntry[];
  },
): EgressPolicy {
  const mode = lower(outer.mode, inner.mode ?? outer.mode);
  if (mode === 'none') return NO_EGRESS;
  const innerAllow = inner.allow;
  const deny = dedupe([...outer.deny, ...(inner.deny ?? [])]);
  const named =
    innerAllow === undefined ? outer.named : (intersectAll(outer.named, innerAllow.filter(isCidr)) as CidrEntry[]);
  let allow: readonly EgressEntry[];
  if (mode === 'all') allow = named;
  else if (outer.mode === 'allowlist' && innerAllow !== undefined) allow = intersectAll(outer.allow, innerAllow);
  else if (outer.mode === 'allowlist') allow = outer.allow;
  // The operator allowed everything but the special addresses: of the credential's entries for special ranges,
  // only what the operator names stays.
  else allow = (innerAllow ?? []).flatMap((entry) => (isSpecialEntry(entry) ? intersectAll([entry], named) : [entry]));
  return Object.freeze({ mode, allow, deny, named });
}

/** What a policy says, as sandbox_status shows it. */
export interface EgressSummary {
  readonly mode: EgressMode;
  readonly allow: readonly string[];
  readonly deny: readonly string[];
}

export function summarize(policy: EgressPolicy): EgressSummary {
  return { mode: policy.mode, allow: policy.allow.map(formatEntry), deny: policy.deny.map(formatEntry) };
}

/** True when `entry` allows or denies `name` at `port` by its name. */
export function matchesName(entry: EgressEntry, name: string, port: number): boolean {
  if (entry.port !== undefined && entry.port !== port) return false;
  if (entry.kind === 'domain') return entry.name === name;
  if (entry.kind === 'wildcard') return name.endsWith(`.${entry.suffix}`);
  return false;
}

function matchesAddress(entry: EgressEntry, address: Uint8Array, port: number): boolean {
  if (entry.kind !== 'cidr' || (entry.port !== undefined && entry.port !== port)) return false;
  return inCidr(address, entry.range);
}

function isSpecialEntry(entry: EgressEntry): boolean {
  return entry.kind === 'cidr' && isSpecialRange(entry.range);
}

function isCidr(entry: EgressEntry): entry is CidrEntry {
  return entry.kind === 'cidr';
}

const RANK: Record<EgressMode, number> = { none: 0, allowlist: 1, all: 2 };

function lower(a: EgressMode, b: EgressMode): EgressMode {
  return RANK[a] <= RANK[b] ? a : b;
}

/** Each entry of `a` met with each of `b`: what lies within both. */
function intersectAll(a: readonly EgressEntry[], b: readonly EgressEntry[]): EgressEntry[] {
  const out: EgressEntry[] = [];
  for (const x of a) for (const y of b) out.push(...intersect(x, y));
  return dedupe(out);
}

/** Whether some destination is matched by both `a` and `b` (a name by names, an address by ranges). */
export function entriesMeet(a: EgressEntry, b: EgressEntry): boolean {
  return intersect(a, b).length > 0;
}

function intersect(a: EgressEntry, b: EgressEntry): EgressEntry[] {
  if (a.port !== undefined && b.port !== undefined && a.port !== b.port) return [];
  const port = a.port ?? b.port;
  const withPort = port === undefined ? {} : { port };
  if (a.kind === 'cidr' || b.kind === 'cidr') {
    if (a.kind !== 'cidr' || b.kind !== 'cidr') return [];
    const range = intersectCidr(a.range, b.range);
    return range === undefined ? [] : [{ kind: 'cidr', range, ...withPort }];
  }
  if (covers(a, b)) return [{ ...b, ...withPort }];
  if (covers(b, a)) return [{ ...a, ...withPort }];
  return [];
}

/** True when every name `inner` matches, `outer` matches too. */
function covers(outer: EgressEntry, inner: EgressEntry): boolean {
  const innerName = inner.kind === 'domain' ? inner.name : inner.kind === 'wildcard' ? inner.suffix : undefined;
  if (innerName === undefined) return false;
  if (outer.kind === 'domain') return inner.kind === 'domain' && inner.name === outer.name;
  if (outer.kind === 'wildcard')
    return innerName === outer.suffix ? inner.kind === 'wildcard' : innerName.endsWith(`.${outer.suffix}`);
  return false;
}

function dedupe(entries: readonly EgressEntry[]): EgressEntry[] {
  const seen = new Map<string, EgressEntry>();
  for (const entry of entries) seen.set(formatEntry(entry), entry);
  return [...seen.values()];
}

function badEntry(text: string): string {
  return (
    `"${text}": an entry is a domain (pypi.org), a wildcard (*.github.com), an IP or a CIDR range, with an ` +
    'optional :port'
  );
}
