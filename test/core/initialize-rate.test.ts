/**
 * New sessions per credential (sessions/initialize-rate.ts): past its burst a credential opens sessions at its rate
 * only, and an initialize beyond it gets 429 with Retry-After naming the settings, minting no id. In-process, fake
 * clock.
 */
import { createHarness, HARNESS_OTHER_TOKEN, HARNESS_TOKEN } from '../support/harness';
import { initializeBody } from '../support/http';
import { errorOf, messagesOf } from '../support/raw-session';

const asB = { authorization: `Bearer ${HARNESS_OTHER_TOKEN}` };

it(
  'refuses an initialize past the burst with 429, Retry-After and the settings, until the bucket refills; another ' +
    'credential is unaffected',
  async () => {
    const h = createHarness({ env: { MCP_INITIALIZE_BURST: '3', MCP_INITIALIZE_PER_MIN: '6' } });
    for (let i = 0; i < 3; i += 1) expect((await h.post(initializeBody('2025-11-25', i))).status).toBe(200);
    const refused = await h.post(initializeBody('2025-11-25', 'fourth'));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect(refused.headers.get('mcp-session-id')).toBeNull();
    expect(messagesOf(refused)[0]).toMatchObject({ id: 'fourth', error: { code: -32000 } });
    expect(errorOf(refused)?.message).toContain('MCP_INITIALIZE_BURST=3, MCP_INITIALIZE_PER_MIN=6');
    expect(h.logs().find((line) => line.msg === 'request' && line.error_code === 'initialize_rate')).toBeDefined();
    expect((await h.post(initializeBody(), asB)).status).toBe(200);
    h.clock.advance(9_999);
    expect((await h.post(initializeBody())).status).toBe(429);
    h.clock.advance(1);
    expect((await h.post(initializeBody())).status).toBe(200);
  },
);

it('holds an initialize + DELETE loop to the default rate: 120 at once, then 2 a second', async () => {
  const h = createHarness();
  const statuses: number[] = [];
  for (let i = 0; i < 130; i += 1) {
    const opened = await h.post(initializeBody());
    statuses.push(opened.status);
    const id = opened.headers.get('mcp-session-id');
    if (id !== null)
      await h.fetch(h.url, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${HARNESS_TOKEN}`, 'mcp-session-id': id },
      });
  }
  expect(statuses.filter((s) => s === 200)).toHaveLength(120);
  expect(statuses.slice(120)).toEqual(Array(10).fill(429));
  h.clock.advance(1_000);
  expect([
    (await h.post(initializeBody())).status,
    (await h.post(initializeBody())).status,
    (await h.post(initializeBody())).status,
  ]).toEqual([200, 200, 429]);
});

it(
  'does not count what mints no id: requests in a session, ' + 'and initialize bodies that are refused as malformed',
  async () => {
    const h = createHarness({ env: { MCP_INITIALIZE_BURST: '1', MCP_INITIALIZE_PER_MIN: '1' } });
    expect((await h.post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })).status).toBe(400);
    const { headers } = await h.openSession();
    for (let i = 0; i < 5; i += 1)
      expect((await h.post({ jsonrpc: '2.0', id: i, method: 'ping' }, headers)).status).toBe(200);
    expect((await h.post(initializeBody())).status).toBe(429);
  },
);
