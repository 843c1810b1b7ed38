/**
 * The E2B backend as production wires it (config → createSandboxProvider), with the real E2B SDK on the wire
 * against the loopback fake control plane, in-process on a fake clock: 429s retried with growing, jittered
 * backoff within the 10 s budget and then given up on; the creation gate spacing sessions'
 * creates; a create that never answers. Backoffs and gate waits are fake-clock sleeps, so the test asserts
 * the exact schedule and attempt counts instead of waiting. (test/e2e/e2b-control-plane.test.ts runs the same
 * SDK from the bundle; the real-time versions of the slow cases are in test/reliability/faults.test.ts.)
 */
import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import { createE2BSandboxProvider } from '../../functions/mcp/sandbox/e2b/provider';
import { type TestClient, textOf } from '../support/clients';
import { apiError, created, type FakeE2B, startFakeE2B, startSilentE2B } from '../support/fake-e2b';
import { createHarness, type Harness } from '../support/harness';
import { settle } from '../support/held-commands';

let fake: FakeE2B;
const previousSandboxUrl = process.env.E2B_SANDBOX_URL;
beforeAll(async () => {
  fake = await startFakeE2B();
  // The SDK reads this itself: envd calls go to the fake (which fails them at once), never to the internet.
  process.env.E2B_SANDBOX_URL = fake.url;
});
afterEach(() => fake.reset());
afterAll(async () => {
  if (previousSandboxUrl === undefined) delete process.env.E2B_SANDBOX_URL;
  else process.env.E2B_SANDBOX_URL = previousSandboxUrl;
  await fake.stop();
});

/** An instance whose sandboxes come from the provider SANDBOX_BACKEND=e2b selects, on the harness's clock. */
function e2bInstance(env: Record<string, string> = {}): Harness {
  return createHarness({
    env: { E2B_API_URL: fake.url, ...env },
    sandboxes: ({ config, logger, clock }) => createSandboxProvider(config, logger, clock),
  });
}

const creates = () => fake.of('create');

it('retries a create that got 429 after a jittered backoff, then creates the sandbox', async () => {
  const h = e2bInstance();
  fake.script('create', apiError(429, 'rate limited', { 'retry-after': '1' }), created('sbx-after-429'));
  const client = await h.connect();
  await client.callTool('write_file', { path: 'a.txt', content: 'a' });
  expect(creates()).toHaveLength(2);
  // The first backoff's ceiling is 500 ms; the clock's jitter (0.5) makes it 375 ms.
  expect(h.clock.sleeps).toEqual([375]);
  expect((await client.callTool('sandbox_status')).structuredContent).toMatchObject({ state: 'running', sandbox_id: 'sbx-after-429' });
});

it('gives up on a create that keeps getting 429 within the 10 s budget, after backoffs that grow, saying to retry later', async () => {
  const h = e2bInstance();
  fake.setDefault('create', apiError(429, 'rate limited'));
  const client = await h.connect();
  const result = await client.callTool('write_file', { path: 'a.txt', content: 'a' });
  expect(result.isError).toBe(true);
  expect(textOf(result)).toMatch(/HTTP 429/);
  expect(textOf(result)).toMatch(/retry in a minute/);
  // Ceilings 500, 1000, 2000, 4000, 4000 … ms at 75 % (the clock's jitter), until the next wait would pass 10 s.
  expect(h.clock.sleeps).toEqual([375, 750, 1500, 3000, 3000]);
  expect(creates()).toHaveLength(6);
  expect((await client.callTool('sandbox_status')).structuredContent).toMatchObject({ state: 'not_started' });
});

it('spaces the creates of two sessions to E2B_MAX_CREATES_PER_S=1, with tags per session and one per owner', async () => {
  const h = e2bInstance({ E2B_MAX_CREATES_PER_S: '1' });
  const [a, b] = await Promise.all([h.connect(), h.connect()]);
  await Promise.all([a.callTool('write_file', { path: 'a.txt', content: 'a' }), b.callTool('write_file', { path: 'b.txt', content: 'b' })]);
  expect(creates()).toHaveLength(2);
  // The second waits its turn at the gate: one second after the first.
  expect(h.clock.sleeps).toEqual([1000]);
  const [ma, mb] = creates().map((r) => (r.body as { metadata: Record<string, string> }).metadata);
  expect(ma?.mcp_session).not.toBe(mb?.mcp_session);
  expect(ma?.mcp_owner).toBe(mb?.mcp_owner);
});

it('answers a create that never comes back with a clear isError once the request times out, and serves other sessions meanwhile', async () => {
  // The SDK's request timer is real; with the production 30 s it runs in test/reliability/faults.test.ts.
  const silent = await startSilentE2B();
  const h = createHarness({
    env: { E2B_API_URL: silent.url },
    sandboxes: ({ config, logger, clock }) => ({
      provider: createE2BSandboxProvider({ config: config.e2b, leaseMs: config.sessionIdleTtlS * 1000, logger, clock, requestTimeoutMs: 300 }),
      ready: async () => undefined,
    }),
  });
  let answered = false;
  try {
    const client: TestClient = await h.connect();
    const pending = client.callTool('write_file', { path: 'a.txt', content: 'a' }).finally(() => {
      answered = true;
    });
    await settle(() => silent.received() === 1);
    const other = await h.connect();
    expect((await other.callTool('sandbox_status')).structuredContent).toMatchObject({ state: 'not_started' });
    expect(answered).toBe(false);
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/E2B did not answer in time while creating the sandbox/);
  } finally {
    await silent.stop();
  }
});
