/**
 * Bearer-token checks: the static tokens in constant time, then (with MCP_OAUTH_ISSUER) OAuth access tokens; and
 * the principal id that binds sessions to a credential.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import { toPrincipal } from '../principals';
import type { OAuthCheck } from './oauth/token-verifier';

export type BearerCheck = { ok: true; principal: string } | { ok: false; reason: 'missing' | 'invalid' };

/** Checks an `Authorization` header against the configured tokens. */
export interface BearerVerifier {
  check(authorization: string | null): BearerCheck;
  /** The same for a token already taken from its header (bearerTokenOf). */
  checkToken(token: string | undefined): BearerCheck;
}

/** The principal of an unauthenticated server (`MCP_AUTH=none`, or loopback without tokens). */
export const ANONYMOUS_PRINCIPAL = 'anonymous';

/**
 * Creates a verifier for `tokens`. Every token and the presented value are HMAC'd with a per-process
 * key, and all digests are compared, so timing reveals neither a token's content nor its length.
 * An empty list refuses everything.
 */
export function createBearerVerifier(tokens: readonly string[]): BearerVerifier {
  const key = randomBytes(32);
  const digest = (value: string): Buffer => createHmac('sha256', key).update(value).digest();
  const entries = tokens.map((token) => ({ digest: digest(token), principal: toPrincipal(token) }));
  const checkToken = (token: string | undefined): BearerCheck => {
    if (token === undefined) return { ok: false, reason: 'missing' };
    const presented = digest(token);
    let principal: string | undefined;
    for (const entry of entries) {
      if (timingSafeEqual(presented, entry.digest) && principal === undefined) principal = entry.principal;
    }
    return principal === undefined ? { ok: false, reason: 'invalid' } : { ok: true, principal };
  };
  return { check: (authorization) => checkToken(bearerTokenOf(authorization)), checkToken };
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerTokenOf(authorization: string | null): string | undefined {
  return authorization === null ? undefined : /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorization)?.[1];
}

/** OAuth beside the static tokens (MCP_OAUTH_ISSUER): the verifier and the challenges that point at its metadata. */
export interface OAuthGate {
  /** `peer`: the client's address (RequestContext `peer`). */
  verify(token: string, peer?: string): Promise<OAuthCheck>;
  challenge(error?: 'invalid_token' | 'insufficient_scope'): string;
}
