/**
 * Reading a background process's log on E2B: the sandbox's own tools produce the bytes (its `base64` may print
 * anything), so the server keeps no more than the page it asked for (e2b/background.ts).
 */
import * as e2b from 'e2b';

import { createE2BBackgroundProcesses } from '../../../../functions/mcp/sandbox/e2b/background';
import { createFakeClock } from '../../../support/fake-clock';
import { StubSandbox } from '../../../support/e2b-stub';

it('keeps no more than the page of a log the sandbox answers with far more', async () => {
  const stub = new StubSandbox('sbx-read');
  stub.files.set('/tmp/.mcp-processes/p1.log.0', new Uint8Array(3000));
  // The sandbox answers the reader with 12 MB of base64 for a 3,000-byte log.
  stub.command = (cmd) => (cmd.includes('base64 -w 0') ? { stdout: 'eHh4'.repeat(3_000_000) } : { exitCode: 0 });
  const processes = createE2BBackgroundProcesses(stub, e2b, createFakeClock());
  const page = await processes.read('p1', undefined, 3000);
  expect(page.text.length).toBe(3000);
  expect(page.text === 'x'.repeat(3000)).toBe(true);
  expect(page.nextOffset).toBe(3000);
});
