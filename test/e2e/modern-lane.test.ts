/**
 * The 2026-07-28 revision on the same /mcp: the v2 client in modern mode runs every tool, carrying its
 * sandbox handle from call to call; handles are bound to the credential and cannot be forged.
 */
import type { Client } from '@modelcontextprotocol/client';

import { connectClient, connectModern as connectTo } from '../support/clients';
import { expectedNotes, runModelLoop } from '../support/model-loop';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'modern-token-0123456789abcdef';
const OTHER_TOKEN = 'modern-other-token-fedcba9876543210';
const SECRET = 'modern-secret-0123456789abcdef0123456789ab';

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: `${TOKEN},${OTHER_TOKEN}`, MCP_SESSION_SECRET: SECRET } });
});
afterAll(stopAllServers);

const connectModern = (token = TOKEN): Promise<Client> => connectTo(server.url, token);

type Result = {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};
const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<Result> =>
  (await client.callTool({ name, arguments: args })) as Result;

it('speaks 2026-07-28 without a session, and every tool schema takes a sandbox handle', async () => {
  const client = await connectModern();
  expect(client.getProtocolEra()).toBe('modern');
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  const { tools } = await client.listTools();
  expect(tools).toHaveLength(15);
  for (const tool of tools) {
    expect(tool.inputSchema.properties).toHaveProperty('sandbox');
    expect(tool.inputSchema.required ?? []).not.toContain('sandbox');
    expect(tool.outputSchema?.required).toContain('sandbox');
  }
  await client.close();
});

it('runs every tool, carrying the sandbox handle from call to call', async () => {
  const client = await connectModern();
  const first = await call(client, 'run_code', { code: 'import math\nr = 3' });
  const sandbox = first.structuredContent?.sandbox as string;
  expect(sandbox).toMatch(/^[A-Za-z0-9_-]{16}\.[0-9a-z]+\.[A-Za-z0-9_-]{16}$/); // 40 characters, for a model to copy
  // The handle is the first line of the text, where a model looks first.
  expect(first.content[0]?.text?.split('\n')[0]).toBe(`sandbox: ${sandbox}`);

  const steps: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['run_code', { code: 'round(math.pi * r * r, 2)' }, { results: [{ type: 'text', text: '28.27' }] }],
    ['run_command', { command: 'echo hello > greeting.txt && cat greeting.txt' }, { exit_code: 0, stdout: 'hello\n' }],
    ['write_file', { path: 'src/main.py', content: 'print("a")\n' }, { created: true }],
    ['edit_file', { path: 'src/main.py', old_string: '"a"', new_string: '"b"' }, { replacements: 1 }],
    ['read_file', { path: 'src/main.py' }, { content: 'print("b")\n' }],
    ['list_files', { depth: 2 }, { truncated: false }],
    ['sandbox_status', {}, { state: 'running', backend: 'local' }],
  ];
  for (const [name, args, expected] of steps) {
    const result = await call(client, name, { ...args, sandbox });
    expect({ name, isError: result.isError ?? false }).toEqual({ name, isError: false });
    expect(result.structuredContent).toMatchObject({ ...expected, sandbox });
  }
  await client.close();
});

it(
  'gives a call without a handle a new sandbox of its own, ' + 'and says so under the handle, on an error above all',
  async () => {
    const client = await connectModern();
    const a = await call(client, 'write_file', { path: 'only-a.txt', content: 'a' });
    const b = await call(client, 'read_file', { path: 'only-a.txt' });
    expect(b.isError).toBe(true);
    const [handleLine, noteLine, ...rest] = (b.content[0]?.text ?? '').split('\n');
    expect(handleLine).toMatch(/^sandbox: \S+$/);
    expect(noteLine).toBe(
      'this call ran in a new, empty sandbox: it carried no `sandbox` handle. Pass the handle above as "sandbox" ' +
        'on every later call to keep working in this one.',
    );
    expect(rest.join('\n')).toContain('No such file');
    expect(a.structuredContent?.sandbox).not.toBe(handleLine?.slice('sandbox: '.length));
    // A call that carries its handle is told nothing of the kind.
    const again = await call(client, 'read_file', { path: 'only-a.txt', sandbox: a.structuredContent?.sandbox });
    expect(again.structuredContent).toMatchObject({ content: 'a' });
    expect(again.content[0]?.text).not.toContain('new, empty sandbox');
    await client.close();
  },
);

