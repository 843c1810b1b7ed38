/**
 * The egress settings, read once at start-up with the rest of the configuration (config.ts): the operator's
 * policy (MCP_SANDBOX_EGRESS, MCP_SANDBOX_ALLOW, MCP_SANDBOX_DENY), the per-credential narrowing of it
 * (MCP_SANDBOX_POLICY_FILE), and the DNS servers the local proxy asks (MCP_SANDBOX_RESOLVER). Files that name
 * credentials are refused when other users may read them. Problems are collected, not thrown.
 */
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';

import { toErrnoCode } from '../errors';
import { toPrincipal, toSubjectPrincipal } from '../principals';
import { parsePort, splitHostPort } from './addresses';
import { type EgressEntry, type EgressMode, type EgressPolicy, narrow, parseEntry, toPolicy } from './policy';

export interface EgressConfig {
  /** The operator's policy: every sandbox's, unless its owner's is narrower. @default none */
  readonly operator: EgressPolicy;
  /** The narrower policies of the credentials MCP_SANDBOX_POLICY_FILE names, by principal. */
  readonly byPrincipal: ReadonlyMap<string, EgressPolicy>;
  /** MCP_SANDBOX_RESOLVER: `ip[:port]` of the DNS servers the local proxy resolves names with. @default the host's */
  readonly resolvers?: readonly string[];
  /** Files that must not be seen inside a sandbox (the policy file). */
  readonly hiddenPaths: readonly string[];
}

/** The policy a sandbox of `principal` runs under. */
export function policyFor(config: EgressConfig, principal: string): EgressPolicy {
  return config.byPrincipal.get(principal) ?? config.operator;
}

type Env = Readonly<Record<string, string | undefined>>;

export interface EgressConfigContext {
  /** MCP_OAUTH_ISSUER, for `subjects` in the policy file. */
  readonly issuer?: string;
}

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
  return {
    operator,
    byPrincipal,
    ...(resolvers === undefined ? {} : { resolvers }),
    hiddenPaths: file === undefined ? [] : [file],
  };
}

/** The text of a file that names credentials or holds secrets; refused when group or others may read it. */
function readPrivateFile(variable: string, file: string, problems: string[]): string | undefined {
  try {
    const mode = statSync(file).mode;
    if ((mode & 0o044) !== 0) {
      problems.push(`${variable} may be read by other users of this host: chmod 600 ${file}`);
      return undefined;
    }
    return readFileSync(file, 'utf8');
  } catch (err: unknown) {
    problems.push(`${variable} cannot be read (${toErrnoCode(err) ?? 'unreadable'}): ${file}`);
    return undefined;
  }
}

/** The principals a file entry's `tokens` and `subjects` name; problems for anything else. */
function principalsOf(
  where: string,
  item: Record<string, unknown>,
  problems: string[],
  context: EgressConfigContext,
): string[] | undefined {
  const list = (key: string): string[] | undefined => {
    const value = item[key];
    if (value === undefined) return [];
    if (Array.isArray(value) && value.every((v) => typeof v === 'string' && v !== '')) return value as string[];
    problems.push(`${where}: "${key}" must be a list of non-empty strings`);
    return undefined;
  };
  const tokens = list('tokens');
  const subjects = list('subjects');
  if (tokens === undefined || subjects === undefined) return undefined;
  if (subjects.length > 0 && context.issuer === undefined) {
    problems.push(`${where}: "subjects" are OAuth subjects and need MCP_OAUTH_ISSUER`);
    return undefined;
  }
  return [...tokens.map(toPrincipal), ...subjects.map((subject) => toSubjectPrincipal(context.issuer ?? '', subject))];
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
