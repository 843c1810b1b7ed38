/**
 * A sandbox's network settings as E2B's control plane takes and gives them (SDK 2.50.0: `NewSandbox`'s
 * `allow_internet_access` and `network` (`SandboxNetworkConfig`), `PUT /sandboxes/{id}/network`
 * (`SandboxNetworkUpdateConfig`), `SandboxDetail`'s `allowInternetAccess` and `network`), checked as E2B checks
 * them; a body that fails a check is answered 400 with the reason (NetworkConfigError):
 *
 * - `allowOut` entries: an IP address, a CIDR block, a domain (`example.com`) or a wildcard (`*.example.com`, its
 *   subdomains at any depth), in the words of the server's policy entries (egress/policy.ts `parseEntry`), without
 *   a port. `denyOut` entries: an IP address or a CIDR block only (a domain: "Domain names are not supported for
 *   deny rules"). An unspecified address (`0.0.0.0`, `::`, `::/0`) is refused in both, `0.0.0.0/0` (ALL_TRAFFIC)
 *   aside. As E2B's API does, a domain in `allowOut` needs `0.0.0.0/0` in `denyOut` (without it everything is
 *   allowed anyway): 400 otherwise, also when `allow_internet_access` is false.
 * - `rules` keys: an exact DNS name or one leading `*.` (a bare `*`, an IP address, a port: 400), at most 128
 *   characters, stored lower-case; at most 10 keys, one rule each, at most 20 headers a rule. Each rule is
 *   `{transform: {headers}}` with plain string values (a name of HTTP token characters, at most 64; a value of
 *   at most 2048 characters, no line break or control character). Stricter than E2B: a header that frames or
 *   routes a request (`Host`, `Content-Length`, ...) is refused (egress/secrets.ts `checkSecretHeader`), since the
 *   model's proxy sets the headers on the requests it relays. E2B's gate on the template's envd version (0.5.13
 *   for rules; this service reports 0.5.7) is not modelled.
 * - `egressProxy` (a SOCKS5 proxy of the caller's): 400, not supported (as on E2B's open-source runtime).
 * - `allowPublicTraffic`, `maskRequestHost`, `httpsPorts` (ingress): checked, kept and reported; nothing else
 *   (`allowPublicTraffic: false` needs `secure`, as on E2B).
 *
 * A PUT replaces the egress settings (`allow_internet_access`, `allowOut`, `denyOut`, `rules`): a field it omits
 * is cleared. The ingress settings stay as created.
 */
import { parseCidr, parseIp } from '../../../functions/mcp/egress/addresses';
import { parseEntry } from '../../../functions/mcp/egress/policy';
import { checkSecretHeader } from '../../../functions/mcp/egress/secrets';

/** One rule of a host, as stored and reported (`SandboxNetworkRule`). */
export interface NetworkRule {
  readonly transform?: { readonly headers?: Readonly<Record<string, string>> };
}

/** The `network` object as stored and reported (`SandboxNetworkConfig` without `egressProxy`). */
export interface NetworkConfig {
  readonly allowOut?: readonly string[];
  readonly denyOut?: readonly string[];
  /** By lower-case host key. */
  readonly rules?: Readonly<Record<string, readonly NetworkRule[]>>;
  readonly allowPublicTraffic?: boolean;
  readonly maskRequestHost?: string;
  readonly httpsPorts?: readonly number[];
}

export interface NetworkSettings {
  /** `allow_internet_access` as last set; null when it was not. */
  readonly allowInternetAccess: boolean | null;
  /** Undefined for a sandbox created without `network` and never updated. */
  readonly network?: NetworkConfig;
}

/** A body the service refuses (400). */
export class NetworkConfigError extends Error {}

/** The envd port, which `httpsPorts` may not name. */
const ENVD_PORT = 49983;
/** E2B's `ALL_TRAFFIC`. */
export const ALL_TRAFFIC = '0.0.0.0/0';
const MAX_RULE_KEYS = 10;
const MAX_RULES_PER_KEY = 1;
const MAX_RULE_KEY_LENGTH = 128;
const MAX_HEADERS_PER_RULE = 20;
const MAX_HEADER_NAME_LENGTH = 64;
const MAX_HEADER_VALUE_LENGTH = 2048;

