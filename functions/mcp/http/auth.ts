/** Bearer-token checks in constant time, and the principal id that binds sessions to a credential. */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import type { FetchHandler } from './context';
import { toErrorResponse } from './refusals';

export type BearerCheck = { ok: true; principal: string } | { ok: false; reason: 'missing' | 'invalid' };

/** Checks an `Authorization` header against the configured tokens. */
export interface BearerVerifier {
  check(authorization: string | null): BearerCheck;
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
  return {
    check(authorization) {
      const match = authorization === null ? null : /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorization);
      if (match?.[1] === undefined) return { ok: false, reason: 'missing' };
      const presented = digest(match[1]);
      let principal: string | undefined;
      for (const entry of entries) {
        if (timingSafeEqual(presented, entry.digest) && principal === undefined) principal = entry.principal;
      }
      return principal === undefined ? { ok: false, reason: 'invalid' } : { ok: true, principal };
    },
  };
}

/** A stable, non-reversible id for a credential: the same on every instance, never the token. */
export function toPrincipal(token: string): string {
  return createHash('sha256').update(`mcp-principal:${token}`).digest('hex').slice(0, 24);
}

/** Answers 401 with a Bearer challenge unless the request carries a valid token; sets `ctx.principal`. */
export function withAuth(next: FetchHandler, verifier: BearerVerifier | undefined): FetchHandler {
  return async (req, ctx) => {
    if (verifier === undefined) {
      ctx.principal = ANONYMOUS_PRINCIPAL;
      return next(req, ctx);
    }
    const result = verifier.check(req.headers.get('authorization'));
    if (result.ok) {
      ctx.principal = result.principal;
      return next(req, ctx);
    }
    ctx.log.error_code = `auth_${result.reason}`;
    return toErrorResponse({ kind: 'unauthorized', reason: result.reason });
  };
}
