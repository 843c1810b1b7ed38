/**
 * Secrets a sandbox uses without holding them: the operator names each one with the hosts it is for and the
 * header it goes in (egress-config.ts reads MCP_SANDBOX_SECRETS_FILE), and the egress point adds that header to
 * requests to those hosts (locally secret-injection.ts in the proxy; on E2B its transform rules). A secret
 * grants no access: the egress policy still decides whether the host is reached at all.
 *
 * A host is a DNS name or a `*.` wildcard (its subdomains at any depth, not the name itself, as policy entries
 * are), with an optional port. Without a port a secret is for the default ports: 443 through `CONNECT` (TLS,
 * which the proxy ends to read the request) and 80 for plain HTTP.
 */
import { isDnsName, parsePort, splitHostPort } from './addresses';

export interface SecretHost {
  /** A lower-case DNS name, or `*.` and one. */
  readonly host: string;
  readonly port?: number;
}

export interface SandboxSecret {
  /** The operator's name for it: shown by sandbox_status and in logs, never the value. */
  readonly name: string;
  readonly hosts: readonly SecretHost[];
  /** The header it goes in, as the operator spelled it. */
  readonly header: string;
  readonly value: string;
}

/** What sandbox_status shows of a secret: never its value. */
export interface SecretSummary {
  readonly name: string;
  readonly hosts: readonly string[];
  readonly header: string;
}

export const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
/** Headers that carry the framing or the routing of a request: a secret may not replace them. */
const FRAMING_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
  'proxy-authorization',
  'expect',
]);

/** A secret's `host[:port]`, or why it is not one. */
export function parseSecretHost(text: string): SecretHost | string {
  const split = splitHostPort(text.trim().toLowerCase());
  if (split === undefined || split.bracketed) return `"${text}" is not a host name with an optional :port`;
  const port = split.port === undefined ? undefined : parsePort(split.port);
  if (split.port !== undefined && port === undefined) return `"${text}" has a port that is not 1-65535`;
  const host = split.host.replace(/\.$/, '');
  const name = host.startsWith('*.') ? host.slice(2) : host;
  if (!isDnsName(name) || !name.includes('.'))
    return `"${text}": a secret is for a DNS name with a dot in it (or *. and one), not an IP address`;
  return port === undefined ? { host } : { host, port };
}

/** Why `header` cannot carry a secret, or undefined. */
export function checkSecretHeader(header: string): string | undefined {
  // Not quoted back: an operator who put the whole "Authorization: Bearer …" line here would see it in the error.
  if (!HEADER_NAME.test(header)) return '"header" is not an HTTP header name (the name only, without ":" or a value)';
  if (FRAMING_HEADERS.has(header.toLowerCase())) return `"${header}" frames or routes the request`;
  return undefined;
}

/** Why `value` cannot be sent as a header value, or undefined. */
export function checkSecretValue(value: string): string | undefined {
  if (value.length === 0) return 'the value is empty';
  if (value.length > 8192) return 'the value is longer than 8192 characters';
  // Visible ASCII and spaces inside: no line breaks (a second header or request), no control characters.
  if (!/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)) return 'the value has characters a header cannot carry';
  return undefined;
}

/**
 * The headers to add to a request for `host:port` (a name as the sandbox asked for it, lower-case); `tls` when
 * the request came through `CONNECT`. The last secret named for a header wins, in file order.
 */
export function secretHeadersFor(
  secrets: readonly SandboxSecret[],
  host: string,
  port: number,
  tls: boolean,
): Map<string, { readonly name: string; readonly value: string }> {
  const headers = new Map<string, { name: string; value: string }>();
  for (const secret of secrets) {
    if (secret.hosts.some((h) => hostMatches(h, host) && (h.port ?? (tls ? 443 : 80)) === port))
      headers.set(secret.header.toLowerCase(), { name: secret.header, value: secret.value });
  }
  return headers;
}

/** Whether a secret for `entry` is for the name `host`: the name itself, or one below a `*.` wildcard. */
function hostMatches(entry: SecretHost, host: string): boolean {
  return entry.host.startsWith('*.') ? host.endsWith(entry.host.slice(1)) : host === entry.host;
}

/** The DNS names a sandbox's certificate authority may certify: each secret host without `*.` and port. */
export function secretDomains(secrets: readonly SandboxSecret[]): string[] {
  const domains = new Set<string>();
  for (const secret of secrets)
    for (const { host } of secret.hosts) domains.add(host.startsWith('*.') ? host.slice(2) : host);
  return [...domains];
}

/** Why E2B cannot add a secret for `host` (its transform rules are per name), or undefined. */
export function secretHostProblem(host: SecretHost): string | undefined {
  return host.port === undefined
    ? undefined
    : `"${formatSecretHost(host)}" has a port, and E2B's transform rules are per name (for HTTPS on 443)`;
}

export function formatSecretHost({ host, port }: SecretHost): string {
  return port === undefined ? host : `${host}:${port}`;
}

export function summarizeSecrets(secrets: readonly SandboxSecret[]): SecretSummary[] {
  return secrets.map((s) => ({ name: s.name, hosts: s.hosts.map(formatSecretHost), header: s.header }));
}
