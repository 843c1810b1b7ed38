/**
 * What made-up opaque tokens may cost (functions/mcp/http/oauth/introspection.ts), against a fake introspection
 * endpoint whose answers the test gives by hand and a sleep it fires by hand: a client's share of the questions, the
 * global cap and its queue, the memory of refusals, one question per token.
 */
import {
  createIntrospector,
  MAX_IN_FLIGHT,
  MAX_PER_PEER,
  MAX_QUEUED,
  MAX_QUEUED_PER_PEER,
  QUEUE_WAIT_MS,
  type ClaimsCheck,
} from '../../../../functions/mcp/http/oauth/introspection';

const ISSUER = 'https://issuer.example.com';
const AUDIENCE = 'https://mcp.example.com/mcp';
const ENDPOINT = new URL(`${ISSUER}/introspect`);

interface Question {
  readonly token: string;
  answer(body: Record<string, unknown>): void;
}

function setUp() {
  let nowMs = Date.parse('2030-01-01T00:00:00Z');
  const questions: Question[] = [];
  const sleeps: Array<{ ms: number; fire: () => void }> = [];
  const fakeFetch = (async (_url: unknown, init?: RequestInit) => {
    const token = new URLSearchParams(String(init?.body)).get('token') ?? '';
    return new Promise<Response>((resolve) =>
      questions.push({ token, answer: (body) => resolve(Response.json(body)) }),
    );
  }) as typeof fetch;
  const introspector = createIntrospector({
    issuer: ISSUER,
    audience: AUDIENCE,
    clientId: 'mcp-server',
    clientSecret: 'secret-0123456789',
    fetch: fakeFetch,
    now: () => nowMs,
    sleep: (ms) => new Promise<void>((fire) => sleeps.push({ ms, fire })),
    clockToleranceS: 60,
    timeoutMs: 5_000,
  });
  const active = (): Record<string, unknown> => ({
    active: true,
    aud: AUDIENCE,
    sub: 'user-1',
    exp: Math.floor(nowMs / 1000) + 300,
  });
  return {
    questions,
    sleeps,
    active,
    advance: (ms: number) => {
      nowMs += ms;
    },
    /** Asks about `token` for `peer`; the outcome lands in the returned record when it comes. */
    check(token: string, peer: string | undefined): { outcome?: ClaimsCheck; done: Promise<ClaimsCheck> } {
      const entry: { outcome?: ClaimsCheck; done: Promise<ClaimsCheck> } = {
        done: introspector.claimsOf(token, ENDPOINT, peer),
      };
      void entry.done.then((outcome) => (entry.outcome = outcome));
      return entry;
    },
  };
}

