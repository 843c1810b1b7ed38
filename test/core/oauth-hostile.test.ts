/**
 * OAuth against clients hostile before they authenticate, in-process on the fake clock against the hand-driven
 * issuer (test/support/oauth-issuer.ts): made-up key ids neither make the server hammer the issuer nor turn a key
 * that has just rotated in into a 401 (http/oauth/key-set.ts), and one client flooding made-up opaque tokens at a
 * slow provider does not starve the real tokens of others (http/oauth/introspection.ts).
 */
import { createHarness, type Harness, type HarnessOptions } from '../support/harness';
import { initializeBody, type RawResponse } from '../support/http';
import { startTestIssuer, stopAllTestIssuers, type TestIssuer, type TestIssuerOptions } from '../support/oauth-issuer';

const PUBLIC_URL = 'https://mcp.example.com';
const RESOURCE = `${PUBLIC_URL}/mcp`;
/** Which client a harness request comes from (the Node shell takes it from the socket). */
const PEER_HEADER = 'x-test-peer';

afterAll(stopAllTestIssuers);

async function setUp(
  options: { issuer?: Partial<TestIssuerOptions>; env?: Record<string, string>; harness?: HarnessOptions } = {},
): Promise<{ h: Harness; issuer: TestIssuer }> {
  let now = (): number => Date.now();
  const issuer = await startTestIssuer({ audience: RESOURCE, now: () => now(), ...options.issuer });
  const h = createHarness({
    peerOf: (req) => req.headers.get(PEER_HEADER) ?? undefined,
    ...options.harness,
    env: { MCP_OAUTH_ISSUER: issuer.issuer, MCP_PUBLIC_URL: PUBLIC_URL, MCP_OAUTH_SCOPES: 'mcp:tools', ...options.env },
  });
  now = () => h.clock.now();
  return { h, issuer };
}

const initialize = (h: Harness, token: string, peer = '127.0.0.1'): Promise<RawResponse> =>
  h.post(initializeBody(), { authorization: `Bearer ${token}`, [PEER_HEADER]: peer });

/** Turns the event loop (the issuer is real HTTP on loopback) until `condition` holds; bounded, so a hang fails. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

/** Tokens naming key ids the issuer never published, each its own. */
const madeUpKids = async (issuer: TestIssuer, count: number): Promise<string[]> => {
  const key = await issuer.unpublishedKey();
  return Promise.all(Array.from({ length: count }, (_, i) => issuer.mint({ key, kid: `made-up-${i}` })));
};

describe('key rotation (the default 30 s between fetches for unknown key ids)', () => {
  it(
    'accepts a token signed by a key published after a made-up kid: it waits for the next fetch or is told to ' +
      'retry, never 401',
    async () => {
      const { h, issuer } = await setUp();
      expect((await initialize(h, await issuer.mint())).status).toBe(200);
      expect(issuer.hits.get('/jwks')).toBe(1);
      // The attacker's made-up kid, once the cooldown allows a fetch: fetched again, and a real 401.
      h.clock.advance(31_000);
      const [madeUp] = await madeUpKids(issuer, 1);
      expect((await initialize(h, madeUp as string)).status).toBe(401);
      expect(issuer.hits.get('/jwks')).toBe(2);
      // The issuer rotates, and a token of its new key comes at once: 30 s are left of the cooldown, more than a token
      // waits, so 503 with when to retry (not 401, which would send the user through sign-in again).
      await issuer.rotate();
      const early = await initialize(h, await issuer.mint());
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).toBe('30');
      expect(early.text).toContain('retry in 30 s');
      expect(issuer.hits.get('/jwks')).toBe(2);
      // 25 s later the token waits the last 5 s for the fetch, and is accepted.
      h.clock.advance(25_000);
      const sleeps = h.clock.sleeps.length;
      expect((await initialize(h, await issuer.mint())).status).toBe(200);
      expect(h.clock.sleeps.slice(sleeps)).toContain(5_000);
      expect(issuer.hits.get('/jwks')).toBe(3);
    },
  );

  it('fetches at most once per cooldown for any number of made-up kids; none is accepted', async () => {
    const { h, issuer } = await setUp();
    expect((await initialize(h, await issuer.mint())).status).toBe(200);
    const during = await Promise.all((await madeUpKids(issuer, 40)).map((token) => initialize(h, token)));
    expect(issuer.hits.get('/jwks')).toBe(1);
    expect(new Set(during.map((res) => res.status))).toEqual(new Set([503]));
    // Once the cooldown is over, forty more at once share one fetch.
    h.clock.advance(30_000);
    const after = await Promise.all((await madeUpKids(issuer, 40)).map((token) => initialize(h, token)));
    expect(issuer.hits.get('/jwks')).toBe(2);
    expect(after.every((res) => res.status === 401 || res.status === 503)).toBe(true);
    // A token of a key the server holds is never held up by any of this.
    expect((await initialize(h, await issuer.mint())).status).toBe(200);
    expect(issuer.hits.get('/jwks')).toBe(2);
  });
});

