/**
 * The egress settings, read once at start-up with the rest of the configuration (config.ts): the operator's
 * policy (MCP_SANDBOX_EGRESS, MCP_SANDBOX_ALLOW, MCP_SANDBOX_DENY), the per-credential narrowing of it
 * (MCP_SANDBOX_POLICY_FILE), and the DNS servers the local proxy asks (MCP_SANDBOX_RESOLVER). Files that name
 * credentials are refused when other users may read them. Problems are collected, not thrown.
 */
import { isIP } from 'node:net';

import { parsePort, splitHostPort } from './addresses';
import { type CredentialFileContext, principalsOf, readPrivateFile } from './credential-files';
import { type EgressEntry, type EgressMode, type EgressPolicy, narrow, parseEntry, toPolicy } from './policy';
import type { SandboxSecret } from './secrets';
import { loadSecretsFile, type ScopedSecret } from './secrets-file';

export interface EgressConfig {
  /** The operator's policy: every sandbox's, unless its owner's is narrower. @default none */
  readonly operator: EgressPolicy;
  /** The narrower policies of the credentials MCP_SANDBOX_POLICY_FILE names, by principal. */
  readonly byPrincipal: ReadonlyMap<string, EgressPolicy>;
  /** MCP_SANDBOX_RESOLVER: `ip[:port]` of the DNS servers the local proxy resolves names with. @default the host's */
  readonly resolvers?: readonly string[];
  /** MCP_SANDBOX_SECRETS_FILE's secrets, each with the credentials it is for. */
  readonly secrets: readonly ScopedSecret[];
  /** Files that must not be seen inside a sandbox (the policy and secrets files). */
  readonly hiddenPaths: readonly string[];
}

/** The policy a sandbox of `principal` runs under. */
export function policyFor(config: EgressConfig, principal: string): EgressPolicy {
  return config.byPrincipal.get(principal) ?? config.operator;
}

/** The secrets the egress point adds to the requests of a sandbox of `principal`. */
export function secretsFor(config: EgressConfig, principal: string): SandboxSecret[] {
  return config.secrets.filter((s) => s.principals === undefined || s.principals.has(principal)).map((s) => s.secret);
}

type Env = Readonly<Record<string, string | undefined>>;

export type EgressConfigContext = CredentialFileContext;

/** Reads the egress settings; what is wrong goes to `problems`. */
export function loadEgressConfig(env: Env, problems: string[], context: EgressConfigContext = {}): EgressConfig {
  const modeText = env.MCP_SANDBOX_EGRESS?.trim() || 'none';
  const mode: EgressMode = modeText === 'allowlist' || modeText === 'all' ? modeText : 'none';
  if (modeText !== mode) problems.push(`MCP_SANDBOX_EGRESS must be none, allowlist or all (got "${modeText}")`);
  const allow = parseEntries('MCP_SANDBOX_ALLOW', env.MCP_SANDBOX_ALLOW, problems);
  const deny = parseEntries('MCP_SANDBOX_DENY', env.MCP_SANDBOX_DENY, problems);
  if (mode === 'allowlist' && allow.length === 0)
    problems.push(
      'MCP_SANDBOX_EGRESS=allowlist needs MCP_SANDBOX_ALLOW: the domains, IPs or ranges sandboxes may reach',
    );
  if (mode === 'none' && (allow.length > 0 || deny.length > 0))
    problems.push('MCP_SANDBOX_ALLOW and MCP_SANDBOX_DENY need MCP_SANDBOX_EGRESS=allowlist or all (it is none)');
  const operator = toPolicy(mode, allow, deny);
  const file = env.MCP_SANDBOX_POLICY_FILE?.trim() || undefined;
  const byPrincipal = file === undefined ? new Map() : loadPolicyFile(file, operator, problems, context);
  const resolvers = parseResolvers(env.MCP_SANDBOX_RESOLVER, problems);
  const secretsFile = env.MCP_SANDBOX_SECRETS_FILE?.trim() || undefined;
  const secrets = secretsFile === undefined ? [] : loadSecretsFile(secretsFile, operator, problems, context);
  return {
    operator,
    byPrincipal,
    ...(resolvers === undefined ? {} : { resolvers }),
    secrets,
    hiddenPaths: [file, secretsFile].filter((f): f is string => f !== undefined),
  };
}

