/**
 * Verifies OAuth access tokens (JWTs) from the configured issuer with jose: the algorithm first, which must be
 * asymmetric and, when the issuer publishes its signing algorithms, one of them (never `none`, never an HMAC keyed
 * with a public key); then the key, from the issuer's `jwks_uri` (issuer-metadata.ts), cached, and fetched again
 * when a token names a key id the cache does not hold (key rotation; at most once per `jwksCooldownMs`, so that
 * made-up key ids cannot make the server hammer the issuer, a token that came during the cooldown waiting for the
 * next fetch: key-set.ts); then `iss`, `aud`, `exp`/`nbf` with a small leeway, `sub` and the required scopes. A
 * token that is not a JWT is asked about at the issuer's introspection endpoint when this server has credentials
 * for it (introspection.ts), and refused otherwise. The verified subject (`iss` + `sub`)
 * becomes the principal that sessions and sandboxes belong to, so a refreshed token goes on with the same sessions.
 */
import type { OAuthConfig } from '../../config-oauth';
import { describeError } from '../../errors';
import { toSubjectPrincipal } from '../../principals';
import { type ClaimsCheck, createIntrospector } from './introspection';
import { fetchIssuerMetadata, type IssuerMetadata } from './issuer-metadata';
import { loadJose } from './jose-modules';
import { createKeySet, type KeySet } from './key-set';

export type OAuthCheck =
  | { ok: true; principal: string }
  /** `invalid`: not a token of this issuer for this server (401); `insufficient_scope`: one lacking a required scope
   * (403). */
  | { ok: false; reason: 'invalid' | 'insufficient_scope'; detail: string }
  /** The issuer's metadata or keys could not be fetched: the token may be fine, so not a 401 (503). */
  | { ok: false; reason: 'unavailable'; detail: string }
  /** The token could not be checked yet (its key is not fetched yet, or introspection is at its caps): 503 with
   * `Retry-After`. */
  | { ok: false; reason: 'busy'; detail: string; retryAfterS: number; what: 'introspection' | 'keys' };

export interface OAuthVerifier {
  /** `peer`: the client's address (RequestContext `peer`), whose introspections are capped. */
  verify(token: string, peer?: string): Promise<OAuthCheck>;
}

