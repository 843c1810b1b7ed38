/** The official clients, v2 and v1, against the built bundle: initialize, list, every tool, DELETE, then 404. */
import { existsSync } from 'node:fs';

import { connectClient, textOf } from '../support/clients';
import { initializeBody, postMcp } from '../support/http';
import { startServer, stopAllServers, type StartedServer, workspacesIn } from '../support/server';

const TOKEN = 'e2e-token-0123456789abcdef';
const EXPECTED_TOOLS = [
  'run_code',
  'run_command',
  'read_file',
  'write_file',
  'list_files',
  'edit_file',
  'sandbox_status',
  'manage_process',
  'get_preview_url',
  'get_file_url',
  'reset_sandbox',
  'open_sandbox',
  'list_sandboxes',
  'name_sandbox',
  'delete_sandbox',
];

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
});
afterAll(stopAllServers);

describe.each(['v2', 'v1'] as const)('the %s client', (kind) => {
  it('lists the fifteen tools with input and output schemas that forbid extra arguments', async () => {
    const client = await connectClient(kind, server.url, { token: TOKEN });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(EXPECTED_TOOLS);
    for (const tool of tools) {
      expect(tool.description).toBeTruthy();
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(tool.outputSchema).toMatchObject({ type: 'object' });
    }
    await client.terminate();
  });

  it('runs every tool in a session-owned sandbox, and the session is gone after DELETE', async () => {
    const client = await connectClient(kind, server.url, { token: TOKEN });
    const sessionId = client.sessionId;
    expect(sessionId).toMatch(/^[\x21-\x7e]{22,}$/);

    const before = await client.callTool('sandbox_status');
    expect(before.structuredContent).toMatchObject({ backend: 'local', state: 'not_started', sandbox_id: null });

    const cmd = await client.callTool('run_command', { command: 'echo out; echo err >&2; exit 3' });
    expect(cmd.isError).toBeFalsy();
    expect(cmd.structuredContent).toMatchObject({ exit_code: 3, stdout: 'out\n', stderr: 'err\n', timed_out: false });
    expect(textOf(cmd)).toContain('Exit code 3');

    expect((await client.callTool('run_code', { code: 'import math\nradius = 2' })).isError).toBeFalsy();
    const area = await client.callTool('run_code', { code: 'print("area"); round(math.pi * radius ** 2, 3)' });
    expect(area.structuredContent).toMatchObject({
      stdout: 'area\n',
      results: [{ type: 'text', text: '12.566' }],
      error: null,
      state_lost: false,
    });

    const failed = await client.callTool('run_code', { code: 'raise ValueError("bad value")' });
    expect(failed.isError).toBe(true);
    expect(failed.structuredContent).toMatchObject({ error: { name: 'ValueError', value: 'bad value' } });
    expect((failed.structuredContent!.error as { traceback: string }).traceback).toContain('Traceback');

    const written = await client.callTool('write_file', {
      path: 'src/app.py',
      content: 'print("hello")\nprint("bye")\n',
    });
    expect(written.structuredContent).toMatchObject({ bytes_written: 28, created: true });
    const path = written.structuredContent?.path as string;

    const read = await client.callTool('read_file', { path: 'src/app.py', offset: 2, limit: 1 });
    expect(read.structuredContent).toMatchObject({
      content: 'print("bye")\n',
      start_line: 2,
      end_line: 2,
      total_lines: 2,
      next_offset: null,
    });

    const edited = await client.callTool('edit_file', { path: 'src/app.py', old_string: 'hello', new_string: 'hi' });
    expect(edited.structuredContent).toMatchObject({ replacements: 1 });
    const ran = await client.callTool('run_command', { command: 'python3 src/app.py' });
    expect(ran.structuredContent).toMatchObject({ exit_code: 0, stdout: 'hi\nbye\n' });

    const listed = await client.callTool('list_files', { depth: 2 });
    const entries = listed.structuredContent?.entries as Array<{ path: string; type: string; size: number }>;
    expect(entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: 'src/', type: 'directory' }),
        expect.objectContaining({ path: 'src/app.py', type: 'file', size: 25 }),
      ]),
    );

    const status = await client.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({ backend: 'local', state: 'running' });
    expect(path.startsWith(status.structuredContent?.workdir as string)).toBe(true);
    expect(Date.parse(status.structuredContent?.expires_at as string)).toBeGreaterThan(Date.now());

    const workspaces = workspacesIn(server.sandboxRoot);
    expect(workspaces).toHaveLength(1);

    await client.terminate();
    // DELETE killed the sandbox: its workspace is gone, and the id is unknown from now on.
    expect(existsSync(`${server.sandboxRoot}/${workspaces[0]}`)).toBe(false);
    const after = await postMcp(
      server.url,
      { jsonrpc: '2.0', id: 9, method: 'tools/list' },
      {
        authorization: `Bearer ${TOKEN}`,
        'mcp-session-id': sessionId ?? '',
        'mcp-protocol-version': '2025-11-25',
      },
    );
    expect(after.status).toBe(404);
    expect(after.json).toMatchObject({ error: { code: -32001 } });
  });

  it('keeps sessions apart: each has its own sandbox and files', async () => {
    const a = await connectClient(kind, server.url, { token: TOKEN });
    const b = await connectClient(kind, server.url, { token: TOKEN });
    await a.callTool('write_file', { path: 'mine.txt', content: 'a' });
    const seen = await b.callTool('read_file', { path: 'mine.txt' });
    expect(seen.isError).toBe(true);
    expect(textOf(seen)).toContain('No such file');
    await Promise.all([a.terminate(), b.terminate()]);
  });
});

it('answers initialize with the version the client asked for, or the preferred one, as /health says', async () => {
  const health = (await (await fetch(`${server.origin}/health`)).json()) as {
    protocol: { preferred: string; transports: { http: string[] } };
  };
  // The 2026-07-28 revision has no initialize (test/core/health-protocols.test.ts): the 2025 era negotiates.
  const negotiated = health.protocol.transports.http.filter((version) => version < '2026-07-28');
  expect(negotiated).toEqual(['2025-11-25', '2025-06-18', '2025-03-26']);
  for (const asked of [...negotiated, '2024-11-05', '1999-01-01', undefined]) {
    // A client that asks for no version sends no protocolVersion at all.
    const body =
      asked === undefined
        ? {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { capabilities: {}, clientInfo: { name: 'no-version', version: '1' } },
          }
        : initializeBody(asked);
    const res = await postMcp(server.url, body, { authorization: `Bearer ${TOKEN}` });
    const expected = asked !== undefined && negotiated.includes(asked) ? asked : health.protocol.preferred;
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ result: { protocolVersion: expected } });
  }
});

it('leaves live sessions and their sandboxes alone when FC calls the PreStop hook', async () => {
  const client = await connectClient('v2', server.url, { token: TOKEN });
  await client.callTool('write_file', { path: 'keep.txt', content: 'still here' });
  expect((await fetch(`${server.origin}/pre-stop`)).status).toBe(200);
  const read = await client.callTool('read_file', { path: 'keep.txt' });
  expect(read.structuredContent).toMatchObject({ content: 'still here' });
  const health = (await (await fetch(`${server.origin}/health`)).json()) as { sessions: number; sandboxes: number };
  expect(health.sandboxes).toBeGreaterThanOrEqual(1);
  await client.terminate();
});
