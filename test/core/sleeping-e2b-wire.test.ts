/**
 * What needs a clock of sandboxes that sleep on E2B, with the real SDK over HTTP against the local E2B service
 * (test/support/e2b-local/): in-process instances through the harness, the backend as production wires it, on a fake
 * clock started at the real time (the service dates pauses and leases on its own clock). Retention deletes a paused
 * sandbox when the clock passes it, without waking it; the cap on sleeping sandboxes makes room as documented; a
 * restart finds everything from E2B's listing. The story without a clock is test/e2b/sleeping.test.ts.
 */
import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import type { ToolResult } from '../support/clients';
import type { LocalE2B } from '../support/e2b-local';
import { useLocalE2B } from '../support/e2b-in-process';
import { createFakeClock, type FakeClock } from '../support/fake-clock';
import { createHarness, type Harness } from '../support/harness';
import { needs } from '../support/needs';
import { pollUntil, SETTLE_MS } from '../support/processes';

const TTL_S = 60;
const DAY_MS = 86_400_000;

const service = useLocalE2B();
let e2b: LocalE2B;
beforeAll(() => {
  e2b = service();
});
afterEach(async () => {
  for (const { sandboxId } of e2b.sandboxes()) await e2b.killSandbox(sandboxId);
});

/** Instances of one deployment on the real SDK; `instance()` starts one more (a restart). */
function deployment(env: Record<string, string> = {}): { clock: FakeClock; instance: () => Harness } {
  const clock = createFakeClock(Date.now());
  return {
    clock,
    instance: () =>
      createHarness({
        clock,
        env: { E2B_API_KEY: e2b.apiKey, E2B_API_URL: e2b.url, MCP_SESSION_IDLE_TTL_S: String(TTL_S), ...env },
        sandboxes: ({ config, logger, clock: c }) => createSandboxProvider(config, logger, c),
      }),
  };
}

const out = <T>(result: ToolResult): T => {
  if (result.isError === true) throw new Error(`tool failed: ${result.content[0]?.text ?? ''}`);
  return result.structuredContent as T;
};
const paused = (): string[] =>
  e2b
    .sandboxes()
    .filter((s) => s.state === 'paused')
    .map((s) => s.sandboxId);
/** Past the idle TTL, a request that touches no sandbox sweeps; waits until `count` sandboxes are paused. */
async function idle(h: Harness, clock: FakeClock, count: number): Promise<void> {
  clock.advance(TTL_S * 1000 + 1);
  await h.openSession();
  await pollUntil(paused, (ids) => ids.length >= count, SETTLE_MS);
}

needs('bubblewrap').describe('sandboxes that sleep on E2B, on a clock (real SDK, local E2B service)', () => {
  it(
    'deletes a paused sandbox when MCP_SANDBOX_RETENTION_S passes, without waking it; ' +
      'a restart finds it until then',
    async () => {
      const { clock, instance } = deployment({ MCP_SANDBOX_RETENTION_S: String(DAY_MS / 1000) });
      const h = instance();
      const made = out<{ sandbox_id: string }>(await (await h.connect()).callTool('open_sandbox', { name: 'proj' }));
      await idle(h, clock, 1);
      clock.advance(DAY_MS / 2);
      const restarted = instance();
      const listed = out<{ sandboxes: Array<{ name: string; state: string }> }>(
        await (await restarted.connect()).callTool('list_sandboxes'),
      );
      expect(listed.sandboxes).toEqual([expect.objectContaining({ name: 'proj', state: 'sleeping' })]);
      clock.advance(DAY_MS / 2);
      const later = out<{ sandboxes: unknown[] }>(await (await restarted.connect()).callTool('list_sandboxes'));
      expect(later.sandboxes).toEqual([]);
      expect(e2b.sandboxes().map((s) => s.sandboxId)).not.toContain(made.sandbox_id);
      expect(e2b.requests().filter((r) => r.route === 'connect' && r.sandboxId === made.sandbox_id)).toEqual([]);
    },
  );

  it(
    'at MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL deletes the least recently used paused sandbox for a new one, and ' +
      'says which',
    async () => {
      const { clock, instance } = deployment({ MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL: '2' });
      const h = instance();
      const a = await h.connect();
      const first = out<{ sandbox_id: string }>(await a.callTool('open_sandbox', { name: 'first' }));
      clock.advance(1000);
      out(await a.callTool('open_sandbox', { name: 'second' }));
      await idle(h, clock, 2);
      const third = out<{ deleted_to_make_room: Array<{ name: string; sandbox_id: string }> }>(
        await (await h.connect()).callTool('open_sandbox', { name: 'third' }),
      );
      expect(third.deleted_to_make_room).toEqual([
        { name: 'first', sandbox_id: first.sandbox_id, last_used_at: expect.any(String) },
      ]);
      expect(e2b.sandboxes().map((s) => s.sandboxId)).not.toContain(first.sandbox_id);
      expect(e2b.sandboxes()).toHaveLength(2);
    },
  );
});