export interface OAuthVerifierOptions {
  /** @default the global fetch */
  fetch?: typeof fetch;
  /** The shortest time between two fetches of the issuer's keys for unknown key ids, in milliseconds. @default 30 s */
  jwksCooldownMs?: number;
  /**
   * How long a token whose key id is unknown may wait for the next fetch the cooldown allows, in milliseconds;
   * longer, it gets 503 with `Retry-After`. @default 10 s
   */
  keyWaitMaxMs?: number;
  /** How long a failed metadata lookup is remembered before the next request tries again. @default 10 s */
  retryAfterMs?: number;
  /** @default Date.now */
  now?: () => number;
  /** Waits (a token for the next key fetch, a question for its turn at introspection). @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
}

/** What checking a token needs of its issuer, found once: its metadata, its key set, the algorithms allowed. */
interface IssuerKeys {
  readonly metadata: IssuerMetadata;
  readonly keys: KeySet;
  readonly algorithms: string[];
}

/** A JWS in compact form (three base64url parts); anything else is an opaque token. */
const JWT_SHAPE = /^[\w-]+\.[\w-]*\.[\w-]*$/;

/** Algorithms a token may be signed with: asymmetric only. */
const ASYMMETRIC = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
/** Leeway on `exp` and `nbf` for clocks a little apart. */
const CLOCK_TOLERANCE_S = 60;
const FETCH_TIMEOUT_MS = 5_000;

export function createOAuthVerifier(config: OAuthConfig, options: OAuthVerifierOptions = {}): OAuthVerifier {
  const fetchImpl = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const retryAfterMs = options.retryAfterMs ?? 10_000;
  let keys: Promise<IssuerKeys> | undefined;
  let failedAt = 0;

  /** The issuer's key set and the algorithms its tokens may use, once its metadata is known. */
  const issuerKeys = async (metadata: IssuerMetadata): Promise<IssuerKeys> => {
    const jose = await loadJose();
    const keySet = createKeySet({
      url: metadata.jwksUri,
      fetch: fetchImpl,
      now,
      sleep,
      cooldownMs: options.jwksCooldownMs ?? 30_000,
      maxWaitMs: options.keyWaitMaxMs ?? 10_000,
      timeoutMs: FETCH_TIMEOUT_MS,
      jose,
    });
    const published = metadata.signingAlgorithms;
    return {
      metadata,
      keys: keySet,
      algorithms: published === undefined ? ASYMMETRIC : ASYMMETRIC.filter((alg) => published.includes(alg)),
    };
  };
  const keysOf = (): Promise<IssuerKeys> => {
    if (keys === undefined || (failedAt !== 0 && now() - failedAt >= retryAfterMs)) {
      failedAt = 0;
      keys = fetchIssuerMetadata(config.issuer, fetchImpl, FETCH_TIMEOUT_MS).then(issuerKeys);
      keys.catch(() => {
        failedAt = now();
      });
    }
    return keys;
  };

  const introspector =
    config.introspection === undefined
      ? undefined
      : createIntrospector({
          ...config.introspection,
          issuer: config.issuer,
          audience: config.audience,
          fetch: fetchImpl,
          now,
          sleep,
          clockToleranceS: CLOCK_TOLERANCE_S,
          timeoutMs: FETCH_TIMEOUT_MS,
        });

  /** The claims of a JWT the issuer signed for this server, or why not. */
  const jwtClaims = async ({ keys, algorithms }: IssuerKeys, token: string): Promise<ClaimsCheck> => {
    const jose = await loadJose();
    // The algorithm before the key: a token that names one this server never takes costs no key fetch or wait.
    let header: ReturnType<typeof jose.decodeProtectedHeader>;
    try {
      header = jose.decodeProtectedHeader(token);
    } catch (err: unknown) {
      return { ok: false, reason: 'invalid', detail: describeError(err) };
    }
    if (typeof header.alg !== 'string' || !algorithms.includes(header.alg)) {
      return {
        ok: false,
        reason: 'invalid',
        detail: `"alg" (Algorithm) Header Parameter value not allowed: ${String(header.alg)}`,
      };
    }
    const found = await keys.keyFor(header);
    if (!found.ok) return found;
    let refusal: ClaimsCheck = { ok: false, reason: 'invalid', detail: 'no key of the issuer matches the token' };
    for (const key of found.keys) {
      try {
        const { payload } = await jose.jwtVerify(token, key, {
          issuer: config.issuer,
          audience: config.audience,
          algorithms,
          clockTolerance: CLOCK_TOLERANCE_S,
          requiredClaims: ['exp', 'sub'],
          currentDate: new Date(now()),
        });
        return { ok: true, claims: payload };
      } catch (err: unknown) {
        // With the key in hand, every failure of jose's is about the token; anything else is not.
        if (!(err instanceof jose.errors.JOSEError))
          return { ok: false, reason: 'unavailable', detail: describeError(err) };
        refusal = { ok: false, reason: 'invalid', detail: describeError(err) };
        // Only another key can make a bad signature good; any other fault is the token's whatever the key.
        if (!(err instanceof jose.errors.JWSSignatureVerificationFailed)) return refusal;
      }
    }
    return refusal;
  };

  /** The claims of an opaque token, from the issuer's introspection endpoint when this server may ask it. */
  const opaqueClaims = async (
    { metadata }: IssuerKeys,
    token: string,
    peer: string | undefined,
  ): Promise<ClaimsCheck> => {
    if (introspector === undefined)
      return {
        ok: false,
        reason: 'invalid',
        detail: 'not a JWT, and opaque tokens are not introspected (MCP_OAUTH_INTROSPECTION_CLIENT_ID)',
      };
    if (metadata.introspectionEndpoint === undefined)
      return { ok: false, reason: 'unavailable', detail: 'the issuer publishes no introspection_endpoint' };
    return introspector.claimsOf(token, metadata.introspectionEndpoint, peer);
  };

  return {
    async verify(token, peer) {
      let resolved: IssuerKeys;
      try {
        resolved = await keysOf();
      } catch (err: unknown) {
        return { ok: false, reason: 'unavailable', detail: describeError(err) };
      }
      const jwt = JWT_SHAPE.test(token);
      const checked = jwt ? await jwtClaims(resolved, token) : await opaqueClaims(resolved, token, peer);
      if (!checked.ok)
        return checked.reason === 'busy' ? { ...checked, what: jwt ? 'keys' : 'introspection' } : checked;
      const payload = checked.claims;
      if (typeof payload.sub !== 'string' || payload.sub === '')
        return { ok: false, reason: 'invalid', detail: 'the token has no subject' };
      const granted = scopesOf(payload);
      const missing = config.scopes.filter((scope) => !granted.has(scope));
      if (missing.length > 0)
        return { ok: false, reason: 'insufficient_scope', detail: `missing scope ${missing.join(' ')}` };
      return { ok: true, principal: toSubjectPrincipal(config.issuer, payload.sub) };
    },
  };
}

/** The scopes a token grants: `scope` (RFC 9068, space-separated) or `scp` (a list, as some issuers write it). */
function scopesOf(payload: Record<string, unknown>): Set<string> {
  const { scope, scp } = payload;
  if (typeof scope === 'string') return new Set(scope.split(' ').filter((s) => s !== ''));
  if (Array.isArray(scp)) return new Set(scp.filter((s): s is string => typeof s === 'string'));
  if (typeof scp === 'string') return new Set(scp.split(' ').filter((s) => s !== ''));
  return new Set();
}
