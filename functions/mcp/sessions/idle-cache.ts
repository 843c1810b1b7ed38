/**
 * @module
 * The idle cache behind the sandbox table (sessions/sandbox-table.ts): keyed entries in least-recently-used
 * order, each with its last-used time, handed out once when idle past its TTL. Nothing here runs on a timer: FC
 * freezes timers between requests, so the table sweeps lazily on requests.
 */

/** What the cache needs of an entry. */
export interface IdleEntry {
  /** Milliseconds since the epoch of the last use; the cache moves it forward, never back. */
  lastUsedMs: number;
}

export interface IdleCacheOptions<V extends IdleEntry> {
  /**
   * How long an entry may sit unused, in milliseconds. A function gives each entry its own (a lease that
   * depends on the entry); then a sweep reads the whole table instead of stopping at the first young entry.
   */
  idleTtlMs: number | ((entry: V) => number);
}

/** Entries by key, least recently used first. */
export interface IdleCache<V extends IdleEntry> {
  /** The entry, when held and not idle past its TTL, marked used at `nowMs`. */
  get(key: string, nowMs: number): V | undefined;
  /** The entry whatever its age, left as it is. */
  peek(key: string): V | undefined;
  /** Marks the entry used at `nowMs` (unless it was used later), if it is held. */
  touch(key: string, nowMs: number): void;
  /** Holds `entry` under `key` as the most recently used, replacing any entry held there. */
  add(key: string, entry: V): void;
  /** Removes and returns the entry. */
  remove(key: string): V | undefined;
  /** Removes and returns, oldest first, every entry idle past its TTL except those `keep` holds on to. */
  takeExpired(nowMs: number, keep?: (entry: V) => boolean): V[];
  /** Removes and returns every entry, oldest first. */
  takeAll(): V[];
  readonly size: number;
  /** The entries, least recently used first. */
  values(): IterableIterator<V>;
}

/** Creates an empty idle cache. */
export function createIdleCache<V extends IdleEntry>(options: IdleCacheOptions<V>): IdleCache<V> {
  const { idleTtlMs } = options;
  const ttlOf = typeof idleTtlMs === 'number' ? () => idleTtlMs : idleTtlMs;
  const isIdle = (entry: V, nowMs: number): boolean => nowMs - entry.lastUsedMs > ttlOf(entry);
  // Map iteration order is insertion order: re-inserting on use keeps the least recently used first.
  const entries = new Map<string, V>();
  const markUsed = (key: string, entry: V, nowMs: number): void => {
    entry.lastUsedMs = Math.max(entry.lastUsedMs, nowMs);
    entries.delete(key);
    entries.set(key, entry);
  };
  return {
    get(key, nowMs) {
      const entry = entries.get(key);
      if (entry === undefined || isIdle(entry, nowMs)) return undefined;
      markUsed(key, entry, nowMs);
      return entry;
    },
    peek: (key) => entries.get(key),
    touch(key, nowMs) {
      const entry = entries.get(key);
      if (entry !== undefined) markUsed(key, entry, nowMs);
    },
    add(key, entry) {
      entries.delete(key);
      entries.set(key, entry);
    },
    remove(key) {
      const entry = entries.get(key);
      entries.delete(key);
      return entry;
    },
    takeExpired(nowMs, keep) {
      const expired: Array<[string, V]> = [];
      for (const [key, entry] of entries) {
        if (!isIdle(entry, nowMs)) {
          // With one TTL for all, the entries after a young one are younger still.
          if (typeof idleTtlMs === 'number') break;
          continue;
        }
        if (keep?.(entry) !== true) expired.push([key, entry]);
      }
      for (const [key] of expired) entries.delete(key);
      return expired.map(([, entry]) => entry);
    },
    takeAll() {
      const all = [...entries.values()];
      entries.clear();
      return all;
    },
    get size() {
      return entries.size;
    },
    values: () => entries.values(),
  };
}
