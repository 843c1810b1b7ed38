/**
 * A signed id whose signature was checked once (sessions/session-id.ts) is answered as a fresh check would
 * answer it: only for the purpose and principal it was issued to, and never past its age.
 */
import { createSignedIdCodec } from '../../../functions/mcp/sessions/session-id';

const SECRET = 'a-session-secret-of-at-least-32-bytes-0123';
const MAX_AGE_MS = 3_600_000;
const T0 = Date.parse('2030-01-01T00:00:00Z');

it('answers a remembered id as a fresh check does', () => {
  const codec = createSignedIdCodec(SECRET, MAX_AGE_MS);
  const { id, key } = codec.mint('session', 'alice', T0);
  const fresh = createSignedIdCodec(SECRET, MAX_AGE_MS);
  const cases: Array<[string, 'session' | 'sandbox', string, number]> = [
    ['the holder', 'session', 'alice', T0 + 1000],
    ['the holder again', 'session', 'alice', T0 + 2000],
    ['another principal', 'session', 'bob', T0 + 3000],
    ['another purpose', 'sandbox', 'alice', T0 + 4000],
    ['the holder past its age', 'session', 'alice', T0 + MAX_AGE_MS + 1000],
    ['the holder before it was issued', 'session', 'alice', T0 - 120_000],
    ['the holder once more', 'session', 'alice', T0 + 5000],
  ];
  for (const [who, purpose, principal, now] of cases) {
    // `codec` remembers what it verified; `fresh` is made anew for each check.
    const expected = createSignedIdCodec(SECRET, MAX_AGE_MS).verify(purpose, id, principal, now);
    expect({ who, check: codec.verify(purpose, id, principal, now) }).toEqual({ who, check: expected });
    expect(fresh.verify(purpose, id, principal, now)).toEqual(expected);
  }
  expect(codec.verify('session', id, 'alice', T0 + 1000)).toEqual({ ok: true, key, issuedAtMs: T0 });
  const tampered = `${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`;
  expect(codec.verify('session', tampered, 'alice', T0 + 1000)).toEqual({ ok: false, reason: 'bad_signature' });
  expect(createSignedIdCodec(`${SECRET}x`, MAX_AGE_MS).verify('session', id, 'alice', T0)).toEqual({
    ok: false,
    reason: 'bad_signature',
  });
});