it(
  'takes a token without a key id while the issuer publishes two keys (mid-rotation): ' + 'each matching key is tried',
  async () => {
    const { h, issuer } = await setUp();
    await issuer.rotate();
    expect((await initialize(h, await issuer.mint({ kid: null }))).status).toBe(200);
    expect((await initialize(h, await issuer.mint({ kid: null, key: await issuer.unpublishedKey() }))).status).toBe(
      401,
    );
  },
);

describe('an introspection flood', () => {
  const client = { id: 'mcp-server', secret: 'introspection-secret-0123456789' };
  const env = { MCP_OAUTH_INTROSPECTION_CLIENT_ID: client.id, MCP_OAUTH_INTROSPECTION_CLIENT_SECRET: client.secret };

  it(
    "from one client at a slow provider costs the provider that client's share, and ten real tokens of others all " +
      'get through',
    async () => {
      // The provider holds its answers about made-up tokens until the test lets them go; real tokens it answers at
      // once.
      let answerFlood = (): void => undefined;
      const slow = new Promise<void>((resolve) => (answerFlood = resolve));
      const { h, issuer } = await setUp({
        env,
        issuer: {
          introspectionClient: client,
          introspectionDelay: (token) => (token.startsWith('made-up') ? slow : undefined),
        },
      });
      const flood = Array.from({ length: 24 }, (_, i) => initialize(h, `made-up-${i}-${'x'.repeat(24)}`));
      await until(() => (issuer.hits.get('/introspect') ?? 0) >= 4);
      // Ten real tokens of ten other clients, all at once, while the flood's questions are unanswered.
      const real = await Promise.all(
        Array.from({ length: 10 }, (_, i) => initialize(h, issuer.mintOpaque(), `127.0.1.${i + 1}`)),
      );
      expect(real.map((res) => res.status)).toEqual(Array.from({ length: 10 }, () => 200));
      // Four of the flood were asked; the rest waited their turn in vain and were told to retry (on the fake clock
      // their wait is over at once).
      const refused = await Promise.all(flood.slice(4));
      expect(refused.map((res) => [res.status, res.headers.get('retry-after')])).toEqual(
        Array.from({ length: 20 }, () => [503, '2']),
      );
      expect(issuer.hits.get('/introspect')).toBe(14);
      answerFlood();
      expect((await Promise.all(flood.slice(0, 4))).map((res) => res.status)).toEqual([401, 401, 401, 401]);
      expect(issuer.hits.get('/introspect')).toBe(14);
      // The same made-up token again costs the provider nothing for a while.
      expect((await initialize(h, `made-up-0-${'x'.repeat(24)}`)).status).toBe(401);
      expect(issuer.hits.get('/introspect')).toBe(14);
    },
  );
});
