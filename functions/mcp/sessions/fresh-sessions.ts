/**
 * Sessions whose `initialize` was answered early, without the SDK (http/early-listener.ts). Each is plain
 * data (a few hundred bytes), answered early as long as it can be (protocol/early-answers.ts), until a
 * request needs the SDK: then the 2025 lane builds its SDK session from it: a new session, with the client's
 * own capabilities, and no search for an earlier sandbox. An idle session thus holds no SDK objects
 * (issue 7); the SDK session is one sessionful transport per session (protocol/legacy-session.ts).
 */

/** What the early answer decided, kept for the lane. */
export interface FreshSession {
  readonly id: string;
  /** The id's random part, which names the sandbox. */
  readonly key: string;
  readonly principal: string;
  /** The version the answer negotiated. */
  readonly protocolVersion: string;
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly clientInfo: Readonly<Record<string, unknown>>;
  /** When the session was last used (its `initialize`, or a request answered early), in ms since the epoch. */
  lastUsedMs: number;
}

/**
 * The fresh sessions, least recently used first. With the SDK sessions they count against MCP_MAX_SESSIONS
 * (at the cap they are let go like the others, by sessions/fair-share.ts); idle ones are taken out by the
 * lane's sweep, which expires them as it expires SDK sessions.
 */
export class FreshSessions {
  // Map iteration order is insertion order: re-inserting on use keeps the least recently used first.
  readonly #sessions = new Map<string, FreshSession>();

  add(session: FreshSession): void {
    this.#sessions.set(session.id, session);
  }

  /** The session with this id, if it belongs to `principal` (for any other it does not exist). */
  get(id: string, principal: string): FreshSession | undefined {
    const session = this.#sessions.get(id);
    return session?.principal === principal ? session : undefined;
  }

  has(id: string): boolean {
    return this.#sessions.has(id);
  }

  /** Marks the session used now. */
  touch(session: FreshSession, nowMs: number): void {
    session.lastUsedMs = nowMs;
    this.#sessions.delete(session.id);
    this.#sessions.set(session.id, session);
  }

  /** Removes and returns the session with this id, if it belongs to `principal`. */
  take(id: string, principal: string): FreshSession | undefined {
    const session = this.#sessions.get(id);
    if (session?.principal !== principal) return undefined;
    this.#sessions.delete(id);
    return session;
  }

  /** Removes and returns every session idle for longer than `idleTtlMs`. */
  takeExpired(nowMs: number, idleTtlMs: number): FreshSession[] {
    const expired: FreshSession[] = [];
    for (const session of this.#sessions.values()) {
      if (nowMs - session.lastUsedMs <= idleTtlMs) break;
      expired.push(session);
    }
    for (const session of expired) this.#sessions.delete(session.id);
    return expired;
  }

  /** How many sessions `principal` holds here. */
  countOf(principal: string): number {
    let count = 0;
    for (const session of this.#sessions.values()) if (session.principal === principal) count += 1;
    return count;
  }

  /** Every fresh session, least recently used first. */
  values(): IterableIterator<FreshSession> {
    return this.#sessions.values();
  }

  get size(): number {
    return this.#sessions.size;
  }
}
