/**
 * Floods from inside a local sandbox through every channel it has to the server (the kernel's result frames,
 * live output as progress, stdin held back by a stopped supervisor, background output, a file that grows past
 * read_file's check), through the built bundle and the official client. Each must leave the server's peak RSS
 * (VmHWM, reset before the attack) under a bound while another credential's calls are served meanwhile. Slow by
 * nature (gigabytes go through), so here rather than in `npm test`.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { connectClient, type TestClient, type ToolResult } from '../support/clients';
import {
  peakRssMiB as serverPeakRssMiB,
  resetPeakRss as resetServerPeakRss,
  victimCallsWhile,
} from '../support/peak-rss';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const ATTACKER = 'flood-attacker-token-0123456789abcdef';
const VICTIM = 'flood-victim-token-0123456789abcdef';
/**
 * What the server may hold at its peak during any of these attacks: its own ~70 MiB, a call's budgets (8 MiB of
 * results, 64 KiB of output per stream, one progress message) and their copies on the way out, with room to spare.
 * Before the bounds, each attack took it past 1.5 GiB or crashed it.
 */
const PEAK_RSS_BOUND_MIB = 256;

let server: StartedServer;
let attacker: TestClient;
let victim: TestClient;

beforeEach(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: `${ATTACKER},${VICTIM}` } });
  attacker = await connectClient('v2', server.url, { token: ATTACKER });
  victim = await connectClient('v2', server.url, { token: VICTIM });
  // Both sandboxes exist before the attack: what follows is the attack's cost, not a start-up's.
  for (const client of [attacker, victim])
    expect((await client.callTool('run_command', { command: 'true' })).isError).toBeFalsy();
  resetPeakRss();
});
afterEach(async () => {
  await attacker?.close().catch(() => undefined);
  await victim?.close().catch(() => undefined);
  await stopAllServers();
});

function resetPeakRss(): void {
  resetServerPeakRss(server.child.pid ?? 0);
}

function peakRssMiB(): number {
  return serverPeakRssMiB(server.child.pid ?? 0);
}

it('a run_code call that writes 60 images of 60 MiB to the kernel channel gets a bounded answer', async () => {
  const code = [
    'import json, os',
    'line = ("\\n" + json.dumps({"t": "image", "mime": "image/png", "d": "A" * (60 << 20)}) + "\\n").encode()',
    'with os.fdopen(3, "wb", closefd=False) as channel:',
    '    for _ in range(60):',
    '        channel.write(line)',
    '"written"',
  ].join('\n');
  const attack = attacker.callTool('run_code', { code, timeout_ms: 240_000 }, { timeoutMs: 280_000 });
  expect(await victimCallsWhile(victim, attack)).toBeGreaterThan(0);
  const result = await attack;
  expect(result.structuredContent).toMatchObject({
    error: null,
    state_lost: false,
    results: [{ type: 'text', text: "'written'" }],
    results_omitted: { count: 60 },
  });
  expect(peakRssMiB()).toBeLessThan(PEAK_RSS_BOUND_MIB);
});

it('run_command printing 700 MiB with a progress token is answered, its progress bounded', async () => {
  const client = new Client({ name: 'flood-progress', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: `Bearer ${ATTACKER}` } },
    }),
  );
  let notifications = 0;
  let longest = 0;
  const attack = client.callTool(
    {
      name: 'run_command',
      arguments: { command: 'head -c 734003200 /dev/zero | tr "\\0" x; echo; echo done', timeout_ms: 240_000 },
    },
    {
      timeout: 280_000,
      onprogress: (p) => {
        notifications += 1;
        longest = Math.max(longest, (p.message ?? '').length);
      },
    },
  ) as Promise<ToolResult>;
  expect(await victimCallsWhile(victim, attack)).toBeGreaterThan(0);
  const result = await attack;
  expect(result.structuredContent).toMatchObject({ exit_code: 0, timed_out: false });
  expect(String(result.structuredContent?.stdout)).toMatch(/bytes omitted[\s\S]*done\n$/);
  expect(notifications).toBeGreaterThan(0);
  // One message at most (16,384 characters) and its omission marker.
  expect(longest).toBeLessThan(16_384 + 100);
  expect(peakRssMiB()).toBeLessThan(PEAK_RSS_BOUND_MIB);
  await client.close();
});

