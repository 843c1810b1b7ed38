/**
 * The instance-local session store: a cache with an idle TTL, swept lazily on requests
 * (FC freezes timers between requests), over sessions/idle-cache.ts.
 */
import { createIdleCache, type IdleEntry } from './idle-cache';

/** What the store needs to know of a session: its id, and (as an idle-cache entry) the time of its last request. */
export interface StoredSession extends IdleEntry {
  readonly id: string;
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
  const sessions = createIdleCache<S>({ idleTtlMs });
  return {
    get: (id, nowMs) => sessions.get(id, nowMs),
    add: (session) => sessions.add(session.id, session),
    touch: (id, nowMs) => sessions.touch(id, nowMs),
    remove: (id) => sessions.remove(id),
    takeExpired: (nowMs, keep) => sessions.takeExpired(nowMs, keep),
    get size() {
      return sessions.size;
    },
    values: () => sessions.values(),
  };
}
