/**
 * The principal of a credential: a stable, non-reversible id (the same on every instance, never the token) that
 * sessions, sandboxes and per-credential settings belong to. One for each static token, one for each OAuth subject
 * of the issuer; the two never coincide.
 */
import { hashTag } from './hash-tag';

/** The principal of a static bearer token. */
export function toPrincipal(token: string): string {
  return hashTag(`mcp-principal:${token}`, 24);
}

/** The principal of an OAuth subject at `issuer`. */
export function toSubjectPrincipal(issuer: string, subject: string): string {
  return `oauth-${hashTag(`mcp-principal-oauth:${issuer}\n${subject}`, 24)}`;
}
