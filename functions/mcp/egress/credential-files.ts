/**
 * The operator's files that name credentials or hold secrets (MCP_SANDBOX_POLICY_FILE, MCP_SANDBOX_SECRETS_FILE):
 * read only when no other user of the host may read them, and their `tokens` and `subjects` turned into the
 * principals the server knows credentials by (principals.ts). Problems are collected, not thrown.
 */
import { readFileSync, statSync } from 'node:fs';

import { toErrnoCode } from '../errors';
import { toPrincipal, toSubjectPrincipal } from '../principals';

export interface CredentialFileContext {
  /** MCP_OAUTH_ISSUER, for `subjects`. */
  readonly issuer?: string;
}

/** The text of a file that names credentials or holds secrets; refused when group or others may read it. */
export function readPrivateFile(variable: string, file: string, problems: string[]): string | undefined {
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
export function principalsOf(
  where: string,
  item: Record<string, unknown>,
  problems: string[],
  context: CredentialFileContext,
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
