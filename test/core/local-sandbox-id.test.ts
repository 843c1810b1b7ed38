/**
 * A local sandbox's id (sandbox/local/sandbox-id.ts): a reset gives a new one, as on E2B, and a session that
 * comes back on another instance reports the id it had. In-process, the real local backend.
 */
import { rmSync } from 'node:fs';

import { createSandboxProvider } from '../../functions/mcp/sandbox/create-provider';
import { createFakeClock } from '../support/fake-clock';
import { createHarness, type Harness, type HarnessOptions } from '../support/harness';
import { messagesOf, rpc } from '../support/raw-session';
import { makeSandboxRoot } from '../support/server';

type SandboxDeps = Parameters<NonNullable<HarnessOptions['sandboxes']>>[0];

let root: string;
beforeEach(() => {
  root = makeSandboxRoot();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
const instance = (): Harness =>
  createHarness({
    clock,
    env: {
      SANDBOX_BACKEND: 'local',
      LOCAL_SANDBOX_ROOT: root,
      LOCAL_SANDBOX_ISOLATION: 'none',
      LOCAL_SANDBOX_DISK_MB: '0',
    },
    sandboxes: ({ config, logger, clock: c }: SandboxDeps) => createSandboxProvider(config, logger, c),
  });

/** Calls a tool over raw requests and returns its structured content. */
async function call(
  h: Harness,
  headers: Record<string, string>,
  name: string,
  id: number,
  args: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const res = await h.post(rpc('tools/call', id, { name, arguments: args }), headers);
  const result = messagesOf(res)[0]?.result as
    | { structuredContent?: Record<string, unknown>; isError?: boolean }
    | undefined;
  if (result?.structuredContent === undefined || result.isError === true)
    throw new Error(`${name} failed: ${res.text}`);
  return result.structuredContent;
}

it('gives a reset sandbox a new id, and a session that moves keeps the id it has', async () => {
  const first = instance();
  const { headers } = await first.openSession();
  await call(first, headers, 'write_file', 1, { path: 'a.txt', content: 'a' }); // sandbox_status never starts a sandbox
  const before = (await call(first, headers, 'sandbox_status', 2)).sandbox_id as string;
  expect(before).toMatch(/^local-[0-9a-f]{16}$/);
  expect((await call(first, headers, 'sandbox_status', 3)).sandbox_id).toBe(before);

  const reset = await call(first, headers, 'reset_sandbox', 4);
  expect(reset.previous_sandbox_id).toBe(before);
  expect(reset.sandbox_id).toMatch(/^local-[0-9a-f]{16}$/);
  expect(reset.sandbox_id).not.toBe(before);
  expect((await call(first, headers, 'sandbox_status', 5)).sandbox_id).toBe(reset.sandbox_id);
  await call(first, headers, 'write_file', 6, { path: 'b.txt', content: 'b' });
  await first.close();

  // Another instance of the deployment re-attaches the session's workspace: the same sandbox, the same id.
  const second = instance();
  expect((await call(second, headers, 'read_file', 6, { path: 'b.txt' })).content).toBe('b');
  expect((await call(second, headers, 'sandbox_status', 7)).sandbox_id).toBe(reset.sandbox_id);
  const again = await call(second, headers, 'reset_sandbox', 8);
  expect(again.previous_sandbox_id).toBe(reset.sandbox_id);
  expect([before, reset.sandbox_id]).not.toContain(again.sandbox_id);
  await second.close();
});

it('gives two sessions different ids', async () => {
  const h = instance();
  const a = await h.openSession();
  const b = await h.openSession();
  for (const { headers } of [a, b]) await call(h, headers, 'write_file', 1, { path: 'a.txt', content: 'a' });
  expect((await call(h, a.headers, 'sandbox_status', 2)).sandbox_id).not.toBe(
    (await call(h, b.headers, 'sandbox_status', 2)).sandbox_id,
  );
  await h.close();
});
