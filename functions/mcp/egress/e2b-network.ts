/**
 * The egress policy and secrets in E2B's words: the `allowInternetAccess` and `network` options a sandbox is
 * created with (and the body of E2B's network update), where E2B's own infrastructure enforces them. Also what
 * E2B cannot say, refused at start-up (e2bEgressProblems) rather than left unenforced.
 *
 * E2B's rules differ from the proxy's in three ways, and the translation keeps to what both enforce alike:
 * - An allowOut entry wins over a denyOut entry (the proxy lets a deny win). A deny that overlaps an allow cannot
 *   be kept, so it is refused; in `all` mode domain allow entries are left out (they allow nothing more there, and
 *   on E2B they would win over the denied special ranges).
 * - denyOut takes IPs and ranges only: a deny by name cannot be kept, unless nothing allows the name anyway.
 * - Entries have no ports; transform rules are per name, without a port either.
 * Special ranges are sent in denyOut in every mode (IPv4: E2B's sandboxes reach out over IPv4), unless an IP or
 * range entry of the allow list names them. What is refused is said by e2bPolicyProblems and e2bSecretProblems.
 */
import { cidrCovers, formatCidr, SPECIAL_RANGES } from './addresses';
import { type EgressEntry, type EgressPolicy, entriesMeet, formatEntry } from './policy';
import { type SandboxSecret, secretHostProblem } from './secrets';

/** Per host, the headers its requests get. */
export type E2BRules = Record<string, { transform: { headers: Record<string, string> } }[]>;

/** The create options E2B's SDK takes for egress (a subset of its SandboxOpts). */
export interface E2BEgressOptions {
  readonly allowInternetAccess: boolean;
  readonly network?: { readonly allowOut: string[]; readonly denyOut: string[]; readonly rules?: E2BRules };
}

const ALL_IPV4 = '0.0.0.0/0';

/** A sandbox that reaches nothing (MCP_SANDBOX_EGRESS=none, the default). */
export const NO_E2B_EGRESS: E2BEgressOptions = Object.freeze({ allowInternetAccess: false });

/** The options a sandbox under `policy`, with `secrets`, is created with on E2B. */
export function toE2BEgress(policy: EgressPolicy, secrets: readonly SandboxSecret[]): E2BEgressOptions {
  if (policy.mode === 'none') return NO_E2B_EGRESS;
  const named = policy.named.map((entry) => entry.range);
  // 0.0.0.0/8 is left out: E2B refuses a range whose address is unspecified, and inside a sandbox 0.0.0.0 is the
  // sandbox itself, not a way out.
  const specials = SPECIAL_RANGES.filter((range) => range.bytes.length === 4 && range.bytes[0] !== 0)
    .filter((range) => !named.some((n) => cidrCovers(n, range)))
    .map(formatCidr);
  const denyCidrs = policy.deny.flatMap((e) => (e.kind === 'cidr' ? [formatCidr(e.range)] : []));
  const allowOut =
    policy.mode === 'allowlist'
      ? policy.allow.map(withoutPort)
      : policy.allow.filter((e) => e.kind === 'cidr').map(withoutPort);
  const denyOut = policy.mode === 'allowlist' ? [ALL_IPV4, ...denyCidrs] : unique([...specials, ...denyCidrs]);
  const rules = toRules(secrets);
  return {
    allowInternetAccess: true,
    network: { allowOut: unique(allowOut), denyOut, ...(rules === undefined ? {} : { rules }) },
  };
}

/** Why `policy` (of `whose`) cannot be kept by E2B, one problem per entry. */
export function e2bPolicyProblems(whose: string, policy: EgressPolicy): string[] {
  const problems: string[] = [];
  const refuse = (entry: EgressEntry, why: string): void => {
    problems.push(`${whose}: "${formatEntry(entry)}" ${why}`);
  };
  for (const entry of [...policy.allow, ...policy.deny]) {
    if (entry.port !== undefined) refuse(entry, "has a port, and E2B's egress rules have none");
  }
  for (const entry of policy.deny) {
    if (entry.kind !== 'cidr' && policy.mode === 'all') {
      refuse(entry, 'denies a name, and E2B denies only IPs and ranges');
      continue;
    }
    const allowed = policy.allow.find((a) => entriesMeet(a, entry));
    if (allowed === undefined) continue;
    if (entry.kind === 'cidr')
      refuse(entry, `overlaps the allow entry "${formatEntry(allowed)}", and on E2B an allow entry wins`);
    else refuse(entry, 'denies a name an allow entry allows, and on E2B an allow entry wins');
  }
  return problems;
}

/** Why E2B cannot add `secrets` as they are written, one problem per host. */
export function e2bSecretProblems(secrets: readonly SandboxSecret[]): string[] {
  return secrets.flatMap((secret) =>
    secret.hosts.flatMap((host) => {
      const why = secretHostProblem(host);
      return why === undefined ? [] : [`MCP_SANDBOX_SECRETS_FILE: secret "${secret.name}": ${why}`];
    }),
  );
}

/**
 * Transform rules: per host of a secret, one rule with the headers of every secret that applies to all the names
 * the key matches, in file order (the last named for a header wins, as locally). E2B takes the exact key, else the
 * longest wildcard, and never merges two keys' rules: so a key carries its wildcards' headers itself.
 */
function toRules(secrets: readonly SandboxSecret[]): E2BRules | undefined {
  if (secrets.length === 0) return undefined;
  const keys = unique(secrets.flatMap((secret) => secret.hosts.map(({ host }) => host)));
  const ruleOf = (key: string): E2BRules[string] => {
    const headers: Record<string, string> = {};
    for (const secret of secrets) {
      if (!secret.hosts.some(({ host }) => appliesTo(host, key))) continue;
      for (const name of Object.keys(headers))
        if (name.toLowerCase() === secret.header.toLowerCase()) delete headers[name];
      headers[secret.header] = secret.value;
    }
    return [{ transform: { headers } }];
  };
  return Object.fromEntries(keys.map((key) => [key, ruleOf(key)]));
}

/** Whether a secret for `host` applies to every name the rule key `key` matches. */
function appliesTo(host: string, key: string): boolean {
  if (host === key) return true;
  if (!host.startsWith('*.')) return false;
  return (key.startsWith('*.') ? key.slice(1) : key).endsWith(host.slice(1));
}

function withoutPort(entry: EgressEntry): string {
  const { port: _port, ...rest } = entry;
  return formatEntry(rest as EgressEntry);
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}
