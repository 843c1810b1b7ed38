/**
 * Sessions survive instance loss on the local backend, through the bundle: a restart with
 * the same secret, two instances without affinity, eviction at the cap, DELETE from another instance, SIGTERM,
 * background logs across a restart. (The lane's rules for ids, recovery and expiry, on a fake clock:
 * test/core/session-table.test.ts and test/core/recovery.test.ts.)
 */
import { rmSync } from 'node:fs';

import { connectClient, textOf } from '../support/clients';
import { postMcp } from '../support/http';
import { markedSleep, pollUntil, processesWithCmdline, SETTLE_MS, waitUntilGone } from '../support/processes';
import { startRoundRobinProxy } from '../support/round-robin-proxy';
import { findFreePort, makeSandboxRoot, startServer, stopAllServers, workspacesIn } from '../support/server';
import { needs } from '../support/needs';

const TOKEN = 'recovery-token-0123456789abcdef';
const OTHER_TOKEN = 'recovery-other-token-fedcba9876543210';
const SECRET = 'recovery-secret-0123456789abcdef0123456789';
const ENV = { MCP_AUTH_TOKENS: `${TOKEN},${OTHER_TOKEN}`, MCP_SESSION_SECRET: SECRET };

let roots: string[] = [];
const sharedRoot = (): string => {
  const root = makeSandboxRoot();
  roots.push(root);
  return root;
};
afterEach(async () => {
  await stopAllServers();
  for (const root of roots) rmSync(root, { recursive: true, force: true });
  roots = [];
});

it.each(['v2', 'v1'] as const)(
  'goes on with the same %s client session after the server is SIGKILLed and restarted with the same secret',
  async (kind) => {
    const root = sharedRoot();
    const port = await findFreePort();
    const first = await startServer({ env: ENV, sandboxRoot: root, port });
    const client = await connectClient(kind, first.url, { token: TOKEN });
    await client.callTool('write_file', { path: 'notes/plan.md', content: 'step 1\n' });
    await client.callTool('run_code', { code: 'counter = 41' });

    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    await startServer({ env: ENV, sandboxRoot: root, port });

    const read = await client.callTool('read_file', { path: 'notes/plan.md' });
    expect(read.structuredContent).toMatchObject({ content: 'step 1\n' });
    const code = await client.callTool('run_code', { code: 'counter + 1' });
    // The interpreter did not survive the process; the result says so plainly.
    expect(code.structuredContent).toMatchObject({ state_lost: true });
    expect(textOf(code)).toMatch(/variables and imports from earlier calls are gone/);
    expect((await client.callTool('run_code', { code: 'counter = 1\ncounter + 1' })).structuredContent).toMatchObject({
      results: [{ text: '2' }],
      state_lost: false,
    });
    await client.terminate();
  },
);

it('serves a whole session that alternates between two instances behind a proxy without affinity', async () => {
  const root = sharedRoot();
  const a = await startServer({ env: ENV, sandboxRoot: root });
  const b = await startServer({ env: ENV, sandboxRoot: root });
  const proxy = await startRoundRobinProxy([a.port, b.port]);
  try {
    const client = await connectClient('v2', proxy.url, { token: TOKEN });
    await client.callTool('write_file', { path: 'app.py', content: 'print("v1")\n' });
    await client.callTool('edit_file', { path: 'app.py', old_string: 'v1', new_string: 'v2' });
    expect((await client.callTool('run_command', { command: 'python3 app.py' })).structuredContent).toMatchObject({
      exit_code: 0,
      stdout: 'v2\n',
    });
    expect((await client.callTool('read_file', { path: 'app.py' })).structuredContent).toMatchObject({
      content: 'print("v2")\n',
    });
    const listed = await client.callTool('list_files');
    expect((listed.structuredContent!.entries as Array<{ path: string }>).map((e) => e.path)).toEqual(['app.py']);
    expect(new Set(proxy.served)).toEqual(new Set([0, 1]));
    await client.terminate();
  } finally {
    await proxy.close();
  }
});

it('brings back, with its files, a session evicted from memory at the cap', async () => {
  const server = await startServer({ env: { ...ENV, MCP_MAX_SESSIONS: '1' } });
  const evicted = await connectClient('v2', server.url, { token: TOKEN });
  await evicted.callTool('write_file', { path: 'kept.txt', content: 'still here' });
  const newcomer = await connectClient('v2', server.url, { token: TOKEN });
  await newcomer.callTool('write_file', { path: 'mine.txt', content: 'other' });
  expect(server.logs().some((line) => line.msg === 'session evicted')).toBe(true);
  expect((await evicted.callTool('read_file', { path: 'kept.txt' })).structuredContent).toMatchObject({
    content: 'still here',
  });
  expect((await newcomer.callTool('read_file', { path: 'mine.txt' })).structuredContent).toMatchObject({
    content: 'other',
  });
  await Promise.all([evicted.terminate(), newcomer.terminate()]);
});

