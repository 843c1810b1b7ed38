/**
 * Rules of the E2B sandbox adapter that need a fake clock or a failure on demand; what it does on the wire
 * (commands, code, files, processes) is tested through the real SDK against the local service in test/e2b/.
 */
import * as e2b from 'e2b';

import { E2BSandbox } from '../../../../functions/mcp/sandbox/e2b/e2b-sandbox';
import { createFakeClock } from '../../../support/fake-clock';
import { StubSandbox } from '../../../support/e2b-stub';

function setup(renewEveryMs = 30_000) {
  const clock = createFakeClock();
  const api = new StubSandbox('sbx-test');
  const sandbox = new E2BSandbox({ api, errors: e2b, template: 'code-interpreter-v1', apiKey: 'e2b_key_0123456789', leaseMs: 1_800_000, renewEveryMs, maxOutputBytes: 1024, charts: 'inline', clock });
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
    expect(api.setTimeouts).toEqual([1_800_000]);
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
