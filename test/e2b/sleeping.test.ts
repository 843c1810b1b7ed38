/**
 * Work that lasts days on the E2B backend, through the built bundle and the real SDKs against the local E2B service
 * (which pauses with and without memory, resumes on connect, lists by state and metadata, and snapshots): day 1 opens
 * a named sandbox and leaves files, Python state and a running process; idle, it is paused with its memory; the
 * server restarts; day 2 a new session lists it, opens it and finds all of it. Another credential never sees it; a
 * fork has its files and goes its own way; a service without memory snapshots sleeps with files only; Alibaba
 * Cloud's service (no listing) names sandboxes only with E2B_STATE_DIR. Retention and the caps, which need a clock,
 * are test/core/sleeping-e2b-wire.test.ts, with the same SDKs and service.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, type TestClient, type ToolResult } from '../support/clients';
import { NODES, serviceDescribe, startWire, type Wire, WIRE_TOKEN } from '../support/e2b-wire';
import { pollUntil, SETTLE_MS } from '../support/processes';

const OTHER_TOKEN = 'e2b-wire-other-token-0123456789abc';
const TTL_S = 2;

const out = <T>(result: ToolResult): T => {
  if (result.isError === true) throw new Error(`tool failed: ${result.content[0]?.text ?? ''}`);
  return result.structuredContent as T;
};
const textOf = (result: ToolResult): string => result.content.map((c) => c.text ?? '').join('\n');

/** Waits out the idle TTL, then sends a request that touches no sandbox, whose sweep puts the idle ones to sleep. */
async function idle(wire: Wire, until: () => boolean): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, TTL_S * 1000 + 300));
  await (await wire.connect()).close();
  await pollUntil(until, (done) => done, SETTLE_MS);
}

