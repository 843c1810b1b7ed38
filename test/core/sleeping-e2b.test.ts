/**
 * Work that lasts days on the E2B backend, in-process over the SDK stub on a fake clock: idle sandboxes paused
 * (with their memory where the service allows it) and woken on their next use, named sandboxes found again from
 * E2B's listing or, where the service cannot list, from E2B_STATE_DIR; what a service that refuses memory snapshots
 * or pausing altogether gets; retention, forks through snapshots, and 2026-07-28 handles of named sandboxes. The same
 * story through the real SDKs on the wire is test/e2b/sleeping.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { ToolResult } from '../support/clients';
import { StubSdk } from '../support/e2b-stub';
import { createFakeClock, type FakeClock } from '../support/fake-clock';
import { createHarness, type Harness, HARNESS_OTHER_TOKEN } from '../support/harness';
import { settle } from '../support/held-commands';

const TTL_S = 60;
const DAY_MS = 86_400_000;

/** Instances of one deployment over one stub "E2B"; `instance()` starts one more (a restart). */
function deployment(env: Record<string, string> = {}): { clock: FakeClock; sdk: StubSdk; instance: () => Harness } {
  const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const sdk = new StubSdk(clock);
  return {
    clock,
    sdk,
    instance: () => createHarness({ clock, sdk, env: { MCP_SESSION_IDLE_TTL_S: String(TTL_S), ...env } }),
  };
}

const out = <T>(result: ToolResult): T => {
  if (result.isError === true) throw new Error(`tool failed: ${result.content[0]?.text ?? ''}`);
  return result.structuredContent as T;
};
const textOf = (result: ToolResult): string => result.content.map((c) => c.text ?? '').join('\n');
/**
 * Past the idle TTL, a request that touches no sandbox sweeps; waits until what it set off is done: `done`, and
 * `named` named sandboxes asleep (the log line that ends their sleep).
 */
async function idle(h: Harness, clock: FakeClock, done: () => boolean, named = 1): Promise<void> {
  const asleep = (): number => h.logs().filter((l) => l.msg === 'sandbox asleep').length;
  const before = asleep();
  clock.advance(TTL_S * 1000 + 1);
  await h.openSession();
  await settle(() => done() && asleep() >= before + named);
}

