/**
 * Opaque access tokens (not JWTs), asked about at the issuer's RFC 7662 introspection endpoint with this server's
 * client credentials (MCP_OAUTH_INTROSPECTION_CLIENT_ID/_SECRET, HTTP Basic as RFC 6749 §2.3.1 has it). A token
 * counts when the issuer says it is `active`, names this server in `aud`, and, where the answer has them, names the
 * issuer in `iss` and is within `exp`/`nbf` (the same leeway as a JWT's).
 *
 * Anyone can send a made-up token, and each costs a question to the issuer, so what one client may ask is bounded:
 * - an active answer is remembered by the token's hash until its `exp`, at most a minute, so a session's calls do
 *   not each cost a round trip; a refusal (not active, not for this server) for REFUSED_MS, so that the same
 *   made-up token does not either; one question at a time per token;
 * - at most MAX_IN_FLIGHT questions are asked at once, so that a flood cannot turn the server into a flood against
 *   the issuer, and at most MAX_PER_PEER for one client address (`peer`), so that a client flooding made-up tokens
 *   takes its own share and not everyone's;
 * - more wait for their turn, in order, in a queue of MAX_QUEUED (MAX_QUEUED_PER_PEER of one client), at most
 *   QUEUE_WAIT_MS; a question that finds its queue full, or waits that long, is `busy` (503 with Retry-After),
 *   rather than refused the moment the caps are reached.
 */
import { createHash } from 'node:crypto';

import { describeError } from '../../errors';

/**
 * A token's claims, or why there are none: not a token this server takes (`invalid`), the issuer could not say
 * (`unavailable`), or the question must wait its turn (`busy`, with when to retry).
 */
export type ClaimsCheck =
  | { ok: true; claims: Record<string, unknown> }
  | { ok: false; reason: 'invalid' | 'unavailable'; detail: string }
  | { ok: false; reason: 'busy'; detail: string; retryAfterS: number };

export interface Introspector {
  /** `peer`: the client's address, whose questions are capped; `undefined` when unknown (then only the global caps
   * apply). */
  claimsOf(token: string, endpoint: URL, peer: string | undefined): Promise<ClaimsCheck>;
}

export interface IntrospectorOptions {
  issuer: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  fetch: typeof fetch;
  now: () => number;
  /** Waits this many milliseconds: the bound on a queued question's wait. */
  sleep: (ms: number) => Promise<void>;
  clockToleranceS: number;
  timeoutMs: number;
}

/** How long an active answer is trusted at most, and how many are kept. */
const REMEMBER_MS = 60_000;
const REMEMBERED = 1_000;
/** How long a refusal is remembered, and how many are kept. */
const REFUSED_MS = 30_000;
const REFUSED_REMEMBERED = 4_096;
/** Questions asked at once, and waiting at most; the same for one client address. */
export const MAX_IN_FLIGHT = 16;
export const MAX_QUEUED = 64;
export const MAX_PER_PEER = 4;
export const MAX_QUEUED_PER_PEER = 16;
/** How long a question waits for its turn, in milliseconds. */
export const QUEUE_WAIT_MS = 5_000;
/** What a client whose question could not be asked is told to wait. */
const BUSY_RETRY_AFTER_S = 2;