it(
  '400 write_stdin calls of 950 KB to a process whose supervisor the sandbox stopped are answered, ' + 'and not held',
  async () => {
    const started = await attacker.callTool('run_command', { command: 'cat > /dev/null', background: true });
    const id = String(started.structuredContent?.process_id);
    // The sandbox stops its own supervisor (it runs as the sandbox's user): nothing it was sent is read any more.
    // (Its parent is the supervisor; it stays, so that nothing is reaped: a stopped supervisor reaps nothing.)
    expect(
      (await attacker.callTool('run_command', { command: 'sleep 0.5; kill -STOP $PPID; sleep 600', background: true }))
        .isError,
    ).toBeFalsy();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const input = 'x'.repeat(950_000);
    const outcomes = { written: 0, pending: 0, refused: 0 };
    const attack = (async () => {
      for (let i = 0; i < 400; i += 1) {
        const result = await attacker.callTool('manage_process', { action: 'write_stdin', process_id: id, input });
        if (result.isError) outcomes.refused += 1;
        else if (result.structuredContent?.pending_bytes === 0) outcomes.written += 1;
        else outcomes.pending += 1;
      }
    })();
    expect(await victimCallsWhile(victim, attack)).toBeGreaterThan(0);
    await attack;
    // At most one input waits for a process that reads nothing: the first is pending, every later one refused.
    expect(outcomes).toEqual({ written: 0, pending: 1, refused: 399 });
    expect(peakRssMiB()).toBeLessThan(PEAK_RSS_BOUND_MIB);
  },
);

it('two background processes writing /dev/zero for 12 s make the server hold no more than their windows', async () => {
  for (let i = 0; i < 2; i += 1) {
    expect(
      (await attacker.callTool('run_command', { command: 'timeout 12 cat /dev/zero', background: true })).isError,
    ).toBeFalsy();
  }
  const attack = new Promise((resolve) => setTimeout(resolve, 12_000));
  expect(await victimCallsWhile(victim, attack)).toBeGreaterThan(0);
  const listed = await attacker.callTool('manage_process', { action: 'list' });
  const processes = (listed.structuredContent?.processes ?? []) as Array<{ output_bytes: number }>;
  // The logs took what the disk could (their tail is kept): the floods were slowed, not dropped unseen.
  expect(processes.every((p) => p.output_bytes > 0)).toBe(true);
  expect(peakRssMiB()).toBeLessThan(PEAK_RSS_BOUND_MIB);
});

it(
  'read_file of a file the sandbox grows to a sparse 1.9 GiB right after the size check reads no more than its ' +
    'limit',
  async () => {
    // The sandbox watches the file (inotify): when the server opens it, it waits a random few hundred microseconds
    // (to land between the server's size check and its read) and grows it to a sparse 1.9 GiB; when the server
    // closes it, it shrinks it back to 1,000 bytes.
    const watcher = [
      'import ctypes, os, random, struct, time',
      'libc = ctypes.CDLL(None, use_errno=True)',
      "open('f', 'w').write('x' * 1000)",
      'fd = libc.inotify_init()',
      "libc.inotify_add_watch(fd, b'f', 0x20 | 0x10)",
      "print('watching', flush=True)",
      'while True:',
      '    data, at = os.read(fd, 65536), 0',
      '    while at < len(data):',
      "        _, mask, _, size = struct.unpack_from('iIII', data, at)",
      '        at += 16 + size',
      '        if mask & 0x20:',
      '            until = time.perf_counter() + random.uniform(0, 0.0008)',
      '            while time.perf_counter() < until: pass',
      "            os.truncate('f', 2040109465)",
      '        elif mask & 0x10:',
      "            os.truncate('f', 1000)",
    ].join('\n');
    expect((await attacker.callTool('write_file', { path: 'watch.py', content: watcher })).isError).toBeFalsy();
    const started = await attacker.callTool('run_command', { command: 'python3 watch.py', background: true });
    expect(started.isError).toBeFalsy();
    const process_id = String(started.structuredContent?.process_id);
    for (let i = 0; i < 100; i += 1) {
      const logs = await attacker.callTool('manage_process', { action: 'logs', process_id });
      if (JSON.stringify(logs.structuredContent).includes('watching')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    resetPeakRss();
    const seen = { read: 0, refusedBySize: 0, refusedWhileReading: 0, other: [] as string[] };
    const attack = (async () => {
      for (let i = 0; i < 300; i += 1) {
        const result = await attacker.callTool('read_file', { path: 'f', encoding: 'base64' });
        const text = result.content.map((c) => c.text ?? '').join('');
        if (!result.isError) seen.read += 1;
        else if (/is 2040109465 bytes, over the/.test(text)) seen.refusedBySize += 1;
        // Grown while read: over the read limit, or (shorter again by then) over the limit for binary content.
        else if (/is over 10485760 bytes, over the|bytes of binary data, over the/.test(text))
          seen.refusedWhileReading += 1;
        else if (/No such file|not a regular file/.test(text)) seen.read += 0;
        else seen.other.push(text);
      }
    })();
    expect(await victimCallsWhile(victim, attack)).toBeGreaterThan(0);
    await attack;
    expect(seen.other).toEqual([]);
    expect(seen.read + seen.refusedBySize + seen.refusedWhileReading).toBeGreaterThan(0);
    expect(peakRssMiB()).toBeLessThan(PEAK_RSS_BOUND_MIB);
  },
);