function loadPolicyFile(
  file: string,
  operator: EgressPolicy,
  problems: string[],
  context: EgressConfigContext,
): Map<string, EgressPolicy> {
  const byPrincipal = new Map<string, EgressPolicy>();
  const text = readPrivateFile('MCP_SANDBOX_POLICY_FILE', file, problems);
  if (text === undefined) return byPrincipal;
  let items: unknown;
  try {
    items = JSON.parse(text);
  } catch {
    problems.push(`MCP_SANDBOX_POLICY_FILE is not JSON: ${file}`);
    return byPrincipal;
  }
  if (!Array.isArray(items)) {
    problems.push(
      'MCP_SANDBOX_POLICY_FILE must hold a JSON list of {tokens?, subjects?, egress?, allow?, deny?} entries',
    );
    return byPrincipal;
  }
  items.forEach((item: unknown, index) => {
    const where = `MCP_SANDBOX_POLICY_FILE entry ${index + 1}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      problems.push(`${where} must be an object`);
      return;
    }
    const fields = item as Record<string, unknown>;
    const unknownKey = Object.keys(fields).find((k) => !['tokens', 'subjects', 'egress', 'allow', 'deny'].includes(k));
    if (unknownKey !== undefined) problems.push(`${where}: unknown field "${unknownKey}"`);
    const principals = principalsOf(where, fields, problems, context);
    const rule = toRule(where, fields, problems);
    if (principals === undefined || rule === undefined) return;
    if (principals.length === 0) problems.push(`${where} names no credential ("tokens" or "subjects")`);
    if (rule.mode === 'allowlist' && rule.allow === undefined && operator.mode !== 'allowlist')
      problems.push(`${where}: "egress": "allowlist" needs "allow" when MCP_SANDBOX_EGRESS is ${operator.mode}`);
    for (const principal of principals) {
      byPrincipal.set(principal, narrow(byPrincipal.get(principal) ?? operator, rule));
    }
  });
  return byPrincipal;
}

function toRule(
  where: string,
  fields: Record<string, unknown>,
  problems: string[],
): { mode?: EgressMode; allow?: EgressEntry[]; deny?: EgressEntry[] } | undefined {
  const { egress, allow, deny } = fields;
  if (egress !== undefined && egress !== 'none' && egress !== 'allowlist' && egress !== 'all') {
    problems.push(`${where}: "egress" must be none, allowlist or all`);
    return undefined;
  }
  const entries = (key: string, value: unknown): EgressEntry[] | undefined => {
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
      problems.push(`${where}: "${key}" must be a list of entries`);
      return undefined;
    }
    return parseEntries(`${where} "${key}"`, value.join(','), problems);
  };
  const allowed = entries('allow', allow);
  const denied = entries('deny', deny);
  // An allow list alone asks for an allow list.
  const mode = (egress as EgressMode | undefined) ?? (allowed === undefined ? undefined : 'allowlist');
  return {
    ...(mode === undefined ? {} : { mode }),
    ...(allowed === undefined ? {} : { allow: allowed }),
    ...(denied === undefined ? {} : { deny: denied }),
  };
}

function parseEntries(where: string, value: string | undefined, problems: string[]): EgressEntry[] {
  const entries: EgressEntry[] = [];
  for (const text of (value ?? '').split(',')) {
    if (text.trim() === '') continue;
    const entry = parseEntry(text);
    if (typeof entry === 'string') problems.push(`${where}: ${entry}`);
    else entries.push(entry);
  }
  return entries;
}

function parseResolvers(value: string | undefined, problems: string[]): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const servers: string[] = [];
  for (const item of value.split(',').map((s) => s.trim())) {
    const split = splitHostPort(item);
    const port = split?.port === undefined ? 53 : parsePort(split.port);
    if (split === undefined || isIP(split.host) === 0 || port === undefined) {
      problems.push(`MCP_SANDBOX_RESOLVER must list DNS servers as ip or ip:port, comma-separated (got "${item}")`);
      continue;
    }
    servers.push(item);
  }
  return servers;
}