export function createIntrospector(options: IntrospectorOptions): Introspector {
  const remembered = new Map<string, { claims: Record<string, unknown>; untilMs: number }>();
  const refused = new Map<string, { check: ClaimsCheck; untilMs: number }>();
  const asking = new Map<string, Promise<ClaimsCheck>>();
  const asked = new Map<string, number>();
  const waiting = new Map<string, number>();
  const queue: Array<{ peer: string | undefined; grant: () => void }> = [];
  const userPass = `${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`;
  const basic = `Basic ${Buffer.from(userPass).toString('base64')}`;
  let inFlight = 0;

  const busy = (detail: string): ClaimsCheck => ({
    ok: false,
    reason: 'busy',
    detail,
    retryAfterS: BUSY_RETRY_AFTER_S,
  });

  const mayAsk = (peer: string | undefined): boolean =>
    inFlight < MAX_IN_FLIGHT && (peer === undefined || (asked.get(peer) ?? 0) < MAX_PER_PEER);
  const startTurn = (peer: string | undefined): void => {
    inFlight += 1;
    if (peer !== undefined) count(asked, peer, 1);
  };
  /**
   * A turn to ask, or why not: at once within the caps, else in the queue's order once `peer` and the server are
   * under their caps again, within QUEUE_WAIT_MS. (A question that finds room asks at once: the ones waiting ahead of
   * it wait for their own client's turns, or room would have gone to them.)
   */
  const takeTurn = async (peer: string | undefined): Promise<string | undefined> => {
    if (mayAsk(peer)) {
      startTurn(peer);
      return undefined;
    }
    if (peer !== undefined && (waiting.get(peer) ?? 0) >= MAX_QUEUED_PER_PEER)
      return `this client has ${MAX_PER_PEER} introspections in flight and ${MAX_QUEUED_PER_PEER} waiting`;
    if (queue.length >= MAX_QUEUED) return `${MAX_IN_FLIGHT} introspections in flight and ${MAX_QUEUED} waiting`;
    if (peer !== undefined) count(waiting, peer, 1);
    const turn = await new Promise<boolean>((resolve) => {
      const waiter = { peer, grant: () => resolve(true) };
      queue.push(waiter);
      void options.sleep(QUEUE_WAIT_MS).then(() => {
        const at = queue.indexOf(waiter);
        if (at < 0) return;
        queue.splice(at, 1);
        resolve(false);
      });
    });
    if (peer !== undefined) count(waiting, peer, -1);
    return turn ? undefined : `no turn to introspect within ${QUEUE_WAIT_MS} ms`;
  };
  /** Ends `peer`'s turn and gives one to the first waiting question that may ask now. */
  const endTurn = (peer: string | undefined): void => {
    inFlight -= 1;
    if (peer !== undefined) count(asked, peer, -1);
    const at = queue.findIndex((waiter) => mayAsk(waiter.peer));
    const next = at < 0 ? undefined : queue.splice(at, 1)[0];
    if (next === undefined) return;
    startTurn(next.peer);
    next.grant();
  };

  const ask = async (token: string, endpoint: URL): Promise<ClaimsCheck> => {
    try {
      const res = await options.fetch(endpoint, {
        method: 'POST',
        headers: {
          authorization: basic,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      if (res.status !== 200) {
        await res.body?.cancel();
        return { ok: false, reason: 'unavailable', detail: `introspection answered HTTP ${res.status}` };
      }
      const answer = (await res.json()) as unknown;
      if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
        return { ok: false, reason: 'unavailable', detail: 'introspection answered no JSON object' };
      return judge(answer as Record<string, unknown>, options);
    } catch (err: unknown) {
      return { ok: false, reason: 'unavailable', detail: `introspection failed: ${describeError(err)}` };
    }
  };

  /** Asks in turn and remembers what the issuer said. */
  const askInTurn = async (
    key: string,
    token: string,
    endpoint: URL,
    peer: string | undefined,
  ): Promise<ClaimsCheck> => {
    const noTurn = await takeTurn(peer);
    if (noTurn !== undefined) return busy(noTurn);
    let outcome: ClaimsCheck;
    try {
      outcome = await ask(token, endpoint);
    } finally {
      endTurn(peer);
    }
    if (outcome.ok) {
      const exp = typeof outcome.claims.exp === 'number' ? outcome.claims.exp * 1000 : Number.POSITIVE_INFINITY;
      remember(remembered, REMEMBERED, key, {
        claims: outcome.claims,
        untilMs: Math.min(exp, options.now() + REMEMBER_MS),
      });
    } else if (outcome.reason === 'invalid') {
      remember(refused, REFUSED_REMEMBERED, key, { check: outcome, untilMs: options.now() + REFUSED_MS });
    }
    return outcome;
  };

  return {
    async claimsOf(token, endpoint, peer) {
      const key = createHash('sha256').update(token).digest('base64url');
      const known = remembered.get(key);
      if (known !== undefined && known.untilMs > options.now()) return { ok: true, claims: known.claims };
      remembered.delete(key);
      const refusal = refused.get(key);
      if (refusal !== undefined && refusal.untilMs > options.now()) return refusal.check;
      refused.delete(key);
      // The same token asked about again before the answer came: it waits for that answer, without a turn of its own.
      const pending = asking.get(key);
      if (pending !== undefined) return pending;
      const outcome = askInTurn(key, token, endpoint, peer);
      asking.set(key, outcome);
      try {
        return await outcome;
      } finally {
        asking.delete(key);
      }
    },
  };
}

function count(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}

/** Keeps `entry` under `key`, letting the oldest entry go when `max` are kept. */
function remember<T>(entries: Map<string, T>, max: number, key: string, entry: T): void {
  entries.delete(key);
  if (entries.size >= max) entries.delete(entries.keys().next().value as string);
  entries.set(key, entry);
}

/** Whether an introspection answer makes the token one this server takes. */
function judge(answer: Record<string, unknown>, options: IntrospectorOptions): ClaimsCheck {
  if (answer.active !== true)
    return { ok: false, reason: 'invalid', detail: 'the issuer says the token is not active' };
  if (answer.iss !== undefined && answer.iss !== options.issuer)
    return { ok: false, reason: 'invalid', detail: `the token's issuer is ${String(answer.iss)}` };
  const audiences = typeof answer.aud === 'string' ? [answer.aud] : Array.isArray(answer.aud) ? answer.aud : [];
  if (!audiences.includes(options.audience))
    return { ok: false, reason: 'invalid', detail: 'the token is not for this server (aud)' };
  const nowS = options.now() / 1000;
  if (typeof answer.exp === 'number' && answer.exp < nowS - options.clockToleranceS)
    return { ok: false, reason: 'invalid', detail: 'the token has expired' };
  if (typeof answer.nbf === 'number' && answer.nbf > nowS + options.clockToleranceS)
    return { ok: false, reason: 'invalid', detail: 'the token is not valid yet' };
  return { ok: true, claims: answer };
}
