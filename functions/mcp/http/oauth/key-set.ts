/**
 * The issuer's signing keys, from its `jwks_uri`, kept here rather than in jose's remote key set: that one, after
 * any unknown key id (an attacker's made-up one will do), refuses every unknown id for its whole cooldown, so a
 * token signed by a key the issuer had just rotated in got 401, and a 401 sends the user through sign-in again.
 *
 * The rules, all on the injected clock:
 * - the keys are fetched at most once per `cooldownMs` for tokens naming an unknown key id, so made-up ids cannot
 *   make the server hammer the issuer; concurrent tokens share one fetch;
 * - a token is judged against keys fetched after it arrived. One whose key id the held keys lack, when they are
 *   older than the token, waits for the next fetch the cooldown allows if that is at most `maxWaitMs` away, and is
 *   then checked against the fresh keys; otherwise it is `busy` (503 with `Retry-After`), never 401 for the
 *   cooldown alone. A key id still unknown after a fresh fetch is a real `invalid`;
 * - keys older than `maxAgeMs` are fetched again (when the cooldown allows) before use; if that fails, the keys
 *   held go on serving.
 */
import type { CryptoKey, JWSHeaderParameters } from 'jose';

import { describeError } from '../../errors';
import type { ClaimsCheck } from './introspection';
import type { Jose } from './jose-modules';

export interface KeySetOptions {
  /** The issuer's `jwks_uri`. */
  url: URL;
  fetch: typeof fetch;
  /** Milliseconds since the epoch. */
  now: () => number;
  /** Waits this many milliseconds (a token waiting for the next fetch). */
  sleep: (ms: number) => Promise<void>;
  /** The shortest time between two fetches for unknown key ids, in milliseconds. */
  cooldownMs: number;
  /** How long a token with an unknown key id may wait for the next fetch, in milliseconds; beyond, it is `busy`. */
  maxWaitMs: number;
  /** A fetch must answer within this, in milliseconds. */
  timeoutMs: number;
  /** Keys older than this are fetched again before use, in milliseconds. @default 10 min */
  maxAgeMs?: number;
  jose: Pick<Jose, 'createLocalJWKSet' | 'errors'>;
}

/**
 * The keys that may verify a token (one, or several of the held keys when they all match a token without a key id,
 * as in a rotation: each is tried), or why there are none (the failures of a ClaimsCheck).
 */
export type KeyLookup = { ok: true; keys: CryptoKey[] } | Exclude<ClaimsCheck, { ok: true }>;

export interface KeySet {
  /** The key for a token with this protected header. */
  keyFor(header: JWSHeaderParameters): Promise<KeyLookup>;
}

type LocalSet = ReturnType<Jose['createLocalJWKSet']>;

const DEFAULT_MAX_AGE_MS = 10 * 60_000;

export function createKeySet(options: KeySetOptions): KeySet {
  const { now, cooldownMs, maxWaitMs, maxAgeMs = DEFAULT_MAX_AGE_MS, jose } = options;
  let held: LocalSet | undefined;
  let fetchedAtMs = 0;
  /** When the last fetch started: the cooldown runs from it, whether it worked or not. */
  let attemptedAtMs = Number.NEGATIVE_INFINITY;
  /** Fetches started, and the number of the one whose keys are held. */
  let started = 0;
  let heldFrom = 0;
  let fetching: Promise<void> | undefined;
  let scheduled: Promise<void> | undefined;

  const fetchKeys = async (): Promise<LocalSet> => {
    const res = await options.fetch(options.url, {
      headers: { accept: 'application/json, application/jwk-set+json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`the key set (${options.url.href}) answered HTTP ${res.status}`);
    }
    // Throws JWKSInvalid for anything that is not a key set.
    return jose.createLocalJWKSet((await res.json()) as Parameters<Jose['createLocalJWKSet']>[0]);
  };
  /** One fetch at a time; every caller shares it. */
  const reload = (): Promise<void> => {
    fetching ??= (async () => {
      const number = ++started;
      attemptedAtMs = now();
      try {
        held = await fetchKeys();
        heldFrom = number;
        fetchedAtMs = now();
      } finally {
        fetching = undefined;
      }
    })();
    return fetching;
  };
  /** The fetch the cooldown allows next, `waitMs` from now; every token waiting for it shares it. */
  const reloadAfter = (waitMs: number): Promise<void> => {
    scheduled ??= options
      .sleep(waitMs)
      .then(reload)
      .finally(() => {
        scheduled = undefined;
      });
    return scheduled;
  };

  /** The held keys' key for `header`, `undefined` when they have none with its id, or why it cannot be used. */
  const lookUp = async (keys: LocalSet, header: JWSHeaderParameters): Promise<KeyLookup | undefined> => {
    try {
      return { ok: true, keys: [await keys(header)] };
    } catch (err: unknown) {
      const { JWKSNoMatchingKey, JWKSMultipleMatchingKeys, JWKSInvalid, JOSEError } = jose.errors;
      if (err instanceof JWKSNoMatchingKey) return undefined;
      if (err instanceof JWKSMultipleMatchingKeys) {
        // jose leaves trying them to the caller: the error iterates over the matching keys.
        const candidates: CryptoKey[] = [];
        for await (const key of err as unknown as AsyncIterable<CryptoKey>) candidates.push(key);
        return { ok: true, keys: candidates };
      }
      // A key of the set that cannot be imported is the issuer's fault; anything else (an algorithm a key set
      // cannot have) is the token's.
      if (err instanceof JWKSInvalid || !(err instanceof JOSEError))
        return { ok: false, reason: 'unavailable', detail: describeError(err) };
      return { ok: false, reason: 'invalid', detail: describeError(err) };
    }
  };

  return {
    async keyFor(header) {
      const arrival = started;
      if (held === undefined || (now() - fetchedAtMs >= maxAgeMs && now() - attemptedAtMs >= cooldownMs)) {
        try {
          await reload();
        } catch (err: unknown) {
          // Keys that are only old still verify the tokens they signed.
          if (held === undefined)
            return {
              ok: false,
              reason: 'unavailable',
              detail: `the issuer's keys cannot be fetched: ${describeError(err)}`,
            };
        }
      }
      for (;;) {
        const keys = held;
        if (keys === undefined)
          return { ok: false, reason: 'unavailable', detail: "the issuer's keys cannot be fetched" };
        const found = await lookUp(keys, header);
        if (found !== undefined) return found;
        if (heldFrom > arrival)
          return {
            ok: false,
            reason: 'invalid',
            detail: `no key of the issuer has the token's key id (${String(header.kid)}), fetched again`,
          };
        const waitMs = attemptedAtMs + cooldownMs - now();
        if (fetching === undefined && scheduled === undefined && waitMs > maxWaitMs) {
          const retryAfterS = Math.max(1, Math.ceil(waitMs / 1000));
          return {
            ok: false,
            reason: 'busy',
            detail:
              `the token's key id is unknown and the keys were fetched ${Math.round(now() - attemptedAtMs)} ms ` +
              `ago`,
            retryAfterS,
          };
        }
        try {
          await (fetching ?? scheduled ?? (waitMs <= 0 ? reload() : reloadAfter(waitMs)));
        } catch (err: unknown) {
          return {
            ok: false,
            reason: 'unavailable',
            detail: `the issuer's keys cannot be fetched: ${describeError(err)}`,
          };
        }
      }
    },
  };
}