serviceDescribe.each(NODES)('sandboxes that sleep and wake on E2B, server on %s', (_name, node) => {
  let wire: Wire;
  const state = mkdtempSync(join(tmpdir(), 'mcp-e2b-state-'));
  afterEach(() => wire?.stop());
  afterAll(() => rmSync(state, { recursive: true, force: true }));
  const start = async (options: Parameters<typeof startWire>[1] = {}): Promise<Wire> => {
    wire = await startWire(node, {
      ...options,
      env: { MCP_SESSION_IDLE_TTL_S: String(TTL_S), MCP_AUTH_TOKENS: `${WIRE_TOKEN},${OTHER_TOKEN}`, ...options.env },
    });
    return wire;
  };

  it(
    'day 1 opens proj, leaves files, Python state and a process; idle, it is paused with its memory; after a ' +
      'restart day 2 lists it, opens it and finds all three',
    async () => {
      const w = await start();
      const day1 = await w.connect();
      const created = out<{ sandbox_id: string; state: string }>(await day1.callTool('open_sandbox', { name: 'proj' }));
      expect(created.state).toBe('created');
      out(await day1.callTool('write_file', { path: 'notes.txt', content: 'day one' }));
      out(await day1.callTool('run_code', { code: 'x = 42' }));
      out(await day1.callTool('run_command', { command: 'sleep 1000', background: true }));
      await idle(w, () => w.e2b.sandboxes().some((s) => s.state === 'paused'));
      expect(w.e2b.sandboxes()).toEqual([
        expect.objectContaining({ sandboxId: created.sandbox_id, state: 'paused', memory: true }),
      ]);
      await w.restartServer();

      const day2 = await w.connect();
      const listed = out<{ sandboxes: Array<Record<string, unknown>> }>(await day2.callTool('list_sandboxes'));
      expect(listed.sandboxes).toEqual([
        expect.objectContaining({ name: 'proj', sandbox_id: created.sandbox_id, state: 'sleeping' }),
      ]);
      const woken = out<{ state: string; kept: string[] }>(await day2.callTool('open_sandbox', { name: 'proj' }));
      expect(woken).toMatchObject({ state: 'woken', kept: ['files', 'processes', 'Python state'] });
      expect(out<{ content: string }>(await day2.callTool('read_file', { path: 'notes.txt' })).content).toBe('day one');
      expect(out<{ stdout: string }>(await day2.callTool('run_code', { code: 'print(x)' })).stdout).toBe('42\n');
      const processes = out<{ processes: Array<{ state: string; command: string }> }>(
        await day2.callTool('manage_process', { action: 'list' }),
      ).processes;
      expect(processes).toEqual([expect.objectContaining({ command: 'sleep 1000', state: 'running' })]);
      expect(w.e2b.sandboxes()).toEqual([expect.objectContaining({ state: 'running' })]);
    },
  );

  it('keeps a named sandbox from another credential: it neither lists it nor opens it', async () => {
    const w = await start();
    const mine = await w.connect();
    const made = out<{ sandbox_id: string }>(await mine.callTool('open_sandbox', { name: 'proj' }));
    out(await mine.callTool('write_file', { path: 'secret.txt', content: 'mine' }));
    const other: TestClient = await connectClient('v2', w.server.url, { token: OTHER_TOKEN });
    try {
      expect(out<{ sandboxes: unknown[] }>(await other.callTool('list_sandboxes')).sandboxes).toEqual([]);
      const theirs = out<{ sandbox_id: string; state: string }>(await other.callTool('open_sandbox', { name: 'proj' }));
      expect(theirs.state).toBe('created');
      expect(theirs.sandbox_id).not.toBe(made.sandbox_id);
      expect((await other.callTool('read_file', { path: 'secret.txt' })).isError).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('forks through a snapshot: the copy has the files, and the two go their own ways', async () => {
    const w = await start();
    const c = await w.connect();
    out(await c.callTool('open_sandbox', { name: 'base' }));
    out(await c.callTool('write_file', { path: 'app.py', content: 'print(1)' }));
    expect(out<{ state: string }>(await c.callTool('open_sandbox', { name: 'copy', from: 'base' })).state).toBe(
      'forked',
    );
    expect(out<{ content: string }>(await c.callTool('read_file', { path: 'app.py' })).content).toBe('print(1)');
    out(await c.callTool('write_file', { path: 'app.py', content: 'print(2)' }));
    out(await c.callTool('open_sandbox', { name: 'base' }));
    expect(out<{ content: string }>(await c.callTool('read_file', { path: 'app.py' })).content).toBe('print(1)');
    out(await c.callTool('delete_sandbox', { name: 'copy' }));
    expect(w.e2b.snapshots()).toEqual([]);
    expect(w.e2b.sandboxes()).toHaveLength(1);
  });

  it('sleeps with files only on a service without memory snapshots, and says so', async () => {
    const w = await start({ pause: 'files' });
    const c = await w.connect();
    out(await c.callTool('open_sandbox', { name: 'proj' }));
    out(await c.callTool('run_code', { code: 'y = 1' }));
    out(await c.callTool('write_file', { path: 'kept.txt', content: 'k' }));
    expect(out<{ sleep: { mode: string } }>(await c.callTool('sandbox_status')).sleep.mode).toBe('files');
    await idle(w, () => w.e2b.sandboxes().some((s) => s.state === 'paused'));
    expect(w.e2b.sandboxes()).toEqual([expect.objectContaining({ state: 'paused', memory: false })]);
    const again = await w.connect();
    const woken = out<{ kept: string[] }>(await again.callTool('open_sandbox', { name: 'proj' }));
    expect(woken.kept).toEqual(['files']);
    expect(out<{ content: string }>(await again.callTool('read_file', { path: 'kept.txt' })).content).toBe('k');
    expect((await again.callTool('run_code', { code: 'print(y)' })).isError).toBe(true);
  });

  it(
    'on Alibaba Cloud’s service (no listing) names no sandbox without E2B_STATE_DIR, naming the setting; with it ' +
      'the story holds across a restart',
    async () => {
      const without = await start({ flavor: 'alibaba', env: { E2B_CHARTS: 'files' } });
      const refused = await (await without.connect()).callTool('open_sandbox', { name: 'proj' });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('E2B_STATE_DIR');
      await without.stop();

      const w = await start({ flavor: 'alibaba', env: { E2B_CHARTS: 'files', E2B_STATE_DIR: state } });
      const day1 = await w.connect();
      out(await day1.callTool('open_sandbox', { name: 'proj' }));
      out(await day1.callTool('write_file', { path: 'notes.txt', content: 'on alibaba' }));
      await idle(w, () => w.e2b.sandboxes().some((s) => s.state === 'paused'));
      await w.restartServer();
      const day2 = await w.connect();
      expect(out<{ sandboxes: Array<{ name: string }> }>(await day2.callTool('list_sandboxes')).sandboxes).toEqual([
        expect.objectContaining({ name: 'proj', state: 'sleeping' }),
      ]);
      expect(out<{ state: string }>(await day2.callTool('open_sandbox', { name: 'proj' })).state).toBe('woken');
      expect(out<{ content: string }>(await day2.callTool('read_file', { path: 'notes.txt' })).content).toBe(
        'on alibaba',
      );
    },
  );
});
