/**
 * Opaque access tokens (not JWTs), asked about at the issuer's RFC 7662 introspection endpoint with this server's
 * client credentials (MCP_OAUTH_INTROSPECTION_CLIENT_ID/_SECRET, HTTP Basic as RFC 6749 §2.3.1 has it). A token
 * counts when the issuer says it is `active`, names this server in `aud`, and, where the answer has them, names the
 * issuer in `iss` and is within `exp`/`nbf` (the same leeway as a JWT's). An active answer is remembered by the
 * token's hash until its `exp`, at most a minute, so a session's calls do not each cost a round trip; at most
 * MAX_IN_FLIGHT questions are asked at once, so that a flood of made-up tokens cannot turn the server into a
 * flood against the issuer.
 */
import { createHash } from 'node:crypto';

import { describeError } from '../../errors';

/** A token's claims, or why there are none: not a token this server takes (`invalid`), or the issuer could not say (`unavailable`). */
export type ClaimsCheck = { ok: true; claims: Record<string, unknown> } | { ok: false; reason: 'invalid' | 'unavailable'; detail: string };

export interface Introspector {
  claimsOf(token: string, endpoint: URL): Promise<ClaimsCheck>;
}

export interface IntrospectorOptions {
  issuer: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  fetch: typeof fetch;
  now: () => number;
  clockToleranceS: number;
  timeoutMs: number;
}

/** How long an active answer is trusted at most, and how many are kept. */
const REMEMBER_MS = 60_000;
const REMEMBERED = 1_000;
const MAX_IN_FLIGHT = 16;

export function createIntrospector(options: IntrospectorOptions): Introspector {
  const remembered = new Map<string, { claims: Record<string, unknown>; untilMs: number }>();
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64')}`;
  let inFlight = 0;

  const ask = async (token: string, endpoint: URL): Promise<ClaimsCheck> => {
    if (inFlight >= MAX_IN_FLIGHT) return { ok: false, reason: 'unavailable', detail: `${MAX_IN_FLIGHT} introspections already in flight` };
    inFlight += 1;
    try {
      const res = await options.fetch(endpoint, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      if (res.status !== 200) {
        await res.body?.cancel();
        return { ok: false, reason: 'unavailable', detail: `introspection answered HTTP ${res.status}` };
      }
      const answer = (await res.json()) as unknown;
      if (typeof answer !== 'object' || answer === null) return { ok: false, reason: 'unavailable', detail: 'introspection answered no JSON object' };
      return judge(answer as Record<string, unknown>, options);
    } catch (err: unknown) {
      return { ok: false, reason: 'unavailable', detail: `introspection failed: ${describeError(err)}` };
    } finally {
      inFlight -= 1;
    }
  };

  return {
    async claimsOf(token, endpoint) {
      const key = createHash('sha256').update(token).digest('base64url');
      const known = remembered.get(key);
      if (known !== undefined && known.untilMs > options.now()) return { ok: true, claims: known.claims };
      remembered.delete(key);
      const outcome = await ask(token, endpoint);
      if (outcome.ok) {
        const exp = typeof outcome.claims.exp === 'number' ? outcome.claims.exp * 1000 : Number.POSITIVE_INFINITY;
        if (remembered.size >= REMEMBERED) remembered.delete(remembered.keys().next().value as string);
        remembered.set(key, { claims: outcome.claims, untilMs: Math.min(exp, options.now() + REMEMBER_MS) });
      }
      return outcome;
    },
  };
}

/** Whether an introspection answer makes the token one this server takes. */
function judge(answer: Record<string, unknown>, options: IntrospectorOptions): ClaimsCheck {
  if (answer.active !== true) return { ok: false, reason: 'invalid', detail: 'the issuer says the token is not active' };
  if (answer.iss !== undefined && answer.iss !== options.issuer) return { ok: false, reason: 'invalid', detail: `the token's issuer is ${String(answer.iss)}` };
  const audiences = typeof answer.aud === 'string' ? [answer.aud] : Array.isArray(answer.aud) ? answer.aud : [];
  if (!audiences.includes(options.audience)) return { ok: false, reason: 'invalid', detail: 'the token is not for this server (aud)' };
  const nowS = options.now() / 1000;
  if (typeof answer.exp === 'number' && answer.exp < nowS - options.clockToleranceS) return { ok: false, reason: 'invalid', detail: 'the token has expired' };
  if (typeof answer.nbf === 'number' && answer.nbf > nowS + options.clockToleranceS) return { ok: false, reason: 'invalid', detail: 'the token is not valid yet' };
  return { ok: true, claims: answer };
}
