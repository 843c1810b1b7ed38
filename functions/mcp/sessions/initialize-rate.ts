/**
 * How fast one credential may open sessions on an instance: a token bucket per principal, `burst` deep, refilled
 * at `perMinute`. Every path that mints a session id takes from it (the 2025 lane's `initialize`, and a cold
 * instance's early answer), so what a credential can make the server keep for its sessions (their state, their
 * tombstones: sandbox/tombstones.ts) grows at most that fast. The table is bounded: past `maxPrincipals` the least
 * recently used credential is forgotten, and starts again with a full bucket, as one idle that long would have.
 */

export interface InitializeRateOptions {
  /** Sessions a credential may open at once (MCP_INITIALIZE_BURST). */
  burst: number;
  /** Sessions a credential may open per minute after its burst (MCP_INITIALIZE_PER_MIN); 0: no limit. */
  perMinute: number;
  /** Credentials remembered at most. @default 10_000 */
  maxPrincipals?: number;
}

/** The buckets of one instance. */
export interface InitializeRate {
  readonly burst: number;
  readonly perMinute: number;
  /** Takes one session's worth for `principal`: 0 when taken; else, taking nothing, the seconds until one is. */
  take(principal: string, nowMs: number): number;
}

/** Creates the buckets (all full). */
export function createInitializeRate({
  burst,
  perMinute,
  maxPrincipals = 10_000,
}: InitializeRateOptions): InitializeRate {
  const perMs = perMinute / 60_000;
  /** Tokens left at `atMs`, least recently used first. */
  const buckets = new Map<string, { tokens: number; atMs: number }>();
  return {
    burst,
    perMinute,
    take(principal, nowMs) {
      if (perMinute === 0) return 0;
      const held = buckets.get(principal);
      const tokens = held === undefined ? burst : Math.min(burst, held.tokens + Math.max(0, nowMs - held.atMs) * perMs);
      buckets.delete(principal);
      const enough = tokens >= 1;
      buckets.set(principal, { tokens: enough ? tokens - 1 : tokens, atMs: Math.max(nowMs, held?.atMs ?? nowMs) });
      while (buckets.size > maxPrincipals) {
        const oldest = buckets.keys().next();
        if (oldest.done === true) break;
        buckets.delete(oldest.value);
      }
      return enough ? 0 : Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
    },
  };
}