/** The settings a create body asks for (`secure`: the body's, true unless false). */
export function createNetworkSettings(body: Record<string, unknown>, secure: boolean): NetworkSettings {
  const allowInternetAccess = optionalBoolean(body.allow_internet_access, 'allow_internet_access') ?? null;
  if (body.network === undefined || body.network === null) return { allowInternetAccess };
  const network = objectOf(body.network, 'network');
  if (network.egressProxy !== undefined && network.egressProxy !== null) throw egressProxyRefused();
  const allowPublicTraffic = optionalBoolean(network.allowPublicTraffic, 'network.allowPublicTraffic');
  if (allowPublicTraffic === false && !secure)
    throw new NetworkConfigError(
      "You cannot create a sandbox without public access unless you enable secure envd access via 'secure' flag.",
    );
  const maskRequestHost = optionalString(network.maskRequestHost, 'network.maskRequestHost');
  const httpsPorts = portsOf(network.httpsPorts);
  return {
    allowInternetAccess,
    network: {
      ...egressOf(network, 'network.'),
      ...(allowPublicTraffic === undefined ? {} : { allowPublicTraffic }),
      ...(maskRequestHost === undefined ? {} : { maskRequestHost }),
      ...(httpsPorts === undefined ? {} : { httpsPorts }),
    },
  };
}

/** The settings after a PUT of `body` (`SandboxNetworkUpdateConfig`) on `current`. */
export function updatedNetworkSettings(current: NetworkSettings, body: Record<string, unknown>): NetworkSettings {
  const allowInternetAccess = optionalBoolean(body.allow_internet_access, 'allow_internet_access') ?? null;
  if (body.egressProxy !== undefined && body.egressProxy !== null) throw egressProxyRefused();
  const { allowPublicTraffic, maskRequestHost, httpsPorts } = current.network ?? {};
  return {
    allowInternetAccess,
    network: {
      ...egressOf(body, ''),
      ...(allowPublicTraffic === undefined ? {} : { allowPublicTraffic }),
      ...(maskRequestHost === undefined ? {} : { maskRequestHost }),
      ...(httpsPorts === undefined ? {} : { httpsPorts }),
    },
  };
}

/** `SandboxDetail`'s fields for the settings. */
export function networkDetail(settings: NetworkSettings): Record<string, unknown> {
  return {
    allowInternetAccess: settings.allowInternetAccess,
    ...(settings.network === undefined ? {} : { network: settings.network }),
  };
}

function egressOf(
  body: Record<string, unknown>,
  prefix: string,
): Pick<NetworkConfig, 'allowOut' | 'denyOut' | 'rules'> {
  const allowOut = stringList(body.allowOut, `${prefix}allowOut`);
  const denyOut = stringList(body.denyOut, `${prefix}denyOut`);
  for (const entry of denyOut ?? []) checkDenyEntry(entry, `${prefix}denyOut`);
  for (const entry of allowOut ?? []) checkAllowEntry(entry, `${prefix}allowOut`);
  const domains = (allowOut ?? []).filter((entry) => parseCidr(entry.trim()) === undefined);
  if (domains.length > 0 && !(denyOut ?? []).includes(ALL_TRAFFIC))
    throw new NetworkConfigError(
      "When specifying allowed domains in allow out, you must include 'ALL_TRAFFIC' in deny out to block all " +
        `other traffic (${prefix}allowOut has ${domains.map((d) => `"${d}"`).join(', ')}; ${prefix}denyOut needs ` +
        `"${ALL_TRAFFIC}").`,
    );
  const rules = rulesOf(body.rules, `${prefix}rules`);
  return {
    ...(allowOut === undefined ? {} : { allowOut }),
    ...(denyOut === undefined ? {} : { denyOut }),
    ...(rules === undefined ? {} : { rules }),
  };
}

function checkAllowEntry(text: string, field: string): void {
  const entry = parseEntry(text);
  if (typeof entry === 'string' || text.includes('[') || entry.port !== undefined) {
    throw new NetworkConfigError(
      `${field}: "${text}" is not an IP address, a CIDR block (8.8.8.0/24), a domain (example.com) or a ` +
        'wildcard (*.example.com)',
    );
  }
  if (entry.kind === 'cidr' && unspecified(text))
    throw new NetworkConfigError(`${field}: invalid allowed address ${text} (an unspecified address)`);
}

function checkDenyEntry(text: string, field: string): void {
  if (parseCidr(text.trim()) !== undefined) {
    if (unspecified(text))
      throw new NetworkConfigError(
        `${field}: invalid denied CIDR ${text} (an unspecified address; all is ${ALL_TRAFFIC})`,
      );
    return;
  }
  const entry = parseEntry(text);
  if (typeof entry !== 'string' && entry.kind !== 'cidr')
    throw new NetworkConfigError(
      `${field}: invalid denied CIDR ${text}: domain names are not supported for deny rules (use IP addresses or ` +
        'CIDR blocks)',
    );
  throw new NetworkConfigError(`${field}: invalid denied CIDR ${text} (not an IP address or a CIDR block)`);
}

