/**
 * MCP_SANDBOX_SECRETS_FILE: a JSON list of `{ name, hosts: ["host[:port]", …], header, value, tokens?, subjects? }`,
 * read once at start-up (egress-config.ts). An entry with `tokens` or `subjects` is for those credentials'
 * sandboxes only; without them, for every sandbox. Refused when other users may read the file; a problem names the
 * entry and the field, never the value.
 */
import { type CredentialFileContext, principalsOf, readPrivateFile } from './credential-files';
import { type EgressPolicy, judgeName } from './policy';
import {
  checkSecretHeader,
  checkSecretValue,
  formatSecretHost,
  parseSecretHost,
  SECRET_NAME,
  type SandboxSecret,
  type SecretHost,
} from './secrets';

/** A secret, and the principals it is for (undefined: every one). */
export interface ScopedSecret {
  readonly secret: SandboxSecret;
  readonly principals?: ReadonlySet<string>;
}

const FIELDS = ['name', 'hosts', 'header', 'value', 'tokens', 'subjects'];

export function loadSecretsFile(
  file: string,
  operator: EgressPolicy,
  problems: string[],
  context: CredentialFileContext,
): ScopedSecret[] {
  const text = readPrivateFile('MCP_SANDBOX_SECRETS_FILE', file, problems);
  if (text === undefined) return [];
  if (operator.mode === 'none') {
    problems.push('MCP_SANDBOX_SECRETS_FILE needs MCP_SANDBOX_EGRESS=allowlist or all: with none nothing goes out');
    return [];
  }
  let items: unknown;
  try {
    items = JSON.parse(text);
  } catch {
    problems.push(`MCP_SANDBOX_SECRETS_FILE is not JSON: ${file}`);
    return [];
  }
  if (!Array.isArray(items)) {
    problems.push('MCP_SANDBOX_SECRETS_FILE must hold a JSON list of {name, hosts, header, value} entries');
    return [];
  }
  const names = new Set<string>();
  const secrets: ScopedSecret[] = [];
  items.forEach((item: unknown, index) => {
    const where = `MCP_SANDBOX_SECRETS_FILE entry ${index + 1}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      problems.push(`${where} must be an object`);
      return;
    }
    const fields = item as Record<string, unknown>;
    const unknownKey = Object.keys(fields).find((k) => !FIELDS.includes(k));
    if (unknownKey !== undefined) problems.push(`${where}: unknown field "${unknownKey}"`);
    const secret = toSecret(where, fields, problems);
    const principals = principalsOf(where, fields, problems, context);
    if (secret === undefined || principals === undefined) return;
    if (names.has(secret.name)) problems.push(`${where}: the name "${secret.name}" is used twice`);
    names.add(secret.name);
    for (const host of secret.hosts) {
      // A secret for a host the operator's policy never lets out is a mistake, told now rather than never.
      const probe = host.host.startsWith('*.') ? `x${host.host.slice(1)}` : host.host;
      // Without a port a secret is for 443 (HTTPS) and 80 (plain HTTP): one of them reached is enough.
      const verdicts = (host.port === undefined ? [443, 80] : [host.port]).map((p) => judgeName(operator, probe, p));
      const verdict = verdicts.find((v) => v.ok) ?? verdicts[0] ?? { ok: true };
      if (!verdict.ok)
        problems.push(
          `${where} ("${secret.name}"): ${formatSecretHost(host)} is refused by the policy: ${verdict.rule}`,
        );
    }
    secrets.push(principals.length === 0 ? { secret } : { secret, principals: new Set(principals) });
  });
  return secrets;
}

function toSecret(where: string, fields: Record<string, unknown>, problems: string[]): SandboxSecret | undefined {
  const { name, hosts, header, value } = fields;
  const before = problems.length;
  if (typeof name !== 'string' || !SECRET_NAME.test(name))
    problems.push(`${where}: "name" must be letters, digits, "_", "." or "-" (up to 64)`);
  const parsed: SecretHost[] = [];
  if (!Array.isArray(hosts) || hosts.length === 0 || !hosts.every((h) => typeof h === 'string')) {
    problems.push(`${where}: "hosts" must be a non-empty list of "host[:port]"`);
  } else {
    for (const text of hosts as string[]) {
      const host = parseSecretHost(text);
      if (typeof host === 'string') problems.push(`${where}: ${host}`);
      else parsed.push(host);
    }
  }
  const headerProblem = typeof header === 'string' ? checkSecretHeader(header) : '"header" must be a string';
  if (headerProblem !== undefined) problems.push(`${where}: ${headerProblem}`);
  const valueProblem = typeof value === 'string' ? checkSecretValue(value) : '"value" must be a string';
  if (valueProblem !== undefined) problems.push(`${where}: "value": ${valueProblem}`);
  if (problems.length > before) return undefined;
  return { name: name as string, hosts: parsed, header: header as string, value: value as string };
}
