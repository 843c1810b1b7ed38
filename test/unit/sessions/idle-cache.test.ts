import { createIdleCache, type IdleEntry } from '../../../functions/mcp/sessions/idle-cache';

interface Entry extends IdleEntry {
  readonly name: string;
  /** A longer lease, for the per-entry TTL. */
  long?: boolean;
}

const entry = (name: string, lastUsedMs: number, long = false): Entry => ({ name, lastUsedMs, long });
const names = (entries: Iterable<Entry>): string[] => [...entries].map((e) => e.name);

/** A cache holding `entries` under their names, added in the order given. */
function cacheOf(idleTtlMs: number | ((e: Entry) => number), ...entries: Entry[]) {
  const cache = createIdleCache<Entry>({ idleTtlMs });
  for (const e of entries) cache.add(e.name, e);
  return cache;
}

describe('the idle cache', () => {
  it('gets a live entry and marks it used, moving it to the most recently used end', () => {
    const cache = cacheOf(1000, entry('a', 0), entry('b', 100));
    expect(cache.get('a', 500)?.lastUsedMs).toBe(500);
    expect(names(cache.values())).toEqual(['b', 'a']);
    expect(cache.get('a', 1500)).toBeDefined(); // idle exactly the TTL: still live
    expect(cache.get('missing', 0)).toBeUndefined();
  });

  it('hides an entry idle past its TTL from get, but peek still sees it, untouched and in place', () => {
    const cache = cacheOf(1000, entry('a', 0), entry('b', 900));
    expect(cache.get('a', 1001)).toBeUndefined();
    expect(cache.peek('a')?.lastUsedMs).toBe(0);
    expect(names(cache.values())).toEqual(['a', 'b']);
    expect(cache.size).toBe(2);
  });

  it('touches a held entry forward, never back, and ignores one it does not hold', () => {
    const cache = cacheOf(1000, entry('a', 500), entry('b', 600));
    cache.touch('a', 400);
    expect(cache.peek('a')?.lastUsedMs).toBe(500);
    expect(names(cache.values())).toEqual(['b', 'a']);
    cache.touch('a', 700);
    expect(cache.peek('a')?.lastUsedMs).toBe(700);
    cache.touch('missing', 700);
    expect(cache.size).toBe(2);
  });

  it('adds an entry as the most recently used, replacing one held under the same key', () => {
    const cache = cacheOf(1000, entry('a', 0), entry('b', 100));
    const again = entry('a', 900);
    cache.add('a', again);
    expect(names(cache.values())).toEqual(['b', 'a']);
    expect(cache.peek('a')).toBe(again);
    expect(cache.size).toBe(2);
  });

  it('removes an entry and hands it back once', () => {
    const cache = cacheOf(1000, entry('a', 0));
    expect(cache.remove('a')?.name).toBe('a');
    expect(cache.remove('a')).toBeUndefined();
    expect(cache.peek('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('hands over the expired entries once, oldest first, keeping those the predicate holds on to', () => {
    const cache = cacheOf(1000, entry('a', 0), entry('busy', 50), entry('b', 100), entry('young', 900));
    const keep = (e: Entry): boolean => e.name === 'busy';
    expect(names(cache.takeExpired(1200, keep))).toEqual(['a', 'b']);
    expect(cache.takeExpired(1200, keep)).toEqual([]);
    expect(names(cache.values())).toEqual(['busy', 'young']);
    // Once let go, it expires like any other.
    expect(names(cache.takeExpired(1200))).toEqual(['busy']);
  });

  it('sweeps in least-recently-used order, so a recently used old entry survives', () => {
    const cache = cacheOf(1000, entry('old', 0), entry('mid', 100));
    cache.get('old', 600);
    expect(names(cache.takeExpired(1200))).toEqual(['mid']);
    expect(names(cache.values())).toEqual(['old']);
  });

  it('with one TTL for all, stops the sweep at the first young entry', () => {
    // Out of order only through add with an older time: the walk trusts use order, so 'late' waits.
    const cache = cacheOf(1000, entry('young', 900), entry('late', 0));
    expect(cache.takeExpired(1200)).toEqual([]);
  });

  it('with a TTL per entry, reads the whole table: a short lease expires behind a long one', () => {
    const cache = cacheOf(
      (e) => (e.long === true ? 10_000 : 1000),
      entry('long', 0, true),
      entry('short', 100),
      entry('fresh', 1500),
    );
    expect(cache.get('short', 1200)).toBeUndefined();
    expect(names(cache.takeExpired(2000))).toEqual(['short']);
    expect(names(cache.values())).toEqual(['long', 'fresh']);
    expect(cache.get('long', 2000)).toBeDefined();
  });

  it('takes every entry at once, oldest first, leaving it empty', () => {
    const cache = cacheOf(1000, entry('a', 0), entry('b', 100));
    cache.touch('a', 200);
    expect(names(cache.takeAll())).toEqual(['b', 'a']);
    expect(cache.size).toBe(0);
    expect(cache.takeAll()).toEqual([]);
  });
});
