/**
 * Opt-in: every tool against real E2B (or Alibaba Cloud's E2B-compatible service), through the built bundle
 * and the official v2 client. Runs only when E2B_API_KEY is set; E2B_DOMAIN, E2B_API_URL, E2B_SANDBOX_URL and
 * E2B_TEMPLATE are passed through when set. Without a key the suite is reported as skipped, and says so.
 */
import { connectClient, textOf } from '../support/clients';
import { postMcp } from '../support/http';
import { startServer, type StartedServer } from '../support/server';

const KEY = process.env.E2B_API_KEY?.trim() || undefined;
const TOKEN = 'live-e2b-token-0123456789abcdef';
const PASS_THROUGH = ['E2B_DOMAIN', 'E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_TEMPLATE'] as const;

if (KEY === undefined) console.warn('E2B live suite skipped: E2B_API_KEY is not set');
const describeLive = KEY === undefined ? describe.skip : describe;

/** True once E2B no longer knows the sandbox as running (asked through the SDK; bounded). */
async function sandboxKilledWithin(sandboxId: string, timeoutMs: number): Promise<boolean> {
  const { Sandbox } = await import('e2b');
  const opts = {
    apiKey: KEY,
    domain: process.env.E2B_DOMAIN?.trim() || undefined,
    apiUrl: process.env.E2B_API_URL?.trim() || undefined,
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await Sandbox.getInfo(sandboxId, opts).then(
      (info) => info.state,
      (err: unknown) => (err instanceof Error && err.name === 'SandboxNotFoundError' ? 'gone' : Promise.reject(err)),
    );
    if (state !== 'running') return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

describeLive('the E2B backend against real E2B', () => {
  let server: StartedServer;
  beforeAll(async () => {
    const env: Record<string, string> = {
      SANDBOX_BACKEND: 'e2b',
      E2B_API_KEY: KEY ?? '',
      MCP_AUTH_TOKENS: TOKEN,
      MCP_SESSION_IDLE_TTL_S: '600',
    };
    for (const name of PASS_THROUGH) {
      const value = process.env[name]?.trim();
      if (value) env[name] = value;
    }
    server = await startServer({ env });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('reports backend e2b and ready on /health', async () => {
    const health = (await (await fetch(`${server.origin}/health`)).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ status: 'ok', backend: { name: 'e2b', ready: true, isolation: 'e2b-microvm' } });
  });

  it('runs every tool in one session’s E2B sandbox, which DELETE ends', async () => {
    const client = await connectClient('v2', server.url, { token: TOKEN });
    const sessionId = client.sessionId ?? '';
    let sandboxId = '';
    try {
      const before = await client.callTool('sandbox_status');
      expect(before.structuredContent).toMatchObject({ backend: 'e2b', state: 'not_started', sandbox_id: null });

      const cmd = await client.callTool(
        'run_command',
        { command: 'echo out; echo err >&2; exit 3' },
        { timeoutMs: 120_000 },
      );
      expect(cmd.isError).toBeFalsy();
      expect(cmd.structuredContent).toMatchObject({ exit_code: 3, stdout: 'out\n', stderr: 'err\n', timed_out: false });
      expect(textOf(cmd)).toContain('Exit code 3');

      const first = await client.callTool('run_code', { code: 'import math\nradius = 2' });
      expect(first.isError).toBeFalsy();
      const area = await client.callTool('run_code', { code: 'print("area"); round(math.pi * radius ** 2, 3)' });
      expect(area.isError).toBeFalsy();
      expect(area.structuredContent).toMatchObject({
        stdout: 'area\n',
        results: [{ type: 'text', text: '12.566' }],
        error: null,
      });

      const failed = await client.callTool('run_code', { code: 'raise ValueError("bad value")' });
      expect(failed.isError).toBe(true);
      expect(failed.structuredContent).toMatchObject({ error: { name: 'ValueError', value: 'bad value' } });
      expect((failed.structuredContent!.error as { traceback: string }).traceback).toContain('ValueError');

      const written = await client.callTool('write_file', {
        path: 'src/app.py',
        content: 'print("hello")\nprint("bye")\n',
      });
      expect(written.structuredContent).toMatchObject({
        path: '/home/user/src/app.py',
        bytes_written: 28,
        created: true,
      });

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

      const listed = await client.callTool('list_files', { path: 'src' });
      expect(listed.structuredContent?.entries).toEqual([
        expect.objectContaining({ path: 'app.py', type: 'file', size: 25 }),
      ]);

      const missing = await client.callTool('read_file', { path: 'no-such-file.txt' });
      expect(missing.isError).toBe(true);

      const status = await client.callTool('sandbox_status');
      expect(status.structuredContent).toMatchObject({
        backend: 'e2b',
        state: 'running',
        workdir: '/home/user',
        isolation: 'e2b-microvm',
      });
      sandboxId = status.structuredContent?.sandbox_id as string;
      expect(sandboxId).toEqual(expect.any(String));
      expect(Date.parse(status.structuredContent?.expires_at as string)).toBeGreaterThan(Date.now());
    } finally {
      await client.terminate();
    }
    const after = await postMcp(
      server.url,
      { jsonrpc: '2.0', id: 9, method: 'tools/list' },
      {
        authorization: `Bearer ${TOKEN}`,
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-11-25',
      },
    );
    expect(after.status).toBe(404);
    expect(await sandboxKilledWithin(sandboxId, 15_000)).toBe(true);
    expect(server.logs().some((line) => line.msg === 'sandbox created' && line.backend === 'e2b')).toBe(true);
    expect(server.stdout().includes(KEY ?? '')).toBe(false);
    expect(server.stderr().includes(KEY ?? '')).toBe(false);
  }, 300_000);
});
