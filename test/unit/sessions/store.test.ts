import { createMemorySessionStore, type StoredSession } from '../../../functions/mcp/sessions/store';
import { isWellFormedSessionId, mintSessionId, toSessionTag } from '../../../functions/mcp/sessions/session-id';

const session = (id: string, lastUsedMs: number): StoredSession => ({ id, lastUsedMs });

describe('the memory session store', () => {
  it('finds a session and marks it used', () => {
    const store = createMemorySessionStore(1000);
    store.add(session('a', 0));
    expect(store.get('a', 500)?.lastUsedMs).toBe(500);
    expect(store.get('a', 1400)).toBeDefined();
  });

  it('hides a session idle for longer than the TTL, and hands it over once to the sweep', () => {
    const store = createMemorySessionStore(1000);
    store.add(session('a', 0));
    store.add(session('b', 900));
    expect(store.get('a', 1001)).toBeUndefined();
    expect(store.takeExpired(1001).map((s) => s.id)).toEqual(['a']);
    expect(store.takeExpired(1001)).toEqual([]);
    expect(store.size).toBe(1);
  });

  it('sweeps in least-recently-used order, so a recently used old session survives', () => {
    const store = createMemorySessionStore(1000);
    store.add(session('old', 0));
    store.add(session('mid', 100));
    store.get('old', 600);
    expect(store.takeExpired(1200).map((s) => s.id)).toEqual(['mid']);
    expect([...store.values()].map((s) => s.id)).toEqual(['old']);
  });

  it('removes a session on request', () => {
    const store = createMemorySessionStore(1000);
    store.add(session('a', 0));
    expect(store.remove('a')?.id).toBe('a');
    expect(store.get('a', 1)).toBeUndefined();
    expect(store.size).toBe(0);
  });
});

describe('session ids', () => {
  it('are 192 random bits of visible ASCII, never repeated', () => {
    const ids = new Set(Array.from({ length: 1000 }, mintSessionId));
    expect(ids.size).toBe(1000);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(isWellFormedSessionId(id)).toBe(true);
    }
  });

  it('are logged only as a short tag', () => {
    const id = mintSessionId();
    expect(toSessionTag(id)).toMatch(/^[0-9a-f]{12}$/);
    expect(id).not.toContain(toSessionTag(id));
  });
});
