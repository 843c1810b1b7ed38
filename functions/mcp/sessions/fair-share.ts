/**
 * Fair sharing of one instance between credentials: who makes room when a credential wants one more
 * session or sandbox. The lanes hold their sessions and sandboxes; this file only decides.
 *
 * - A credential at its own cap lets its own least recently used idle holder go, else it is refused (429).
 * - An instance at its cap takes room from the credential that holds the most (its least recently used idle
 *   holder), then from the next, and so on; if nobody has an idle holder it is refused (503).
 * - A busy holder (a call or a background process running) is never let go, for anyone.
 *
 * "Let go" means released, not destroyed: an evicted session or sandbox comes back on its next request.
 */
import { AppError } from '../errors';

/** One session or sandbox held for a credential. */
export interface Holder {
  /** The credential's non-secret id. */
  readonly principal: string;
  /** Milliseconds since the epoch of its last use. */
  readonly lastUsedMs: number;
  /** True while a call or a background process runs. */
  busy(): boolean;
}

/** A cap and the setting that sets it (named in refusals). */
export interface Cap {
  readonly max: number;
  readonly setting: string;
}

/** What to let go to make room, or why there is none. */
export type RoomDecision<H> =
  | { readonly ok: true; readonly evict?: H }
  | { readonly ok: false; readonly refusal: Refusal };

/**
 * A refusal for the wire (the `no_room` row of http/refusals.ts): 429 for a credential at its own cap, 503 for a full
 * instance.
 */
export interface Refusal {
  readonly status: 429 | 503;
  /** The log's `error_code`: a credential at its own share, or a full instance. */
  readonly code: 'credential_share' | 'capacity';
  /** The setting whose limit was reached. */
  readonly setting: string;
  readonly message: string;
  readonly retryAfterS: number;
}

/** Seconds a refused client is told to wait. */
export const ROOM_RETRY_AFTER_S = 30;

export interface RoomRequest<H extends Holder> {
  /** Everything of this kind the instance holds (both eras, where both count). */
  readonly holders: Iterable<H>;
  readonly principal: string;
  /** The credential's own cap. */
  readonly perCredential: Cap;
  /** The instance's cap; `undefined` when only the credential's own cap applies. */
  readonly total?: Cap;
  /** What is being counted, for messages ("sessions", "sandboxes"). */
  readonly noun: string;
}

/** Decides how one more holder of `principal` fits. */
export function makeRoom<H extends Holder>({
  holders,
  principal,
  perCredential,
  total,
  noun,
}: RoomRequest<H>): RoomDecision<H> {
  const byPrincipal = new Map<string, H[]>();
  let count = 0;
  for (const holder of holders) {
    count += 1;
    const list = byPrincipal.get(holder.principal);
    if (list === undefined) byPrincipal.set(holder.principal, [holder]);
    else list.push(holder);
  }
  const own = byPrincipal.get(principal) ?? [];
  // A share as large as the instance is the instance's cap (one credential, as with MCP_AUTH=none): 503 below.
  if (own.length >= perCredential.max && (total === undefined || perCredential.max < total.max)) {
    const evict = leastRecentIdle(own);
    if (evict !== undefined) return { ok: true, evict };
    return refuse(
      429,
      perCredential,
      `This credential already holds ${own.length} ${noun}, all busy (${perCredential.setting}=${perCredential.max}).`,
    );
  }
  if (total === undefined || count < total.max) return { ok: true };
  // The instance is full: the credential holding the most gives first (ties: the one idle longest).
  const lists = [...byPrincipal.values()].sort((a, b) => b.length - a.length || oldest(a) - oldest(b));
  for (const list of lists) {
    const evict = leastRecentIdle(list);
    if (evict !== undefined) return { ok: true, evict };
  }
  return refuse(503, total, `Server at capacity: ${count} ${noun} are busy (${total.setting}=${total.max}).`);
}

function refuse(status: 429 | 503, cap: Cap, reason: string): RoomDecision<never> {
  const message = `${reason} Retry in ${ROOM_RETRY_AFTER_S} s, or end unused ones (DELETE a session).`;
  const code = status === 429 ? 'credential_share' : 'capacity';
  return { ok: false, refusal: { status, code, setting: cap.setting, message, retryAfterS: ROOM_RETRY_AFTER_S } };
}

function leastRecentIdle<H extends Holder>(list: readonly H[]): H | undefined {
  let pick: H | undefined;
  for (const holder of list) {
    if (holder.busy()) continue;
    if (pick === undefined || holder.lastUsedMs < pick.lastUsedMs) pick = holder;
  }
  return pick;
}

function oldest(list: readonly Holder[]): number {
  let min = Infinity;
  for (const holder of list) min = Math.min(min, holder.lastUsedMs);
  return min;
}

/** A running sandbox, as its credential's share counts it. */
export interface SandboxHolder extends Holder {
  /** Lets the sandbox go (kept for its session or handle to come back to). */
  release(): Promise<void>;
}

/**
 * The admit hook of every lazy sandbox (sandbox/lazy-sandbox.ts): a credential at MCP_MAX_SANDBOXES_PER_CREDENTIAL
 * lets its own least recently used idle sandbox go, or is refused with an AppError naming the limit.
 * `holders` lists the running sandboxes of both protocol eras.
 */
export function createSandboxAdmission(
  holders: () => Iterable<SandboxHolder>,
  perCredential: Cap,
  onEvict: (holder: SandboxHolder) => void,
): (principal: string) => () => void {
  return (principal) => () => {
    const decision = makeRoom({ holders: holders(), principal, perCredential, noun: 'sandboxes' });
    if (!decision.ok) throw new AppError('capacity', decision.refusal.message);
    if (decision.evict !== undefined) {
      onEvict(decision.evict);
      void decision.evict.release().catch(() => undefined);
    }
  };
}
