/**
 * The 2026-07-28 lane's sandbox table (protocol/modern-lane.ts), in-process with a fake clock: handles
 * minted and honoured across instances, idle sandboxes destroyed after the TTL, the least recently used
 * let go (not destroyed) at the cap, and a closed stream cancelling the call in the sandbox.
 */
import type { Client } from '@modelcontextprotocol/client';

import { createHarness, type Harness } from '../support/harness';
import { holdCommands, settle } from '../support/held-commands';

type Result = {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};
const call = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<Result> =>
  (await client.callTool({ name, arguments: args })) as Result;
const handleOf = (result: Result): string => String(result.structuredContent?.sandbox);
const TTL_S = 60;

it(
  'gives a handle-less call a new sandbox and its handle; the' + ' handle reaches the same sandbox on another instance',
  async () => {
    const a = createHarness();
    const { sdk } = a;
    const b = createHarness({ clock: a.clock, sdk });
    const onA = await a.connectModern();
    const sandbox = handleOf(await call(onA, 'write_file', { path: 'shared.txt', content: 'one\n' }));
    expect(sdk.created).toHaveLength(1);
    const onB = await b.connectModern();
    expect((await call(onB, 'read_file', { path: 'shared.txt', sandbox })).structuredContent).toMatchObject({
      content: 'one\n',
      sandbox,
    });
    expect(sdk.created).toHaveLength(1);
    expect(sdk.connects).toEqual(['sbx-1']);
    // Without the handle, a call gets a sandbox of its own.
    expect(handleOf(await call(onB, 'sandbox_status'))).not.toBe(sandbox);
  },
);

it(
  `destroys a sandbox whose handle went unused past` +
    ` MCP_SESSION_IDLE_TTL_S (${TTL_S} s), and keeps one used within it`,
  async () => {
    const h = createHarness({ env: { MCP_SESSION_IDLE_TTL_S: String(TTL_S) } });
    const client = await h.connectModern();
    const kept = handleOf(await call(client, 'write_file', { path: 'a.txt', content: 'a' }));
    const dropped = handleOf(await call(client, 'write_file', { path: 'b.txt', content: 'b' }));
    h.clock.advance(TTL_S * 1000 - 1_000);
    expect((await call(client, 'read_file', { path: 'a.txt', sandbox: kept })).structuredContent).toMatchObject({
      content: 'a',
    });
    h.clock.advance(1_100);
    expect((await call(client, 'read_file', { path: 'a.txt', sandbox: kept })).structuredContent).toMatchObject({
      content: 'a',
    }); // and sweeps
    await settle(() => h.sdk.sandboxes[1]?.killed === true);
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false, true]);
    // The destroyed sandbox's handle still verifies: it gets a fresh sandbox, and says so.
    const again = await call(client, 'read_file', { path: 'b.txt', sandbox: dropped });
    expect(again.isError).toBe(true);
    expect(again.content.map((c) => c.text).join('\n')).toMatch(/no earlier sandbox/);
  },
);

it(
  'lets go of the least recently used sandbox at the cap' +
    ' (MCP_MAX_SESSIONS=2) without destroying it; its handle brings it back',
  async () => {
    const h = createHarness({ env: { MCP_MAX_SESSIONS: '2', MCP_MAX_SANDBOXES_PER_CREDENTIAL: '2' } });
    const client = await h.connectModern();
    const first = handleOf(await call(client, 'write_file', { path: 'first.txt', content: '1' }));
    // Its handle came back once: it is kept for it (a sandbox whose handle never came back is not: below).
    h.clock.advance(1_000);
    await call(client, 'sandbox_status', { sandbox: first });
    h.clock.advance(1_000);
    await call(client, 'write_file', { path: 'second.txt', content: '2' });
    h.clock.advance(1_000);
    await call(client, 'write_file', { path: 'third.txt', content: '3' });
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false, false, false]);
    expect((await call(client, 'read_file', { path: 'first.txt', sandbox: first })).structuredContent).toMatchObject({
      content: '1',
    });
    expect(h.sdk.connects).toEqual(['sbx-1']);
    expect(h.sdk.created).toHaveLength(3);
    // Making room for it let go of the second, whose handle never came back: that one is destroyed, not kept.
    await settle(() => h.sdk.sandboxes[1]?.killed === true);
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false, true, false]);
  },
);