it('answers forged handles and handles of another credential with a tool error that names the fix', async () => {
  const client = await connectModern();
  const mine = (await call(client, 'sandbox_status', {})).structuredContent?.sandbox as string;
  const [random, issued, mac] = mine.split('.');
  const flip = (text = ''): string => (text.startsWith('A') ? `B${text.slice(1)}` : `A${text.slice(1)}`);
  const fix = /Call the tool again without "sandbox" to get a new, empty sandbox/;
  for (const bad of [`${random}.${issued}.${flip(mac)}`, `${flip(random)}.${issued}.${mac}`, 'not-a-handle']) {
    const result = await call(client, 'sandbox_status', { sandbox: bad });
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toMatch(fix);
  }
  const other = await connectModern(OTHER_TOKEN);
  const foreign = await call(other, 'sandbox_status', { sandbox: mine });
  expect({ isError: foreign.isError, text: foreign.content[0]?.text }).toEqual({
    isError: true,
    text: expect.stringMatching(/belongs to another credential or server/),
  });
  await Promise.all([client.close(), other.close()]);
});

it.each([
  ['2026-07-28', 'modern'],
  ['2025-11-25', 'legacy'],
] as const)(
  'keeps Python state and files for a model-like loop on %s (21 calls; on 2026-07-28 it carries the handle it ' +
    'reads from each result)',
  async (version, era) => {
    const outcome = await runModelLoop(server.url, TOKEN, era);
    expect(outcome.handles.size).toBe(version === '2026-07-28' ? 1 : 0);
    expect(outcome.counter).toBe(String(outcome.increments));
    expect(outcome.notes).toBe(expectedNotes(outcome.appends));
  },
);

it('tells a 2026-07-28 client about the handle: instructions and every tool description', async () => {
  const client = await connectModern();
  expect(client.getInstructions()).toMatch(/Pass that handle as the "sandbox" argument of every later call/);
  for (const tool of (await client.listTools()).tools)
    expect(tool.description).toMatch(/without it the call runs in a new, empty one\.$/);
  await client.close();
});

it('serves 2025-era clients on the same endpoint at the same time', async () => {
  const legacy = await connectClient('v2', server.url, { token: TOKEN });
  const modern = await connectModern();
  expect(legacy.sessionId).toBeDefined();
  const [l, m] = await Promise.all([
    legacy.callTool('run_command', { command: 'echo legacy' }),
    call(modern, 'run_command', { command: 'echo modern' }),
  ]);
  expect(l.structuredContent).toMatchObject({ stdout: 'legacy\n' });
  expect(l.structuredContent).not.toHaveProperty('sandbox');
  expect(m.structuredContent).toMatchObject({ stdout: 'modern\n' });
  await Promise.all([legacy.terminate(), modern.close()]);
});

it('answers GET with 405 and a session-less DELETE with 400 (2026-07-28 has no session to end)', async () => {
  const headers = { authorization: `Bearer ${TOKEN}` };
  expect((await fetch(server.url, { method: 'GET', headers })).status).toBe(405);
  expect((await fetch(server.url, { method: 'DELETE', headers })).status).toBe(400);
});

it('keeps a handle’s files when calls alternate between two instances without affinity', async () => {
  const { startRoundRobinProxy } = await import('../support/round-robin-proxy');
  const { makeSandboxRoot } = await import('../support/server');
  const root = makeSandboxRoot();
  const env = { MCP_AUTH_TOKENS: TOKEN, MCP_SESSION_SECRET: SECRET };
  const a = await startServer({ env, sandboxRoot: root });
  const b = await startServer({ env, sandboxRoot: root });
  const proxy = await startRoundRobinProxy([a.port, b.port]);
  try {
    const client = await connectTo(proxy.url, TOKEN, 'modern-rr');
    const sandbox = (await call(client, 'write_file', { path: 'shared.txt', content: 'one\n' })).structuredContent
      ?.sandbox as string;
    await call(client, 'edit_file', { path: 'shared.txt', old_string: 'one', new_string: 'two', sandbox });
    expect((await call(client, 'read_file', { path: 'shared.txt', sandbox })).structuredContent).toMatchObject({
      content: 'two\n',
      sandbox,
    });
    expect((await call(client, 'run_command', { command: 'cat shared.txt', sandbox })).structuredContent).toMatchObject(
      { stdout: 'two\n' },
    );
    expect(new Set(proxy.served)).toEqual(new Set([0, 1]));
    await client.close();
  } finally {
    await proxy.close();
    await a.stop();
    await b.stop();
    const { rmSync } = await import('node:fs');
    rmSync(root, { recursive: true, force: true });
  }
});

it('stops the running command when a modern client closes its stream (cancellation)', async () => {
  const { markedSleep, pollUntil, processesWithCmdline, SETTLE_MS, waitUntilGone } = await import(
    '../support/processes'
  );
  const client = await connectModern();
  const abort = new AbortController();
  const sleep = markedSleep(1020);
  const running = client.callTool({ name: 'run_command', arguments: { command: sleep } }, { signal: abort.signal });
  await pollUntil(
    () => processesWithCmdline(sleep).length,
    (n) => n > 0,
    SETTLE_MS,
  );
  abort.abort();
  await expect(running).rejects.toThrow();
  expect(await waitUntilGone(() => processesWithCmdline(sleep), SETTLE_MS)).toEqual([]);
  await client.close();
});
