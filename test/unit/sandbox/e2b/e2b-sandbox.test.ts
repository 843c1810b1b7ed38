/**
 * Rules of the E2B sandbox adapter that need a fake clock or a failure on demand; what it does on the wire
 * (commands, code, files, processes) is tested through the real SDK against the local service in test/e2b/.
 */
import * as e2b from 'e2b';

import { E2BSandbox } from '../../../../functions/mcp/sandbox/e2b/e2b-sandbox';
import { leaseTerms } from '../../../../functions/mcp/sandbox/e2b/lease';
import { createFakeClock } from '../../../support/fake-clock';
import { StubSandbox } from '../../../support/e2b-stub';

function setup(idleTtlMs = 1_800_000) {
  const clock = createFakeClock();
  const api = new StubSandbox('sbx-test');
  api.nowMs = () => clock.now();
  const lease = leaseTerms(idleTtlMs);
  api.endAtMs = clock.now() + lease.lengthMs;
  const sandbox = new E2BSandbox({
    api,
    errors: e2b,
    template: 'code-interpreter-v1',
    apiKey: 'e2b_key_0123456789',
    lease,
    maxOutputBytes: 1024,
    charts: 'inline',
    clock,
    tag: 'tag',
    sleep: { mode: 'off', pause: async () => true },
  });
  return { clock, api, sandbox };
}

describe('an E2B sandbox', () => {
  it('renews its lease with setTimeout at most once per interval, not on every call', async () => {
    const { clock, api, sandbox } = setup();
    await sandbox.writeFile('a.txt', Buffer.from('a'));
    clock.advance(10_000);
    await sandbox.readFile('a.txt', 100);
    clock.advance(10_000);
    await sandbox.listFiles({ path: '.', depth: 1, includeHidden: false, maxEntries: 10 });
    expect(api.setTimeouts).toEqual([]);
    clock.advance(11_000);
    await sandbox.readFile('a.txt', 100);
    await sandbox.readFile('a.txt', 100);
    expect(api.setTimeouts).toEqual([1_830_000]);
  });

  it(
    'renews a short idle TTL’s lease every quarter of it, ' + 'and the lease outlives the TTL after every use',
    async () => {
      const { clock, api, sandbox } = setup(2_000);
      for (let i = 0; i < 12; i += 1) {
        await sandbox.readFile('/etc/hostname', 100).catch(() => undefined);
        expect(api.endAtMs).toBeGreaterThanOrEqual(clock.now() + 2_000);
        clock.advance(250);
      }
      expect(api.setTimeouts).toEqual([2_500, 2_500, 2_500, 2_500, 2_500]);
    },
  );

  it('makes the lease outlast a command that may run longer than the idle TTL', async () => {
    const { clock, api, sandbox } = setup(60_000);
    clock.advance(1_000);
    await sandbox.runCommand({ command: 'make', timeoutMs: 300_000 });
    // The command's time (plus the server's backstops), then a full idle period with the renewal interval.
    expect(api.setTimeouts).toEqual([310_000 + 60_000 + 15_000]);
    expect(api.endAtMs).toBe(clock.now() + 385_000);
  });

  it('tells of another instance’s use only when the lease end is not the one this instance set', async () => {
    const { clock, api, sandbox } = setup(1_800_000);
    clock.advance(40_000);
    await sandbox.readFile('/etc/hostname', 100).catch(() => undefined);
    clock.advance(40_000);
    // The lease end this instance set (within the tolerance for the service's clock): nobody else used it.
    api.endAtMs += 1_500;
    await expect(sandbox.lastUseElsewhereMs()).resolves.toBeUndefined();
    // Another instance renewed it ten seconds ago: its uses are covered until the renewal interval after that.
    api.endAtMs = clock.now() - 10_000 + 1_830_000;
    await expect(sandbox.lastUseElsewhereMs()).resolves.toBe(clock.now() + 20_000);
  });

  it('for a sandbox connected to, counts the lease end another instance had set before', async () => {
    const clock = createFakeClock();
    const api = new StubSandbox('sbx-found');
    const lease = leaseTerms(60_000);
    api.endAtMs = clock.now() + lease.lengthMs;
    const priorLeaseEnd = new Date(clock.now() - 5_000 + lease.lengthMs);
    const sandbox = new E2BSandbox({
      api,
      errors: e2b,
      template: 'code-interpreter-v1',
      apiKey: undefined,
      lease,
      priorLeaseEnd,
      maxOutputBytes: 1024,
      charts: 'inline',
      tag: 'tag',
      sleep: { mode: 'off', pause: async () => true },
      clock,
    });
    await expect(sandbox.lastUseElsewhereMs()).resolves.toBe(clock.now() - 5_000 + 15_000);
  });

  it('counts a use in flight as now', async () => {
    const { clock, api, sandbox } = setup(60_000);
    let finish: () => void = () => undefined;
    api.command = () => ({ until: new Promise<void>((resolve) => (finish = resolve)) });
    const running = sandbox.runCommand({ command: 'sleep 100', timeoutMs: 120_000 });
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(90_000);
    await expect(sandbox.lastUseElsewhereMs()).resolves.toBe(clock.now());
    finish();
    await running;
    await expect(sandbox.lastUseElsewhereMs()).resolves.toBeUndefined();
  });

  it('still kills a sandbox that was found gone (only the path to it may have failed)', async () => {
    const { api, sandbox } = setup();
    api.failNext = new e2b.TimeoutError('502: This error is likely due to sandbox timeout.');
    await expect(sandbox.readFile('a', 1)).rejects.toMatchObject({ code: 'sandbox_gone' });
    expect(sandbox.isGone()).toBe(true);
    await sandbox.kill();
    expect(api.killed).toBe(true);
  });

  it('is gone after kill, and says so', async () => {
    const { api, sandbox } = setup();
    await sandbox.kill();
    expect(api.killed).toBe(true);
    expect(sandbox.isGone()).toBe(true);
    await expect(sandbox.readFile('a', 1)).rejects.toMatchObject({ code: 'sandbox_gone' });
  });
});