it(
  'answers a forged, foreign, expired or malformed handle with a' + ' tool error naming the fix, and makes no sandbox',
  async () => {
    const h = createHarness({ env: { MCP_SESSION_MAX_AGE_S: '3600' } });
    const mine = handleOf(await call(await h.connectModern(), 'sandbox_status'));
    const [random, issued, mac] = mine.split('.');
    const forged = `${random}.${issued}.${mac?.startsWith('A') ? 'B' : 'A'}${mac?.slice(1)}`;
    const client = await h.connectModern();
    const { HARNESS_OTHER_TOKEN } = await import('../support/harness');
    const other = await h.connectModern({ token: HARNESS_OTHER_TOKEN });
    const fix =
      'Call the tool again without "sandbox" to get a new, empty sandbox (or open_sandbox to open a named one), ' +
      'and from then on pass the handle that each result gives back.';
    const cases: Array<[Client, unknown, string]> = [
      [client, forged, 'it belongs to another credential or server, or was changed'],
      [other, mine, 'it belongs to another credential or server, or was changed'],
      [client, 'not-a-handle', 'it is not a handle this server gave out'],
      [client, 42, 'it is not a handle this server gave out'],
    ];
    for (const [who, sandbox, why] of cases) {
      const result = await call(who, 'sandbox_status', { sandbox });
      expect({ isError: result.isError, text: result.content[0]?.text }).toEqual({
        isError: true,
        text: `The "sandbox" handle cannot be used: ${why}. ${fix}`,
      });
    }
    h.clock.advance(3601_000);
    const expired = await call(client, 'sandbox_status', { sandbox: mine });
    expect(expired.content[0]?.text).toContain('it has expired');
    // sandbox_status makes no sandbox, and neither does a refused handle.
    expect(h.sdk.created).toHaveLength(0);
  },
);

it(
  'destroys a sandbox whose handle never came back after' +
    ' MCP_SANDBOX_FIRST_LEASE_S; one whose handle came back lives on the idle TTL, then sleeps',
  async () => {
    const h = createHarness({ env: { MCP_SANDBOX_FIRST_LEASE_S: '120', MCP_SESSION_IDLE_TTL_S: '1800' } });
    const client = await h.connectModern();
    await call(client, 'write_file', { path: 'once.txt', content: 'never again' }); // sbx-1: its handle is dropped
    const kept = handleOf(await call(client, 'write_file', { path: 'kept.txt', content: 'k' })); // sbx-2
    await call(client, 'read_file', { path: 'kept.txt', sandbox: kept });
    h.clock.advance(119_000);
    await call(client, 'sandbox_status', { sandbox: kept }); // sweeps: nothing is due yet
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false, false]);
    h.clock.advance(2_000);
    await call(client, 'sandbox_status', { sandbox: kept });
    await settle(() => h.sdk.sandboxes[0]?.killed === true);
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([true, false]);
    h.clock.advance(1_800_001);
    await call(await h.connectModern(), 'sandbox_status');
    await settle(() => h.sdk.sandboxes[1]?.state === 'paused');
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([true, false]);
  },
);

it(
  "makes a handle-less E2B sandbox with E2B's timeout at the first lease, " +
    'and lengthens it to the idle TTL once its handle comes back',
  async () => {
    const h = createHarness({ env: { MCP_SANDBOX_FIRST_LEASE_S: '120', MCP_SESSION_IDLE_TTL_S: '1800' } });
    const client = await h.connectModern();
    const created = h.clock.now();
    const handle = handleOf(await call(client, 'write_file', { path: 'a.txt', content: 'a' }));
    const sandbox = h.sdk.sandboxes[0];
    // The first lease plus the renewal interval (30 s): a lost instance leaves it that long, not the idle TTL.
    expect(sandbox?.endAtMs).toBe(created + 150_000);
    expect(sandbox?.setTimeouts).toEqual([]);
    await call(client, 'read_file', { path: 'a.txt', sandbox: handle });
    // Confirmed: the next use renews it to the idle TTL plus the interval.
    expect(sandbox?.setTimeouts).toEqual([1_830_000]);
    expect(sandbox?.endAtMs).toBe(h.clock.now() + 1_830_000);
  },
);

