/**
 * Long work through the official client over real HTTP: live output as progress, cancellation that leaves
 * nothing behind, background processes with logs and previews, reset. (Keep-alive cadence:
 * test/core/keep-alive.test.ts; keep-alives over a real 40 s silence: test/reliability/real-time.test.ts.)
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { connectClient, textOf } from '../support/clients';
import { teeToolCallBodies } from '../support/http';
import { markedSleep, pollUntil, processesWithCmdline, SETTLE_MS, waitUntilGone } from '../support/processes';
import { findFreePort, startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'long-running-token-0123456789abcdef';

let server: StartedServer;
beforeAll(async () => {
  // Network on, so that a background server's port can be previewed from here.
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_NETWORK: 'on' } });
});
afterAll(stopAllServers);

it('streams output as progress notifications while the command runs, in order, and none after the result', async () => {
  const tee = teeToolCallBodies();
  const client = new Client({ name: 'long-running', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    fetch: tee.fetch,
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await client.connect(transport);
  // Each step waits until the test has seen the previous one as a notification (it then writes go-<i>):
  // four steps are four notifications, however busy the machine is.
  const command = 'for i in 1 2 3 4; do echo "step $i"; while [ ! -e "go-$i" ]; do sleep 0.05; done; done';
  const messages: string[] = [];
  const numbers: number[] = [];
  const goWrites: Array<Promise<unknown>> = [];
  const result = await client.callTool(
    { name: 'run_command', arguments: { command } },
    {
      onprogress: (p) => {
        messages.push(p.message ?? '');
        numbers.push(p.progress);
        const step = /step (\d)/.exec(p.message ?? '')?.[1];
        if (step !== undefined)
          goWrites.push(client.callTool({ name: 'write_file', arguments: { path: `go-${step}`, content: '' } }));
      },
    },
  );
  await Promise.all(goWrites);
  expect(messages).toEqual(['step 1\n', 'step 2\n', 'step 3\n', 'step 4\n']);
  expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
  expect(new Set(numbers).size).toBe(numbers.length);
  expect(result.structuredContent).toMatchObject({ exit_code: 0 });
  // The call's stream, read to its end: four notifications, then the result, and nothing after it.
  const body = await tee.bodies[0]; // the run_command (the go-<i> writes came after it)
  const events = (body ?? '')
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as { method?: string; result?: unknown });
  expect(
    events.map((e) =>
      e.method === 'notifications/progress' ? 'progress' : e.result !== undefined ? 'result' : 'other',
    ),
  ).toEqual(['progress', 'progress', 'progress', 'progress', 'result']);
  await transport.terminateSession();
  await client.close();
});

it('stops a cancelled run_code, with what it started, and the session keeps working', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('run_code', { code: 'kept = 7' });
  const abort = new AbortController();
  const sleep = markedSleep(1010);
  const call = client.callTool(
    'run_code',
    { code: `import subprocess\nsubprocess.run(${JSON.stringify(sleep.split(' '))})` },
    { signal: abort.signal },
  );
  await pollUntil(
    () => processesWithCmdline(sleep).length,
    (n) => n > 0,
    SETTLE_MS,
  );
  abort.abort();
  await expect(call).rejects.toThrow();
  // Gone long before the 1,010 s it would take: the cancellation ended it (how soon:
  // test/reliability/real-time.test.ts).
  expect(await waitUntilGone(() => processesWithCmdline(sleep), SETTLE_MS)).toEqual([]);
  // Interrupted, not restarted: the interpreter and its state are still there.
  expect((await client.callTool('run_code', { code: 'kept * 6' })).structuredContent).toMatchObject({
    results: [{ text: '42' }],
    state_lost: false,
  });
  await client.terminate();
});

it(
  'serves a background http.server at the preview URL, ' + 'shows its logs, and kill ends it and its children',
  async () => {
    const client = await connectClient('v2', server.url, { token: TOKEN });
    await client.callTool('write_file', { path: 'site/index.html', content: '<h1>preview works</h1>' });
    const port = await findFreePort();
    const started = await client.callTool('run_command', {
      command: `cd site && (${markedSleep(1011)} &) ; python3 -m http.server ${port} --bind 127.0.0.1`,
      background: true,
    });
    const id = started.structuredContent?.process_id as string;
    expect(id).toMatch(/^p\d+$/);

    const preview = await pollUntil(
      async () =>
        (await client.callTool('get_preview_url', { port })).structuredContent as {
          url: string;
          listening: boolean;
          note: string;
        },
      (p) => p.listening,
      SETTLE_MS,
      200,
    );
    expect(preview.url).toBe(`http://127.0.0.1:${port}`);
    // The host's own port: no forwarder, so no token, and the note says so.
    expect(preview.note).toMatch(/shares the host's network .* no preview front can gate it: .* without a token/);
    expect(await (await fetch(`${preview.url}/index.html`)).text()).toBe('<h1>preview works</h1>');

    const logs = await pollUntil(
      async () =>
        (await client.callTool('manage_process', { action: 'logs', process_id: id })).structuredContent as {
          log: { text: string; total_bytes: number };
        },
      (l) => l.log.text.includes('GET /index.html'),
      SETTLE_MS,
    );
    expect(logs.log.total_bytes).toBeGreaterThan(0);
    const listed = await client.callTool('manage_process', { action: 'list' });
    expect(listed.structuredContent?.processes).toEqual([
      expect.objectContaining({ process_id: id, state: 'running' }),
    ]);

    const killed = await client.callTool('manage_process', { action: 'kill', process_id: id });
    expect(killed.structuredContent?.process).toMatchObject({ state: 'exited' });
    expect(await waitUntilGone(() => processesWithCmdline(`http.server ${port}`), SETTLE_MS)).toEqual([]);
    expect(await waitUntilGone(() => processesWithCmdline(markedSleep(1011)), SETTLE_MS)).toEqual([]);
    expect((await client.callTool('get_preview_url', { port })).structuredContent).toMatchObject({ listening: false });
    await client.terminate();
  },
);

it('leaves no background process running after DELETE', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  const sleeps = [markedSleep(1012), markedSleep(1013), markedSleep(1014)];
  const running = () => sleeps.flatMap((sleep) => processesWithCmdline(sleep));
  await client.callTool('run_command', { command: sleeps[0], background: true });
  await client.callTool('run_command', { command: `${sleeps[1]} & ${sleeps[2]} & wait`, background: true });
  await pollUntil(running, (list) => list.length >= 3, SETTLE_MS);
  await client.terminate();
  expect(await waitUntilGone(running, SETTLE_MS)).toEqual([]);
});

it('writes to a background process’s stdin and pages through its log', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  const started = await client.callTool('run_command', {
    command: 'while read line; do echo "got $line"; done',
    background: true,
  });
  const id = started.structuredContent?.process_id as string;
  for (const word of ['alpha', 'beta', 'gamma'])
    await client.callTool('manage_process', { action: 'write_stdin', process_id: id, input: `${word}\n` });
  await pollUntil(
    async () =>
      (
        (await client.callTool('manage_process', { action: 'logs', process_id: id })).structuredContent as {
          log: { total_bytes: number };
        }
      ).log.total_bytes,
    (n) => n >= 'got alpha\ngot beta\ngot gamma\n'.length,
    SETTLE_MS,
  );
  const first = (
    await client.callTool('manage_process', { action: 'logs', process_id: id, offset: 0, limit_bytes: 10 })
  ).structuredContent?.log as { text: string; next_offset: number };
  expect(first).toMatchObject({ text: 'got alpha\n', next_offset: 10 });
  const second = (
    await client.callTool('manage_process', {
      action: 'logs',
      process_id: id,
      offset: first.next_offset,
      limit_bytes: 100,
    })
  ).structuredContent?.log;
  expect(second).toMatchObject({ text: 'got beta\ngot gamma\n' });
  const unknown = await client.callTool('manage_process', { action: 'kill', process_id: 'p99' });
  expect(unknown.isError).toBe(true);
  expect(textOf(unknown)).toContain('No background process "p99"');
  await client.terminate();
});

it('resets to an empty workspace and a working sandbox, and says what was lost', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('write_file', { path: 'old.txt', content: 'old' });
  await client.callTool('run_code', { code: 'old_var = 1' });
  await client.callTool('run_command', { command: markedSleep(1015), background: true });
  const before = (await client.callTool('sandbox_status')).structuredContent?.sandbox_id;
  const reset = await client.callTool('reset_sandbox');
  expect(reset.structuredContent).toMatchObject({
    previous_sandbox_id: before,
    lost: expect.arrayContaining(['all files']),
  });
  expect(reset.structuredContent?.sandbox_id).not.toBe(before);
  expect((await client.callTool('sandbox_status')).structuredContent?.sandbox_id).toBe(
    reset.structuredContent?.sandbox_id,
  );
  expect(textOf(reset)).toMatch(/all files.*are gone/);
  expect((await client.callTool('list_files')).structuredContent).toMatchObject({ entries: [] });
  expect((await client.callTool('run_code', { code: 'old_var' })).structuredContent).toMatchObject({
    error: { name: 'NameError' },
  });
  expect((await client.callTool('run_command', { command: 'echo fresh' })).structuredContent).toMatchObject({
    stdout: 'fresh\n',
  });
  expect(await waitUntilGone(() => processesWithCmdline(markedSleep(1015)), SETTLE_MS)).toEqual([]);
  await client.terminate();
});

it('keeps background logs in the workspace directory, out of the sandbox user’s reach', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('run_command', { command: 'echo logged', background: true });
  const logFiles = (): string[] =>
    readdirSync(server.sandboxRoot)
      .filter((name) => name.startsWith('mcp-sandbox-'))
      .map((dir) => join(server.sandboxRoot, dir, 'processes', 'p1.log.0'))
      .filter((file) => existsSync(file));
  // Other tests' sessions may have logs here too: this session's is the one with its output.
  const mine = (): string[] => logFiles().filter((file) => readFileSync(file, 'utf8') === 'logged\n');
  const [log] = await pollUntil(mine, (files) => files.length > 0, SETTLE_MS);
  expect(log).toBeDefined();
  // The directory belongs to the server, not to the sandbox's user (which cannot rewrite the log).
  const dirStat = statSync(join(log ?? '', '..'));
  expect({ uid: dirStat.uid, mode: dirStat.mode & 0o777 }).toEqual({ uid: process.getuid?.() ?? 0, mode: 0o700 });
  await client.terminate();
});
