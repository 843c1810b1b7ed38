/**
 * Sessions whose `initialize` was answered early (before the SDK was loaded). Each is plain data, answered
 * early as long as it can be (protocol/early-answers.ts), until a request needs the core: then the 2025 lane
 * builds its SDK session from it: a new session, with the client's own capabilities, and no search for an
 * earlier sandbox.
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

/** Fresh sessions held at most; beyond it the oldest is dropped (its id stays valid: it is rebuilt like a moved one). */
const MAX_FRESH_SESSIONS = 1_000;

export class FreshSessions {
  readonly #sessions = new Map<string, FreshSession>();

  add(session: FreshSession): void {
    if (this.#sessions.size >= MAX_FRESH_SESSIONS) {
      const oldest = this.#sessions.keys().next();
      if (oldest.done !== true) this.#sessions.delete(oldest.value);
    }
    this.#sessions.set(session.id, session);
  }

  /** The session with this id, if it belongs to `principal` (for any other it does not exist). */
  get(id: string, principal: string): FreshSession | undefined {
    const session = this.#sessions.get(id);
    return session?.principal === principal ? session : undefined;
  }

  /** Removes and returns the session with this id, if it belongs to `principal`. */
  take(id: string, principal: string): FreshSession | undefined {
    const session = this.#sessions.get(id);
    if (session?.principal !== principal) return undefined;
    this.#sessions.delete(id);
    return session;
  }

  get size(): number {
    return this.#sessions.size;
  }
}