it(
  'counts handle-less sandboxes against MCP_MAX_SANDBOXES_PER_CREDENTIAL: ' +
    "the credential's oldest idle one goes first, destroyed",
  async () => {
    const h = createHarness({ env: { MCP_MAX_SANDBOXES_PER_CREDENTIAL: '2', MCP_MAX_SESSIONS: '10' } });
    const { HARNESS_OTHER_TOKEN } = await import('../support/harness');
    const other = await h.connectModern({ token: HARNESS_OTHER_TOKEN });
    await call(other, 'write_file', { path: 'other.txt', content: 'o' }); // sbx-1, another credential's: untouched
    const client = await h.connectModern();
    for (const name of ['a', 'b', 'c']) {
      await call(client, 'write_file', { path: `${name}.txt`, content: name });
      h.clock.advance(1_000);
    }
    // sbx-2 (a) was this credential's oldest idle sandbox, and its handle never came back: it is destroyed.
    await settle(() => h.sdk.sandboxes[1]?.killed === true);
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false, true, false, false]);
  },
);

it('stops the running command in the sandbox when the client closes its stream', async () => {
  const h: Harness = createHarness();
  const held = holdCommands(h);
  const client = await h.connectModern();
  const abort = new AbortController();
  const running = client.callTool(
    { name: 'run_command', arguments: { command: 'hold-forever' } },
    { signal: abort.signal },
  );
  await settle(() => held.started('hold-forever'));
  abort.abort();
  await expect(running).rejects.toThrow();
  // The command's process group is signalled inside the sandbox (`kill -TERM -<pid>`), with no timer involved.
  await settle(() => (h.sdk.sandboxes[0]?.terminatedPids.length ?? 0) > 0);
  expect(h.sdk.sandboxes[0]?.terminatedPids).toEqual([1]);
});

it(
  `keeps a sandbox whose call runs longer than its lease until` + ` the call ends, then sweeps it like any idle one`,
  async () => {
    const h = createHarness({ env: { MCP_SESSION_IDLE_TTL_S: String(TTL_S) } });
    const held = holdCommands(h);
    const client = await h.connectModern();
    const running = call(client, 'run_command', { command: 'hold-long' }); // sbx-1
    await settle(() => held.started('hold-long'));
    h.clock.advance(TTL_S * 1000 + 1_000);
    // sbx-2, and a sweep that passes over the busy sbx-1
    await call(await h.connectModern(), 'write_file', { path: 'b.txt', content: 'b' });
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false, false]);
    held.release('hold-long');
    expect((await running).isError).not.toBe(true);
    h.clock.advance(TTL_S * 1000 + 1_000);
    // sbx-3, and a sweep that ends both idle ones
    await call(await h.connectModern(), 'write_file', { path: 'c.txt', content: 'c' });
    await settle(() => h.sdk.sandboxes[0]?.killed === true && h.sdk.sandboxes[1]?.killed === true);
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([true, true, false]);
  },
);

it("names each call's sandbox handle in its request log line by the handle's tag, never the handle", async () => {
  const h = createHarness();
  const client = await h.connectModern();
  const sandbox = handleOf(await call(client, 'write_file', { path: 'a.txt', content: 'a' }));
  await call(client, 'read_file', { path: 'a.txt', sandbox });
  const calls = h.logs().filter((line) => line.msg === 'request' && line.mcp_method === 'tools/call');
  expect(calls.map((line) => line.era)).toEqual(['modern', 'modern']);
  // Both calls are on the one sandbox: the same tag, which is no part of the handle.
  const [first, second] = calls.map((line) => String(line.session));
  expect(first).toMatch(/^[0-9a-f]{12}$/);
  expect(second).toBe(first);
  expect(sandbox).not.toContain(first);
});
