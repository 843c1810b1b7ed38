/**
 * What the real E2B SDKs hold in the server's memory for sandbox output, through this server's adapter
 * (functions/mcp/sandbox/e2b/sdk.ts) against the local E2B service: a command's handle keeps no copy of its
 * output (held-output.ts). This pins the SDK internals the adapter relies on: an SDK that renames them fails
 * here, not in production. (An execution's answer is read by execute.ts: run-code.test.ts and the reliability suite.)
 */
import type { CommandHandle } from 'e2b';

import { type E2BSandboxApi, loadE2BSdk } from '../../functions/mcp/sandbox/e2b/sdk';
import { type LocalE2B, startLocalE2B } from '../support/e2b-local';
import { needs } from '../support/needs';

needs('bubblewrap').describe('the SDK on the wire to the local E2B service', () => {
  let e2b: LocalE2B;
  let sandbox: E2BSandboxApi;
  const saved = { ...process.env };

  beforeAll(async () => {
    e2b = await startLocalE2B();
    Object.assign(process.env, e2b.env());
    const sdk = await loadE2BSdk();
    sandbox = await sdk.create('code-interpreter-v1', { timeoutMs: 60_000, retries: 0 });
  });
  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    await e2b?.stop();
    process.env = saved;
  });

  it('a command that prints 8 MB leaves no copy of it on its handle', async () => {
    let seen = 0;
    const handle = await sandbox.startCommand('head -c 8000000 /dev/zero | tr "\\0" y; echo done >&2', {
      timeoutMs: 30_000,
      onStdout: (text) => {
        seen += text.length;
      },
    });
    const result = await handle.wait();
    expect(seen).toBe(8_000_000);
    // The SDK's own copy (handle.stdout, and the result built from it) holds at most the last chunk.
    expect((handle as CommandHandle).stdout.length).toBeLessThan(1 << 20);
    expect(result.stdout.length).toBeLessThan(1 << 20);
  });
});
