/**
 * When the E2B backend creates sandboxes, on a fake clock: the backend as production wires it (config →
 * createSandboxProvider), in-process through the harness, with the real E2B SDK over HTTP against the local
 * E2B service (test/support/e2b-local/). 429s retried with growing, jittered backoff within the 10 s budget and
 * then given up on; the creation gate spacing sessions' creates; a create that never answers. Backoffs and gate
 * waits are fake-clock sleeps, so the test asserts the exact schedule and attempt counts instead of waiting.
 * (test/e2b/control-plane.test.ts runs the same SDK from the bundle; the real-time versions of the slow cases
 * are in test/reliability/faults.test.ts.)
 */
import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import { createE2BSandboxProvider } from '../../functions/mcp/sandbox/e2b/provider';
import { textOf } from '../support/clients';
import { type LocalE2B, NO_ANSWER, type RecordedRequest } from '../support/e2b-local';
import { useLocalE2B } from '../support/e2b-in-process';
import { createHarness, type Harness } from '../support/harness';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { needs } from '../support/needs';

const service = useLocalE2B();
let e2b: LocalE2B;
beforeAll(() => {
  e2b = service();
});

/** What the service had seen and run before the test: the test looks at what came after. */
let seenBefore = 0;
let sandboxesBefore = new Set<string>();
beforeEach(() => {
  seenBefore = e2b.requests().length;
  sandboxesBefore = new Set(e2b.sandboxes().map((s) => s.sandboxId));
});
afterEach(() => e2b.standingFault('create', undefined));

const creates = (): RecordedRequest[] =>
  e2b
    .requests()
    .slice(seenBefore)
    .filter((r) => r.route === 'create');
const newSandboxes = (): string[] =>
  e2b
    .sandboxes()
    .map((s) => s.sandboxId)
    .filter((id) => !sandboxesBefore.has(id));
const rateLimited = { status: 429, body: { code: 429, message: 'rate limited' } };

/** An instance whose sandboxes come from the provider SANDBOX_BACKEND=e2b selects, on the harness's clock. */
function e2bInstance(env: Record<string, string> = {}): Harness {
  return createHarness({
    env: { E2B_API_KEY: e2b.apiKey, E2B_API_URL: e2b.url, ...env },
    sandboxes: ({ config, logger, clock }) => createSandboxProvider(config, logger, clock),
  });
}

needs('bubblewrap').it('retries a create that got 429 after a jittered backoff, then creates the sandbox', async () => {
  const h = e2bInstance();
  e2b.fault('create', { ...rateLimited, headers: { 'retry-after': '1' } });
  const client = await h.connect();
  expect((await client.callTool('write_file', { path: 'a.txt', content: 'a' })).isError).toBeFalsy();
  expect(creates()).toHaveLength(2);
  // The first backoff's ceiling is 500 ms; the clock's jitter (0.5) makes it 375 ms.
  expect(h.clock.sleeps).toEqual([375]);
  const fresh = newSandboxes();
  expect(fresh).toHaveLength(1);
  expect((await client.callTool('sandbox_status')).structuredContent).toMatchObject({
    state: 'running',
    sandbox_id: fresh[0],
  });
});

it(
  'gives up on a create that keeps getting 429 within the 10 s budget, after backoffs that grow, saying to retry ' +
    'later',
  async () => {
    const h = e2bInstance();
    e2b.standingFault('create', rateLimited);
    const client = await h.connect();
    const result = await client.callTool('write_file', { path: 'a.txt', content: 'a' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/HTTP 429/);
    expect(textOf(result)).toMatch(/retry in a minute/);
    // Ceilings 500, 1000, 2000, 4000, 4000 … ms at 75 % (the clock's jitter), until the next wait would pass 10 s.
    expect(h.clock.sleeps).toEqual([375, 750, 1500, 3000, 3000]);
    expect(creates()).toHaveLength(6);
    expect(newSandboxes()).toEqual([]);
    expect((await client.callTool('sandbox_status')).structuredContent).toMatchObject({ state: 'not_started' });
  },
);

needs('bubblewrap').it(
  'spaces the creates of two sessions to E2B_MAX_CREATES_PER_S=1, with tags per session and one per owner',
  async () => {
    const h = e2bInstance({ E2B_MAX_CREATES_PER_S: '1' });
    const [a, b] = await Promise.all([h.connect(), h.connect()]);
    await Promise.all([
      a.callTool('write_file', { path: 'a.txt', content: 'a' }),
      b.callTool('write_file', { path: 'b.txt', content: 'b' }),
    ]);
    expect(creates()).toHaveLength(2);
    expect(newSandboxes()).toHaveLength(2);
    // The second waits its turn at the gate: one second after the first.
    expect(h.clock.sleeps).toEqual([1000]);
    const [ma, mb] = creates().map((r) => (r.body as { metadata: Record<string, string> }).metadata);
    expect(ma?.mcp_session).toMatch(/^[0-9a-f]{16,64}$/);
    expect(ma?.mcp_session).not.toBe(mb?.mcp_session);
    expect(ma?.mcp_owner).toBe(mb?.mcp_owner);
  },
);

it(
  'answers a create that never comes back with a clear isError once the request times out, and serves other ' +
    'sessions meanwhile',
  async () => {
    // The SDK's request timer is real: 2 s here (long enough for the other session to be served first on a busy
    // machine); with the production 30 s it runs in test/reliability/faults.test.ts.
    e2b.fault('create', NO_ANSWER);
    const h = createHarness({
      env: { E2B_API_KEY: e2b.apiKey, E2B_API_URL: e2b.url },
      sandboxes: ({ config, logger, clock }) => ({
        provider: createE2BSandboxProvider({
          config: config.e2b,
          idleTtlMs: config.sessionIdleTtlS * 1000,
          logger,
          clock,
          requestTimeoutMs: 2_000,
        }),
        ready: async () => undefined,
      }),
    });
    const order: string[] = [];
    const client = await h.connect();
    const pending = client
      .callTool('write_file', { path: 'a.txt', content: 'a' })
      .finally(() => order.push('hung create answered'));
    expect(
      await pollUntil(
        () => creates().length,
        (n) => n >= 1,
        SETTLE_MS,
      ),
    ).toBe(1);
    const other = await h.connect();
    expect((await other.callTool('sandbox_status')).structuredContent).toMatchObject({ state: 'not_started' });
    order.push('other session served');
    const result = await pending;
    expect(order).toEqual(['other session served', 'hung create answered']);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/E2B did not answer in time while creating the sandbox/);
    expect(creates()).toHaveLength(1);
    expect(newSandboxes()).toEqual([]);
  },
);
