/**
 * Ended means ended everywhere (sandbox/tombstones.ts): a session DELETEd or expired on one instance
 * is refused by every instance that shares LOCAL_SANDBOX_ROOT, and the tombstone goes once the id could no
 * longer be valid anyway. In-process, two instances on one fake clock, the real local backend.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import { hasTombstone, sweepTombstones, writeTombstone } from '../../functions/mcp/sandbox/tombstones';
import { createFakeClock } from '../support/fake-clock';
import { createHarness, type Harness, type HarnessOptions } from '../support/harness';

type SandboxDeps = Parameters<NonNullable<HarnessOptions['sandboxes']>>[0];
import { errorOf, rpc } from '../support/raw-session';
import { makeSandboxRoot, workspacesIn } from '../support/server';

const TTL_S = 60;
let root: string;
beforeEach(() => {
  root = makeSandboxRoot();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const instances = (): [Harness, Harness] => {
  const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const options = {
    clock,
    env: { SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_ROOT: root, LOCAL_SANDBOX_ISOLATION: 'none', LOCAL_SANDBOX_DISK_MB: '0', MCP_SESSION_IDLE_TTL_S: String(TTL_S) },
    sandboxes: ({ config, logger, clock: c }: SandboxDeps) => createSandboxProvider(config, logger, c),
  };
  return [createHarness(options), createHarness(options)];
};
const writeFile = (h: Harness, headers: Record<string, string>) => h.post(rpc('tools/call', 5, { name: 'write_file', arguments: { path: 'a.txt', content: 'a' } }), headers);

it('refuses a DELETEd id on another instance (404, nothing rebuilt), and keeps refusing for the id’s max age', async () => {
  const [a, b] = instances();
  const { headers } = await a.openSession();
  expect((await writeFile(a, headers)).status).toBe(200);
  expect((await a.fetch(a.url, { method: 'DELETE', headers })).status).toBe(200);
  const replay = await b.post(rpc('tools/list', 2), headers);
  expect({ status: replay.status, code: errorOf(replay)?.code }).toEqual({ status: 404, code: -32001 });
  expect(b.logs().filter((line) => line.msg === 'session recovered')).toEqual([]);
  expect(workspacesIn(root)).toEqual([]);
  expect(readdirSync(join(root, '.ended'))).toHaveLength(1);
  // Still refused near the end of the id's life (MCP_SESSION_MAX_AGE_S, 6 h by default).
  b.clock.advance(6 * 3600 * 1000 - 60_000);
  expect((await b.post(rpc('tools/list', 3), headers)).status).toBe(404);
});

it('refuses an id whose session expired and was destroyed, on another instance too', async () => {
  const [a, b] = instances();
  const { headers } = await a.openSession();
  expect((await writeFile(a, headers)).status).toBe(200);
  a.clock.advance(TTL_S * 1000 + 1);
  await a.openSession(); // any request sweeps: the idle session is closed, its workspace deleted
  const closed = () => a.logs().filter((line) => line.msg === 'session closed');
  for (let turn = 0; turn < 10_000 && closed().length === 0; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  expect(workspacesIn(root)).toEqual([]);
  expect(closed()).toEqual([expect.objectContaining({ reason: 'idle_expired' })]);
  expect((await b.post(rpc('tools/list', 2), headers)).status).toBe(404);
});

describe('the tombstone files', () => {
  it('hold until their time, then go on a sweep; one that cannot be read holds (reviving is the unsafe mistake)', async () => {
    await writeTombstone(root, 'mcp-sandbox-a', 2_000);
    await writeTombstone(root, 'mcp-sandbox-b', 5_000);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(root, '.ended', 'mcp-sandbox-c'), 'garbage');
    expect(await hasTombstone(root, 'mcp-sandbox-a', 1_999)).toBe(true);
    expect(await hasTombstone(root, 'mcp-sandbox-a', 2_000)).toBe(false);
    expect(await hasTombstone(root, 'mcp-sandbox-c', 9_999)).toBe(true);
    expect(await hasTombstone(root, 'mcp-sandbox-none', 0)).toBe(false);
    expect(await sweepTombstones(root, 3_000)).toBe(1);
    expect(readdirSync(join(root, '.ended')).sort()).toEqual(['mcp-sandbox-b', 'mcp-sandbox-c']);
  });
});
