import { createMemorySessionStore, type StoredSession } from '../../../functions/mcp/sessions/store';
import { createSignedIdCodec, toSessionTag } from '../../../functions/mcp/sessions/session-id';

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

describe('signed session ids', () => {
  const SECRET = 'a-session-secret-of-at-least-32-bytes!!';
  const codec = createSignedIdCodec(SECRET, 3_600_000);
  const NOW = 1_800_000_000_000;

  it('carry 128 random bits, the issue time and an HMAC, in visible ASCII, never repeated', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => codec.mint('session', 'p', NOW).id));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}\.[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
  });

  it('verify on any instance with the same secret, and return the key that names the sandbox', () => {
    const { id, key } = codec.mint('session', 'p', NOW);
    expect(createSignedIdCodec(SECRET, 3_600_000).verify('session', id, 'p', NOW + 1000)).toEqual({
      ok: true,
      key,
      issuedAtMs: Math.floor(NOW / 1000) * 1000,
    });
    expect(id.startsWith(key)).toBe(true);
  });

  it('refuse forged, tampered, foreign, expired and cross-purpose ids', () => {
    const { id } = codec.mint('session', 'p', NOW);
    const [random, issued, mac] = id.split('.');
    const flip = (text: string): string => (text.startsWith('A') ? `B${text.slice(1)}` : `A${text.slice(1)}`);
    expect(codec.verify('session', `${random}.${issued}.${flip(mac ?? '')}`, 'p', NOW)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(codec.verify('session', `${flip(random ?? '')}.${issued}.${mac}`, 'p', NOW)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(codec.verify('session', id, 'another-principal', NOW)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(
      createSignedIdCodec('another-secret-of-at-least-32-bytes!!!', 3_600_000).verify('session', id, 'p', NOW),
    ).toMatchObject({ ok: false });
    // A session id is not even shaped like a sandbox handle, and a handle is not valid as a session id.
    expect(codec.verify('sandbox', id, 'p', NOW)).toEqual({ ok: false, reason: 'malformed' });
    const handle = codec.mint('sandbox', 'p', NOW).id;
    expect(handle).toMatch(/^[A-Za-z0-9_-]{16}\.[0-9a-z]+\.[A-Za-z0-9_-]{16}$/);
    expect(codec.verify('sandbox', handle, 'p', NOW)).toMatchObject({ ok: true });
    expect(codec.verify('session', handle, 'p', NOW)).toEqual({ ok: false, reason: 'malformed' });
    expect(codec.verify('session', id, 'p', NOW + 3_601_000)).toEqual({ ok: false, reason: 'expired' });
    expect(codec.verify('session', 'not-an-id', 'p', NOW)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('are logged only as a short tag', () => {
    const { id } = codec.mint('session', 'p', NOW);
    expect(toSessionTag(id)).toMatch(/^[0-9a-f]{12}$/);
    expect(id).not.toContain(toSessionTag(id));
  });
});
