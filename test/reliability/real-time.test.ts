/**
 * The checks that must watch a real clock, through the bundle on the local backend: a timeout or a
 * cancellation really ends the process soon, keep-alives really flow during a 40 s silence on both lanes, and
 * a fork bomb is held while other sessions are served. The schedules themselves (keep-alive cadence, backoff,
 * expiry) are asserted on fake clocks in test/core and test/unit; the bounds here are generous on purpose: they
 * catch a hang or a missing kill, not a slow machine.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { connectClient, type TestClient } from '../support/clients';
import { teeToolCallBodies } from '../support/http';
import { markedSleep, pollUntil, processesWithCmdline, RUN_MARK, SETTLE_MS, waitUntilGone } from '../support/processes';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'real-time-token-0123456789abcdef';
/** How soon "at once" must happen here: far above the second docs/protocol.md promises, far below a hang. */
const SOON_MS = 15_000;

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
});
afterAll(stopAllServers);

/** Resolves with how long `run` took, in ms. */
async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await run();
  return { value, ms: performance.now() - started };
}

it('ends a command at its timeout soon after it, with what it started', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  const { value: result, ms } = await timed(() =>
    client.callTool('run_command', { command: `${markedSleep(1100)} & ${markedSleep(1101)}`, timeout_ms: 1000 }),
  );
  expect(result.structuredContent).toMatchObject({ timed_out: true });
  expect(ms).toBeLessThan(1000 + SOON_MS);
  expect(
    await waitUntilGone(
      () => [...processesWithCmdline(markedSleep(1100)), ...processesWithCmdline(markedSleep(1101))],
      SOON_MS,
    ),
  ).toEqual([]);
  await client.terminate();
});

it('interrupts run_code at its timeout soon after it', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  const { value: result, ms } = await timed(() =>
    client.callTool('run_code', { code: 'import time; time.sleep(600)', timeout_ms: 1000 }),
  );
  expect(result.structuredContent).toMatchObject({ timed_out: true, state_lost: false });
  expect(ms).toBeLessThan(1000 + SOON_MS);
  await client.terminate();
});

it.each(['run_command', 'run_code'] as const)('stops a cancelled %s soon after the cancellation', async (tool) => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  const sleep = markedSleep(tool === 'run_command' ? 1102 : 1103);
  const args =
    tool === 'run_command'
      ? { command: sleep }
      : { code: `import subprocess\nsubprocess.run(${JSON.stringify(sleep.split(' '))})` };
  const abort = new AbortController();
  const call = client.callTool(tool, args, { signal: abort.signal }).catch(() => 'rejected');
  await pollUntil(
    () => processesWithCmdline(sleep).length,
    (n) => n > 0,
    SETTLE_MS,
  );
  const { value: left, ms } = await timed(async () => {
    abort.abort();
    return waitUntilGone(() => processesWithCmdline(sleep), SOON_MS);
  });
  expect(left).toEqual([]);
  expect(ms).toBeLessThan(SOON_MS);
  expect(await call).toBe('rejected');
  await client.terminate();
});

it('sends keep-alives on both lanes while a command prints nothing for 40 s, then its result', async () => {
  const legacyTee = teeToolCallBodies();
  const modernTee = teeToolCallBodies();
  const legacy = new Client({ name: 'real-time-legacy', version: '1.0.0' });
  await legacy.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: legacyTee.fetch,
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  const modern = new Client(
    { name: 'real-time-modern', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await modern.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: modernTee.fetch,
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  const command = `${markedSleep(40)}; echo done`;
  const results = await Promise.all(
    [legacy, modern].map((client) =>
      client.callTool({ name: 'run_command', arguments: { command } }, { timeout: 120_000 }),
    ),
  );
  for (const result of results) expect(result.structuredContent).toMatchObject({ exit_code: 0, stdout: 'done\n' });
  for (const tee of [legacyTee, modernTee]) {
    const body = (await tee.bodies[0]) ?? '';
    // A comment every 10 s: 3 or 4 in 40 s (at least 3 even if a timer fires late on a busy machine).
    expect(body.split('\n').filter((line) => line.startsWith(':')).length).toBeGreaterThanOrEqual(3);
  }
  await Promise.all([legacy.close(), modern.close()]);
});

it(
  'holds a fork bomb: the call returns at its timeout, other sessions are answered during and after it, and ' +
    'nothing of it remains',
  async () => {
    const bomber = await connectClient('v2', server.url, { token: TOKEN });
    const other: TestClient = await connectClient('v2', server.url, { token: TOKEN });
    // The function's name marks the bomb's processes as this test run's.
    const name = `bomb${RUN_MARK}`;
    const bombs = () => processesWithCmdline(`${name}|${name}&`);
    // The classic bomb: its first shell returns at once, leaving the bomb to its descendants.
    const classic = await bomber.callTool('run_command', {
      command: `${name}(){ ${name}|${name}& };${name}`,
      timeout_ms: 5000,
    });
    expect(classic.structuredContent).toMatchObject({ timed_out: false });
    expect(await waitUntilGone(bombs, SETTLE_MS)).toEqual([]);
    // A bomb whose first shell stays: it runs until the timeout (long enough for another session to be served
    // meanwhile even on a loaded machine).
    const bombTimeoutMs = 15_000;
    let finished = false;
    const held = timed(() =>
      bomber.callTool('run_command', {
        command: `${name}(){ ${name}|${name}& };${name}; sleep 60`,
        timeout_ms: bombTimeoutMs,
      }),
    ).finally(() => {
      finished = true;
    });
    let most = 0;
    const counted = await pollUntil(
      () => bombs().length,
      (n) => {
        most = Math.max(most, n);
        return most > 50 || finished;
      },
      SETTLE_MS,
    );
    expect(counted).toBeGreaterThan(50);
    // Another session is served while the bomb still runs (its answer comes before the bomb's).
    const answer = await other.callTool('run_command', { command: 'echo alive' });
    expect(answer.structuredContent).toMatchObject({ exit_code: 0, stdout: 'alive\n' });
    expect(finished).toBe(false);
    while (!finished) {
      most = Math.max(most, bombs().length);
      await new Promise((r) => setTimeout(r, 100));
    }
    const { value: result, ms } = await held;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ timed_out: true });
    expect(ms).toBeLessThan(bombTimeoutMs + SOON_MS);
    expect(most).toBeLessThanOrEqual(512); // RLIMIT_NPROC of the sandbox user
    expect(await waitUntilGone(bombs, SETTLE_MS)).toEqual([]);
    const afterwards = await other.callTool('run_command', { command: 'echo still-alive' });
    expect(afterwards.structuredContent).toMatchObject({ exit_code: 0, stdout: 'still-alive\n' });
    await Promise.all([bomber.terminate(), other.terminate()]);
  },
);