/** `0.0.0.0`, `::` or a range written from one, `0.0.0.0/0` aside (what E2B's firewall cannot take). */
function unspecified(text: string): boolean {
  const trimmed = text.trim();
  const address = parseIp(trimmed.split('/')[0] ?? '');
  return trimmed !== ALL_TRAFFIC && address !== undefined && address.every((b) => b === 0);
}

function rulesOf(value: unknown, field: string): Record<string, NetworkRule[]> | undefined {
  if (value === undefined || value === null) return undefined;
  const given = objectOf(value, field);
  const keys = Object.keys(given);
  if (keys.length > MAX_RULE_KEYS)
    throw new NetworkConfigError(`${field}: network rules can have at most ${MAX_RULE_KEYS} domains`);
  const rules: Record<string, NetworkRule[]> = {};
  for (const [rawKey, list] of Object.entries(given)) {
    const key = rawKey.trim().toLowerCase();
    const entry = parseEntry(key);
    if (typeof entry === 'string' || entry.kind === 'cidr' || entry.port !== undefined || key.endsWith('.')) {
      throw new NetworkConfigError(
        `${field}: rule domain "${rawKey}" is not a DNS name (api.example.com) or one leading wildcard ` +
          '(*.example.com)',
      );
    }
    if (key.length > MAX_RULE_KEY_LENGTH)
      throw new NetworkConfigError(`${field}: rule domain "${rawKey}" is longer than ${MAX_RULE_KEY_LENGTH}`);
    if (Object.hasOwn(rules, key)) throw new NetworkConfigError(`${field}: rule domain "${key}" is given twice`);
    if (!Array.isArray(list)) throw new NetworkConfigError(`${field}["${rawKey}"] must be an array of rules`);
    if (list.length > MAX_RULES_PER_KEY)
      throw new NetworkConfigError(`${field}: domain "${key}" can have at most ${MAX_RULES_PER_KEY} transform rule`);
    rules[key] = list.map((rule, i) => ruleOf(rule, `${field}["${rawKey}"][${i}]`));
  }
  return rules;
}

function ruleOf(value: unknown, field: string): NetworkRule {
  const rule = objectOf(value, field);
  if (rule.transform === undefined || rule.transform === null) return {};
  const transform = objectOf(rule.transform, `${field}.transform`);
  if (transform.headers === undefined || transform.headers === null) return { transform: {} };
  const headers = objectOf(transform.headers, `${field}.transform.headers`);
  if (Object.keys(headers).length > MAX_HEADERS_PER_RULE)
    throw new NetworkConfigError(`${field}.transform.headers: at most ${MAX_HEADERS_PER_RULE} headers per rule`);
  const checked: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(headers)) {
    const where = `${field}.transform.headers["${name}"]`;
    if (typeof headerValue !== 'string') throw new NetworkConfigError(`${where} must be a string`);
    const problem = name.length > MAX_HEADER_NAME_LENGTH ? 'the name is too long' : checkSecretHeader(name);
    if (problem !== undefined) throw new NetworkConfigError(`${where}: ${problem}`);
    // Visible characters, spaces and tabs: no line break that would start another header.
    if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(headerValue))
      throw new NetworkConfigError(`${where}: the value has characters a header cannot carry`);
    if (headerValue.length > MAX_HEADER_VALUE_LENGTH)
      throw new NetworkConfigError(`${where}: the value is longer than ${MAX_HEADER_VALUE_LENGTH} characters`);
    checked[name] = headerValue;
  }
  return { transform: { headers: checked } };
}

function portsOf(value: unknown): number[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((p) => !Number.isInteger(p) || p < 1 || p > 65535))
    throw new NetworkConfigError('network.httpsPorts must be an array of ports (1-65535)');
  if (value.includes(ENVD_PORT))
    throw new NetworkConfigError(`network.httpsPorts: the envd port ${ENVD_PORT} cannot be listed`);
  return [...(value as number[])];
}

function egressProxyRefused(): NetworkConfigError {
  return new NetworkConfigError('network.egressProxy (a SOCKS5 egress proxy) is not supported by this service');
}

function objectOf(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new NetworkConfigError(`${field} must be an object`);
  return value as Record<string, unknown>;
}

function stringList(value: unknown, field: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw new NetworkConfigError(`${field} must be an array of strings`);
  return [...(value as string[])];
}

function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new NetworkConfigError(`${field} must be a boolean`);
  return value;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new NetworkConfigError(`${field} must be a string`);
  return value;
}