it(
  'lets any instance end a session: DELETE on an instance that never held it kills the sandbox, and that instance ' +
    'answers 404 afterwards',
  async () => {
    const root = sharedRoot();
    const a = await startServer({ env: ENV, sandboxRoot: root });
    const b = await startServer({ env: ENV, sandboxRoot: root });
    const client = await connectClient('v2', a.url, { token: TOKEN });
    await client.callTool('write_file', { path: 'x.txt', content: 'x' });
    const id = client.sessionId ?? '';
    expect(workspacesIn(root)).toHaveLength(1);
    const headers = { authorization: `Bearer ${TOKEN}`, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
    expect((await fetch(b.url, { method: 'DELETE', headers })).status).toBe(200);
    expect(workspacesIn(root)).toHaveLength(0);
    expect((await postMcp(b.url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, headers)).status).toBe(404);
    await client.close();
  },
);

it(
  'revokes a DELETEd id for good: 404 on every instance sharing the ' +
    'root and after a restart, never a fresh sandbox',
  async () => {
    const root = sharedRoot();
    const port = await findFreePort();
    const a = await startServer({ env: ENV, sandboxRoot: root, port });
    const b = await startServer({ env: ENV, sandboxRoot: root });
    const client = await connectClient('v2', a.url, { token: TOKEN });
    await client.callTool('write_file', { path: 'x.txt', content: 'x' });
    const headers = {
      authorization: `Bearer ${TOKEN}`,
      'mcp-session-id': client.sessionId ?? '',
      'mcp-protocol-version': '2025-11-25',
    };
    expect((await fetch(a.url, { method: 'DELETE', headers })).status).toBe(200);
    const list = { jsonrpc: '2.0', id: 3, method: 'tools/list' };
    // Another instance, which never saw the DELETE, refuses it.
    expect((await postMcp(b.url, list, headers)).status).toBe(404);
    // So does the instance that served it, once restarted (its memory of ended ids is gone).
    a.child.kill('SIGKILL');
    await new Promise((resolve) => a.child.once('exit', resolve));
    const restarted = await startServer({ env: ENV, sandboxRoot: root, port });
    const call = { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'list_files', arguments: {} } };
    expect((await postMcp(restarted.url, call, headers)).status).toBe(404);
    expect((await fetch(restarted.url, { method: 'DELETE', headers })).status).toBe(404);
    expect(workspacesIn(root)).toEqual([]);
    await client.close();
  },
);

it(
  'keeps sandboxes on SIGTERM when sessions can come back (secret configured), ' + 'and cleans up when they cannot',
  async () => {
    const { readdirSync } = await import('node:fs');
    for (const [env, kept] of [
      [ENV, 1],
      [{ MCP_AUTH_TOKENS: TOKEN }, 0],
    ] as const) {
      const root = sharedRoot();
      const server = await startServer({ env, sandboxRoot: root });
      const client = await connectClient('v2', server.url, { token: TOKEN });
      await client.callTool('write_file', { path: 'a.txt', content: 'a' });
      await server.stop(); // SIGTERM
      expect(readdirSync(root).filter((name) => name.startsWith('mcp-sandbox-'))).toHaveLength(kept);
    }
  },
);

needs('bubblewrap').it(
  'keeps the logs of background processes when the session moves to a new server process',
  async () => {
    const root = sharedRoot();
    const port = await findFreePort();
    const first = await startServer({ env: ENV, sandboxRoot: root, port });
    const client = await connectClient('v2', first.url, { token: TOKEN });
    const sleep = markedSleep(1030);
    const started = await client.callTool('run_command', {
      command: `echo "from the first instance"; ${sleep}`,
      background: true,
    });
    const id = started.structuredContent?.process_id as string;
    await pollUntil(
      async () =>
        (
          (await client.callTool('manage_process', { action: 'logs', process_id: id })).structuredContent!.log as {
            text: string;
          }
        ).text,
      (text) => text.includes('first instance'),
      SETTLE_MS,
    );
    expect(processesWithCmdline(sleep).length).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    // Its processes went with it (they never outlive the server that started them here)...
    expect(await waitUntilGone(() => processesWithCmdline(sleep), SETTLE_MS)).toEqual([]);
    await startServer({ env: ENV, sandboxRoot: root, port });
    // ...but its log stays readable, and new processes get new ids.
    const listed = await client.callTool('manage_process', { action: 'list' });
    expect(listed.structuredContent?.processes).toEqual([expect.objectContaining({ process_id: id, state: 'exited' })]);
    const logs = await client.callTool('manage_process', { action: 'logs', process_id: id });
    expect(logs.structuredContent?.log).toMatchObject({ text: 'from the first instance\n' });
    const next = await client.callTool('run_command', { command: 'true', background: true });
    expect(next.structuredContent?.process_id).not.toBe(id);
    await client.terminate();
  },
);
