/**
 * Long work through the official client over real HTTP: live output as progress, cancellation that leaves
 * nothing behind, background processes with logs and previews, keep-alives on a silent stream, reset.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { connectClient, textOf } from '../support/clients';
import { initializeBody, postMcp } from '../support/http';
import { pollUntil, processesWithCmdline, waitUntilGone } from '../support/processes';
import { findFreePort, startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'long-running-token-0123456789abcdef';

let server: StartedServer;
beforeAll(async () => {
  // Network on, so that a background server's port can be previewed from here.
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_NETWORK: 'on' } });
});
afterAll(stopAllServers);

async function connectV2(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'long-running', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
  await client.connect(transport);
  return { client, transport };
}

it('streams output as progress notifications while the command runs, in order, and none after the result', async () => {
  const { client, transport } = await connectV2();
  const events: Array<{ kind: 'progress' | 'result'; progress?: number; message?: string }> = [];
  const result = await client.callTool(
    { name: 'run_command', arguments: { command: 'for i in 1 2 3 4; do echo "step $i"; sleep 0.4; done' } },
    { onprogress: (p) => events.push({ kind: 'progress', progress: p.progress, message: p.message }) },
  );
  events.push({ kind: 'result' });
  await new Promise((resolve) => setTimeout(resolve, 300)); // would catch a straggler notification
  const progress = events.filter((e) => e.kind === 'progress');
  expect(events[events.length - 1]?.kind).toBe('result');
  expect(events.findIndex((e) => e.kind === 'result')).toBe(events.length - 1);
  // The first arrived while the command still had more than a second to go.
  expect(progress.length).toBeGreaterThanOrEqual(3);
  expect(progress[0]?.message).toContain('step 1');
  const numbers = progress.map((e) => e.progress ?? 0);
  expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
  expect(new Set(numbers).size).toBe(numbers.length);
  expect(progress.map((e) => e.message).join('')).toBe('step 1\nstep 2\nstep 3\nstep 4\n');
  expect(result.structuredContent).toMatchObject({ exit_code: 0 });
  await transport.terminateSession();
  await client.close();
});

it('stops a cancelled run_code within a second, with what it started, and the session keeps working', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('run_code', { code: 'kept = 7' });
  const abort = new AbortController();
  const call = client.callTool('run_code', { code: 'import subprocess\nsubprocess.run(["sleep", "1010"])' }, { signal: abort.signal });
  await pollUntil(() => processesWithCmdline('sleep 1010').length, (n) => n > 0, 10_000);
  const cancelledAt = Date.now();
  abort.abort();
  await expect(call).rejects.toThrow();
  expect(await waitUntilGone(() => processesWithCmdline('sleep 1010'), 3_000)).toEqual([]);
  expect(Date.now() - cancelledAt).toBeLessThan(3_000);
  // Interrupted, not restarted: the interpreter and its state are still there.
  expect((await client.callTool('run_code', { code: 'kept * 6' })).structuredContent).toMatchObject({ results: [{ text: '42' }], state_lost: false });
  await client.terminate();
});

it('serves a background http.server at the preview URL, shows its logs, and kill ends it and its children', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('write_file', { path: 'site/index.html', content: '<h1>preview works</h1>' });
  const port = await findFreePort();
  const started = await client.callTool('run_command', { command: `cd site && (sleep 1011 &) ; python3 -m http.server ${port} --bind 127.0.0.1`, background: true });
  const id = started.structuredContent?.process_id as string;
  expect(id).toMatch(/^p\d+$/);

  const preview = await pollUntil(
    async () => (await client.callTool('get_preview_url', { port })).structuredContent as { url: string; listening: boolean },
    (p) => p.listening,
    10_000,
    200,
  );
  expect(preview.url).toBe(`http://127.0.0.1:${port}`);
  expect(await (await fetch(`${preview.url}/index.html`)).text()).toBe('<h1>preview works</h1>');

  const logs = await pollUntil(
    async () => (await client.callTool('manage_process', { action: 'logs', process_id: id })).structuredContent as { log: { text: string; total_bytes: number } },
    (l) => l.log.text.includes('GET /index.html'),
    5_000,
  );
  expect(logs.log.total_bytes).toBeGreaterThan(0);
  const listed = await client.callTool('manage_process', { action: 'list' });
  expect(listed.structuredContent?.processes).toEqual([expect.objectContaining({ process_id: id, state: 'running' })]);

  const killed = await client.callTool('manage_process', { action: 'kill', process_id: id });
  expect(killed.structuredContent?.process).toMatchObject({ state: 'exited' });
  expect(await waitUntilGone(() => processesWithCmdline(`http.server ${port}`), 3_000)).toEqual([]);
  expect(await waitUntilGone(() => processesWithCmdline('sleep 1011'), 3_000)).toEqual([]);
  expect((await client.callTool('get_preview_url', { port })).structuredContent).toMatchObject({ listening: false });
  await client.terminate();
});

it('leaves no background process running after DELETE', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('run_command', { command: 'sleep 1012', background: true });
  await client.callTool('run_command', { command: 'sleep 1013 & sleep 1014 & wait', background: true });
  await pollUntil(() => processesWithCmdline('sleep 101').length, (n) => n >= 3, 5_000);
  await client.terminate();
  expect(await waitUntilGone(() => processesWithCmdline('sleep 101'), 3_000)).toEqual([]);
});

it('writes to a background process’s stdin and pages through its log', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  const started = await client.callTool('run_command', { command: 'while read line; do echo "got $line"; done', background: true });
  const id = started.structuredContent?.process_id as string;
  for (const word of ['alpha', 'beta', 'gamma']) await client.callTool('manage_process', { action: 'write_stdin', process_id: id, input: `${word}\n` });
  await pollUntil(
    async () => ((await client.callTool('manage_process', { action: 'logs', process_id: id })).structuredContent as { log: { total_bytes: number } }).log.total_bytes,
    (n) => n >= 'got alpha\ngot beta\ngot gamma\n'.length,
    5_000,
  );
  const first = (await client.callTool('manage_process', { action: 'logs', process_id: id, offset: 0, limit_bytes: 10 })).structuredContent?.log as { text: string; next_offset: number };
  expect(first).toMatchObject({ text: 'got alpha\n', next_offset: 10 });
  const second = (await client.callTool('manage_process', { action: 'logs', process_id: id, offset: first.next_offset, limit_bytes: 100 })).structuredContent?.log;
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
  await client.callTool('run_command', { command: 'sleep 1015', background: true });
  const before = (await client.callTool('sandbox_status')).structuredContent?.sandbox_id;
  const reset = await client.callTool('reset_sandbox');
  expect(reset.structuredContent).toMatchObject({ previous_sandbox_id: before, lost: expect.arrayContaining(['all files']) });
  expect(textOf(reset)).toMatch(/all files.*are gone/);
  expect((await client.callTool('list_files')).structuredContent).toMatchObject({ entries: [] });
  expect((await client.callTool('run_code', { code: 'old_var' })).structuredContent).toMatchObject({ error: { name: 'NameError' } });
  expect((await client.callTool('run_command', { command: 'echo fresh' })).structuredContent).toMatchObject({ stdout: 'fresh\n' });
  expect(await waitUntilGone(() => processesWithCmdline('sleep 1015'), 3_000)).toEqual([]);
  await client.terminate();
});

it('answers a command that prints nothing for 40 s, with keep-alives on the stream meanwhile', async () => {
  const headers = { authorization: `Bearer ${TOKEN}` };
  const opened = await postMcp(server.url, initializeBody(), headers);
  const session = { ...headers, 'mcp-session-id': opened.headers.get('mcp-session-id') ?? '', 'mcp-protocol-version': '2025-11-25' };
  await postMcp(server.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { ...session, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'sleep 40; echo done' } } }),
  });
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const body = await res.text();
  const keepAlives = body.split('\n').filter((line) => line.startsWith(':')).length;
  expect(keepAlives).toBeGreaterThanOrEqual(3);
  expect(body).toContain('"stdout":"done\\n"');
}, 70_000);

it('keeps background logs in the workspace directory, out of the sandbox user’s reach', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('run_command', { command: 'echo logged', background: true });
  const logFiles = (): string[] =>
    readdirSync(server.sandboxRoot)
      .filter((name) => name.startsWith('mcp-sandbox-'))
      .map((dir) => join(server.sandboxRoot, dir, 'processes', 'p1.log'))
      .filter((file) => existsSync(file));
  // Other tests' sessions may have logs here too: this session's is the one with its output.
  const mine = (): string[] => logFiles().filter((file) => readFileSync(file, 'utf8') === 'logged\n');
  const [log] = await pollUntil(mine, (files) => files.length > 0, 5_000);
  expect(log).toBeDefined();
  // The directory belongs to the server, not to the sandbox's user (which cannot rewrite the log).
  const dirStat = statSync(join(log ?? '', '..'));
  expect({ uid: dirStat.uid, mode: dirStat.mode & 0o777 }).toEqual({ uid: process.getuid?.() ?? 0, mode: 0o700 });
  await client.terminate();
});