/** Lets every promise that can settle do so (no time passes). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setImmediate(resolve));
};

const madeUp = (i: number): string => `made-up-${i}-${'x'.repeat(20)}`;

it(
  "keeps a client flooding made-up tokens to its own share: another client's real tokens all get through, in its " +
    'own share',
  async () => {
    const t = setUp();
    // The report's attack: one client, 24 loops of made-up tokens, the issuer slow to answer.
    const flood = Array.from({ length: 24 }, (_, i) => t.check(madeUp(i), '127.0.0.1'));
    await settle();
    expect(t.questions).toHaveLength(MAX_PER_PEER);
    // Its next 16 wait their turn behind its own 4; the rest are told at once to retry.
    const refusedAtOnce = flood.filter((entry) => entry.outcome !== undefined);
    expect(refusedAtOnce).toHaveLength(24 - MAX_PER_PEER - MAX_QUEUED_PER_PEER);
    for (const entry of refusedAtOnce)
      expect(entry.outcome).toMatchObject({ ok: false, reason: 'busy', retryAfterS: 2 });
    // Ten real tokens of another client, while the flood's questions stay unanswered: its own share of 4 is asked at
    // once, and each answer gives the next of its own a turn, ahead of the flood's waiting questions.
    const real = Array.from({ length: 10 }, (_, i) => t.check(`real-${i}`, '127.0.0.2'));
    await settle();
    const realAsked = (): Question[] => t.questions.filter((q) => q.token.startsWith('real-'));
    expect(realAsked()).toHaveLength(MAX_PER_PEER);
    for (let answered = 0; answered < 10; answered += 1) {
      realAsked()[answered]?.answer(t.active());
      await settle();
    }
    expect(real.map((entry) => entry.outcome)).toEqual(
      Array.from({ length: 10 }, () => expect.objectContaining({ ok: true })),
    );
    // The flood asked no more than its share meanwhile; one answer to it, and its next waiting question is asked.
    expect(t.questions.filter((q) => !q.token.startsWith('real-'))).toHaveLength(MAX_PER_PEER);
    t.questions[0]?.answer({ active: false });
    expect(await flood[0]?.done).toMatchObject({ ok: false, reason: 'invalid' });
    await settle();
    expect(t.questions.filter((q) => !q.token.startsWith('real-'))).toHaveLength(MAX_PER_PEER + 1);
  },
);

it('asks at most 16 at once; more wait their turn in order, and one that waits 5 s is told to retry', async () => {
  const t = setUp();
  const first = Array.from({ length: MAX_IN_FLIGHT }, (_, i) => t.check(`first-${i}`, `10.0.0.${i}`));
  const waiting = Array.from({ length: 3 }, (_, i) => t.check(`waiting-${i}`, `10.0.1.${i}`));
  await settle();
  expect(t.questions).toHaveLength(MAX_IN_FLIGHT);
  expect(waiting.every((entry) => entry.outcome === undefined)).toBe(true);
  expect(t.sleeps.map((s) => s.ms)).toEqual([QUEUE_WAIT_MS, QUEUE_WAIT_MS, QUEUE_WAIT_MS]);
  // One answer frees one turn: the first in the queue is asked.
  t.questions[0]?.answer(t.active());
  await settle();
  expect(t.questions.map((q) => q.token).slice(MAX_IN_FLIGHT)).toEqual(['waiting-0']);
  // The second's wait runs out before a turn is free: busy, with when to retry; the third still waits.
  t.sleeps[1]?.fire();
  await settle();
  expect(waiting[1]?.outcome).toMatchObject({ ok: false, reason: 'busy', retryAfterS: 2 });
  expect(waiting[2]?.outcome).toBeUndefined();
  t.questions[1]?.answer(t.active());
  await settle();
  expect(t.questions.map((q) => q.token).slice(MAX_IN_FLIGHT)).toEqual(['waiting-0', 'waiting-2']);
  for (const question of t.questions.slice(2)) question.answer(t.active());
  await Promise.all([...first, ...waiting].map((entry) => entry.done));
});

it('queues at most 64; the next is told to retry at once', async () => {
  const t = setUp();
  const all = Array.from({ length: MAX_IN_FLIGHT + MAX_QUEUED + 1 }, (_, i) => t.check(`token-${i}`, `peer-${i}`));
  await settle();
  expect(t.questions).toHaveLength(MAX_IN_FLIGHT);
  expect(all.filter((entry) => entry.outcome !== undefined)).toHaveLength(1);
  expect(all.at(-1)?.outcome).toMatchObject({ ok: false, reason: 'busy' });
});

it('does not cap a client whose address is unknown (behind FC) on its own, only by the global caps', async () => {
  const t = setUp();
  Array.from({ length: MAX_IN_FLIGHT }, (_, i) => t.check(madeUp(i), undefined));
  await settle();
  expect(t.questions).toHaveLength(MAX_IN_FLIGHT);
});

it('remembers a refusal for 30 s by the token hash, so the same made-up token costs one question', async () => {
  const t = setUp();
  const first = t.check(madeUp(1), '127.0.0.1');
  await settle();
  t.questions[0]?.answer({ active: false });
  expect(await first.done).toMatchObject({
    ok: false,
    reason: 'invalid',
    detail: 'the issuer says the token is not active',
  });
  for (let i = 0; i < 20; i += 1)
    expect(await t.check(madeUp(1), '127.0.0.1').done).toMatchObject({ ok: false, reason: 'invalid' });
  expect(t.questions).toHaveLength(1);
  t.advance(30_001);
  const again = t.check(madeUp(1), '127.0.0.1');
  await settle();
  expect(t.questions).toHaveLength(2);
  t.questions[1]?.answer({ active: false });
  await again.done;
});

it('does not remember an issuer that could not answer', async () => {
  const t = setUp();
  const first = t.check(madeUp(1), '127.0.0.1');
  await settle();
  t.questions[0]?.answer({ error: 'no object' });
  // An answer without `active` is "not active"; a broken one (not JSON) is the issuer's fault and not remembered.
  await first.done;
  const broken = setUp();
  const asked = broken.check(madeUp(2), '127.0.0.1');
  await settle();
  broken.questions[0]?.answer([] as unknown as Record<string, unknown>);
  expect(await asked.done).toMatchObject({ ok: false, reason: 'unavailable' });
  broken.check(madeUp(2), '127.0.0.1');
  await settle();
  expect(broken.questions).toHaveLength(2);
});

it('asks once for a token asked about again before its answer came, from any client', async () => {
  const t = setUp();
  const asked = [t.check('real-1', '127.0.0.1'), t.check('real-1', '127.0.0.2'), t.check('real-1', '127.0.0.1')];
  await settle();
  expect(t.questions).toHaveLength(1);
  t.questions[0]?.answer(t.active());
  for (const entry of asked) expect(await entry.done).toMatchObject({ ok: true });
});
