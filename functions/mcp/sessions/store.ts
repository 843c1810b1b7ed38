/**
 * The instance-local session store: a cache with an idle TTL, swept lazily on requests
 * (FC freezes timers between requests). Entries are kept in least-recently-used order.
 */

/** What the store needs to know of a session. */
export interface StoredSession {
  readonly id: string;
  /** Milliseconds since the epoch of the last request. */
  lastUsedMs: number;
}

/**
 * The store's contract. The store is a cache, not the truth: the truth is the signed session id and the sandbox
 * tagged with it, so an implementation may add recovery, rebuilding a session for a valid id it does not hold.
 */
export interface SessionStore<S extends StoredSession> {
  /** The live session with this id, marked as used now; `undefined` when unknown or expired. */
  get(id: string, nowMs: number): S | undefined;
  add(session: S): void;
  /** Removes and returns the session. */
  remove(id: string): S | undefined;
  /** Removes and returns every session idle for longer than the TTL, except those `keep` holds on to (a call running). */
  takeExpired(nowMs: number, keep?: (session: S) => boolean): S[];
  /** Marks the session used at `nowMs` (a call that ended), if it is held. */
  touch(id: string, nowMs: number): void;
  readonly size: number;
  values(): IterableIterator<S>;
}

/** An in-memory store; `idleTtlMs` is MCP_SESSION_IDLE_TTL_S in milliseconds. */
export function createMemorySessionStore<S extends StoredSession>(idleTtlMs: number): SessionStore<S> {
  // Map iteration order is insertion order: re-inserting on use keeps the least recently used first.
  const sessions = new Map<string, S>();
  return {
    get(id, nowMs) {
      const session = sessions.get(id);
      if (session === undefined || nowMs - session.lastUsedMs > idleTtlMs) return undefined;
      session.lastUsedMs = nowMs;
      sessions.delete(id);
      sessions.set(id, session);
      return session;
    },
    add(session) {
      sessions.set(session.id, session);
    },
    touch(id, nowMs) {
      const session = sessions.get(id);
      if (session === undefined) return;
      session.lastUsedMs = Math.max(session.lastUsedMs, nowMs);
      sessions.delete(id);
      sessions.set(id, session);
    },
    remove(id) {
      const session = sessions.get(id);
      sessions.delete(id);
      return session;
    },
    takeExpired(nowMs, keep) {
      const expired: S[] = [];
      for (const session of sessions.values()) {
        if (nowMs - session.lastUsedMs <= idleTtlMs) break;
        if (keep?.(session) !== true) expired.push(session);
      }
      for (const session of expired) sessions.delete(session.id);
      return expired;
    },
    get size() {
      return sessions.size;
    },
    values: () => sessions.values(),
  };
}