describe('on E2B with its listing (E2B’s cloud)', () => {
  it(
    'creates sandboxes that pause themselves at their lease end, pauses an idle one with its memory, and after a ' +
      'restart wakes it by name with its processes and Python state',
    async () => {
      const { clock, sdk, instance } = deployment();
      const day1 = instance();
      const a = await day1.connect();
      out(await a.callTool('open_sandbox', { name: 'proj' }));
      const [sandbox] = sdk.sandboxes;
      expect(sandbox?.lifecycle).toEqual({ onTimeout: { action: 'pause', keepMemory: true }, autoResume: false });
      expect(sandbox?.metadata).toMatchObject({ mcp_name: 'proj', mcp_sleep: 'memory' });
      out(await a.callTool('write_file', { path: 'notes.txt', content: 'day one' }));
      expect(out<{ sleep: { mode: string } }>(await a.callTool('sandbox_status')).sleep.mode).toBe('memory');
      await idle(day1, clock, () => sandbox?.state === 'paused');
      expect(sdk.pauses).toEqual([{ sandboxId: sandbox?.sandboxId, keepMemory: true }]);
      expect(sandbox?.killed).toBe(false);

      const day2 = instance();
      clock.advance(DAY_MS);
      const b = await day2.connect();
      const listed = out<{ sandboxes: Array<{ name: string; state: string }> }>(await b.callTool('list_sandboxes'));
      expect(listed.sandboxes).toEqual([expect.objectContaining({ name: 'proj', state: 'sleeping' })]);
      const woken = out<{ state: string; kept: string[] }>(await b.callTool('open_sandbox', { name: 'proj' }));
      expect(woken).toMatchObject({ state: 'woken', kept: ['files', 'processes', 'Python state'] });
      expect(sandbox?.state).toBe('running');
      expect(out<{ content: string }>(await b.callTool('read_file', { path: 'notes.txt' })).content).toBe('day one');
      expect(sdk.created).toHaveLength(1);
    },
  );

  it('lists only the caller’s sandboxes: another credential sees none and opens its own', async () => {
    const { sdk, instance } = deployment();
    const h = instance();
    out(await (await h.connect()).callTool('open_sandbox', { name: 'proj' }));
    const other = await h.connect({ token: HARNESS_OTHER_TOKEN });
    expect(out<{ sandboxes: unknown[] }>(await other.callTool('list_sandboxes')).sandboxes).toEqual([]);
    expect(out<{ state: string }>(await other.callTool('open_sandbox', { name: 'proj' })).state).toBe('created');
    expect(new Set(sdk.sandboxes.map((s) => s.metadata.mcp_owner)).size).toBe(2);
  });

  it('deletes a paused sandbox once MCP_SANDBOX_RETENTION_S passes, without waking it', async () => {
    const { clock, sdk, instance } = deployment({ MCP_SANDBOX_RETENTION_S: String(DAY_MS / 1000) });
    const h = instance();
    out(await (await h.connect()).callTool('open_sandbox', { name: 'proj' }));
    const [sandbox] = sdk.sandboxes;
    await idle(h, clock, () => sandbox?.state === 'paused');
    clock.advance(DAY_MS);
    const listed = out<{ sandboxes: unknown[] }>(await (await h.connect()).callTool('list_sandboxes'));
    expect(listed.sandboxes).toEqual([]);
    expect(sandbox?.killed).toBe(true);
    expect(sdk.connects).toEqual([]);
  });

  it(
    'forks through a snapshot: the copy has the files, under its ' + 'own metadata, and the snapshot is its own',
    async () => {
      const { sdk, instance } = deployment();
      const a = await instance().connect();
      out(await a.callTool('open_sandbox', { name: 'base' }));
      out(await a.callTool('write_file', { path: 'app.py', content: 'print(1)' }));
      expect(out<{ state: string }>(await a.callTool('open_sandbox', { name: 'copy', from: 'base' })).state).toBe(
        'forked',
      );
      expect(out<{ content: string }>(await a.callTool('read_file', { path: 'app.py' })).content).toBe('print(1)');
      const fork = sdk.sandboxes[1];
      expect(fork?.template).toBe('snap-1');
      expect(fork?.metadata).toMatchObject({ mcp_name: 'copy', mcp_snapshot: 'snap-1' });
      out(await a.callTool('delete_sandbox', { name: 'copy' }));
      expect(fork?.killed).toBe(true);
      expect([...sdk.snapshots.keys()]).toEqual([]);
    },
  );

  it(
    'gives a 2026-07-28 client the named sandbox’s handle, which ' + 'works after a restart and not after a delete',
    async () => {
      const { sdk, instance } = deployment({ E2B_STATE_DIR: mkdtempSync(join(tmpdir(), 'mcp-state-')) });
      const h = instance();
      const client = await h.connectModern();
      const opened = (await client.callTool({ name: 'open_sandbox', arguments: { name: 'proj' } })) as ToolResult;
      const handle = (opened.structuredContent as { sandbox: string }).sandbox;
      expect(textOf(opened).split('\n')[0]).toBe(`sandbox: ${handle}`);
      await client.callTool({ name: 'write_file', arguments: { sandbox: handle, path: 'a.txt', content: 'a' } });
      const again = await instance().connectModern();
      const read = (await again.callTool({
        name: 'read_file',
        arguments: { sandbox: handle, path: 'a.txt' },
      })) as ToolResult;
      expect((read.structuredContent as { content: string }).content).toBe('a');
      await again.callTool({ name: 'delete_sandbox', arguments: { sandbox: handle, name: 'proj' } });
      const refused = (await (
        await instance().connectModern()
      ).callTool({
        name: 'read_file',
        arguments: { sandbox: handle, path: 'a.txt' },
      })) as ToolResult;
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('was deleted');
      expect(sdk.sandboxes[0]?.killed).toBe(true);
    },
  );
});

describe('one name, opened at once', () => {
  it('by two sessions of one instance, or of two instances sharing E2B_STATE_DIR: one sandbox is made', async () => {
    const root = mkdtempSync(join(tmpdir(), 'mcp-state-'));
    try {
      const { sdk, instance } = deployment({ E2B_STATE_DIR: root });
      const a = instance();
      const b = instance();
      const clients = await Promise.all([a.connect(), a.connect(), b.connect(), b.connect()]);
      const opened = await Promise.all(clients.map((c) => c.callTool('open_sandbox', { name: 'proj' })));
      const ids = opened.map((r) => out<{ sandbox_id: string }>(r).sandbox_id);
      expect(new Set(ids).size).toBe(1);
      expect(sdk.created).toHaveLength(1);
      expect(opened.map((r) => out<{ state: string }>(r).state).filter((s) => s === 'created')).toHaveLength(1);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('on an E2B service that refuses what sleeping needs', () => {
  it('sleeps with files only where memory snapshots are refused, and says so', async () => {
    const { clock, sdk, instance } = deployment();
    sdk.refuses = 'memory';
    const h = instance();
    const a = await h.connect();
    out(await a.callTool('write_file', { path: 'a.txt', content: 'a' }));
    const [sandbox] = sdk.sandboxes;
    expect(sandbox?.lifecycle).toEqual({ onTimeout: { action: 'pause', keepMemory: false }, autoResume: false });
    expect(out<{ sleep: { mode: string; keeps: string } }>(await a.callTool('sandbox_status')).sleep).toEqual({
      mode: 'files',
      keeps: expect.stringContaining('processes are stopped'),
    });
    await idle(h, clock, () => sandbox?.state === 'paused', 0);
    expect(sdk.pauses.at(-1)).toEqual({ sandboxId: sandbox?.sandboxId, keepMemory: false });
    expect(h.logs()).toContainEqual(
      expect.objectContaining({ msg: expect.stringContaining('sleep lowered'), to: 'files' }),
    );
  });

  it('destroys idle sandboxes, as before sandboxes slept, where the service cannot pause', async () => {
    const { clock, sdk, instance } = deployment();
    sdk.refuses = 'sleep';
    const h = instance();
    const session = await h.openSession();
    await h.post(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'write_file', arguments: { path: 'a', content: '' } },
      },
      session.headers,
    );
    const [sandbox] = sdk.sandboxes;
    expect(sandbox?.lifecycle).toBeUndefined();
    await idle(h, clock, () => sandbox?.killed === true, 0);
    expect((await h.post({ jsonrpc: '2.0', id: 3, method: 'ping' }, session.headers)).status).toBe(404);
  });

  it(
    'without a listing (Alibaba Cloud’s service) and without E2B_STATE_DIR, names no sandbox, naming the setting, ' +
      'and lets none sleep',
    async () => {
      const { sdk, instance } = deployment();
      sdk.listing = false;
      const a = await instance().connect();
      const refused = await a.callTool('open_sandbox', { name: 'proj' });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('E2B_STATE_DIR');
      out(await a.callTool('write_file', { path: 'a.txt', content: 'a' }));
      expect(sdk.sandboxes[0]?.lifecycle).toBeUndefined();
      expect(out<{ sleep: { mode: string } }>(await a.callTool('sandbox_status')).sleep.mode).toBe('off');
    },
  );

  it('without a listing but with E2B_STATE_DIR, finds a named sandbox again from its record', async () => {
    const root = mkdtempSync(join(tmpdir(), 'mcp-state-'));
    try {
      const { clock, sdk, instance } = deployment({ E2B_STATE_DIR: root });
      sdk.listing = false;
      const h = instance();
      const a = await h.connect();
      out(await a.callTool('open_sandbox', { name: 'proj' }));
      out(await a.callTool('write_file', { path: 'a.txt', content: 'kept' }));
      const [sandbox] = sdk.sandboxes;
      await idle(h, clock, () => sandbox?.state === 'paused');
      const b = await instance().connect();
      expect(out<{ sandboxes: Array<{ name: string }> }>(await b.callTool('list_sandboxes')).sandboxes).toEqual([
        expect.objectContaining({ name: 'proj', state: 'sleeping' }),
      ]);
      expect(out<{ state: string }>(await b.callTool('open_sandbox', { name: 'proj' })).state).toBe('woken');
      expect(out<{ content: string }>(await b.callTool('read_file', { path: 'a.txt' })).content).toBe('kept');
      expect(sdk.connects).toEqual([sandbox?.sandboxId]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
