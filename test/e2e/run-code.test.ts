/** run_code in the local sandbox: a stateful Python kernel, errors, timeouts and restarts, other languages, cleanup on
 * DELETE. */
import { randomBytes } from 'node:crypto';

import { connectClient, textOf, type TestClient, type ToolResult } from '../support/clients';
import { processesOfUid, processesWithEnv, SETTLE_MS, waitUntilGone } from '../support/processes';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'e2e-code-token-0123456789abcdef';

interface CodeOutcome {
  stdout: string;
  stderr: string;
  results: Array<{ type: string; text?: string }>;
  error: { name: string; value: string; traceback: string } | null;
  timed_out: boolean;
  state_lost: boolean;
}

describe('run_code', () => {
  let server: StartedServer;
  let client: TestClient;

  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
    client = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await client.close();
    await stopAllServers();
  });

  async function run(
    code: string,
    extra: Record<string, unknown> = {},
    on: TestClient = client,
  ): Promise<{ result: ToolResult; out: CodeOutcome }> {
    const result = await on.callTool('run_code', { code, ...extra });
    return { result, out: result.structuredContent as unknown as CodeOutcome };
  }

  it('keeps Python variables, imports and functions between calls and returns the last expression', async () => {
    expect((await run('import math\ndef square(x):\n    return x * x\nside = 7')).result.isError).toBeFalsy();
    const { result, out } = await run('square(side) + math.floor(math.pi)');
    expect(result.isError).toBeFalsy();
    expect(out).toMatchObject({
      stdout: '',
      results: [{ type: 'text', text: '52' }],
      error: null,
      timed_out: false,
      state_lost: false,
    });
    expect(textOf(result)).toContain('Result: 52');
  });

  it('returns print output in stdout, and no result when the last statement is not an expression', async () => {
    const { out } = await run('print("hello")\nprint("world", end="")\nvalue = 3');
    expect(out).toMatchObject({ stdout: 'hello\nworld', stderr: '', results: [], error: null });
  });

  it('returns an exception with name, value and a traceback that points at the cell line', async () => {
    const { result, out } = await run('a = 1\nb = 0\nc = a / b\n');
    expect(result.isError).toBe(true);
    expect(out.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    expect(out.error?.traceback).toContain('Traceback (most recent call last)');
    expect(out.error?.traceback).toMatch(/File "<cell-\d+>", line 3/);
    expect(out.error?.traceback).toContain('c = a / b');
    expect(out.state_lost).toBe(false);
  });

  it('interrupts code at its timeout and keeps the earlier state', async () => {
    await run('kept = 41');
    // A 30 s sleep that comes back timed out was interrupted (how soon: test/reliability/real-time.test.ts).
    const { result, out } = await run('import time; time.sleep(30)', { timeout_ms: 1000 });
    expect(result.isError).toBe(true);
    expect(out).toMatchObject({ timed_out: true, state_lost: false });
    const after = await run('kept + 1');
    expect(after.out).toMatchObject({ results: [{ type: 'text', text: '42' }], error: null, state_lost: false });
  });

  it('kills code that ignores KeyboardInterrupt, says the state is lost, and then starts fresh', async () => {
    await run('doomed = "old state"');
    const code = 'import time\nwhile True:\n  try:\n    time.sleep(1)\n  except KeyboardInterrupt:\n    pass';
    const { result, out } = await run(code, { timeout_ms: 1000 });
    expect(result.isError).toBe(true);
    expect(out).toMatchObject({ timed_out: true, state_lost: true });
    expect(textOf(result)).toContain('variables and imports from earlier calls are gone');
    const next = await run('doomed');
    expect(next.out).toMatchObject({
      state_lost: false,
      error: { name: 'NameError', value: "name 'doomed' is not defined" },
    });
    const works = await run('1 + 1');
    expect(works.out).toMatchObject({ results: [{ type: 'text', text: '2' }], error: null });
  });

  it('runs JavaScript and bash statelessly', async () => {
    const js = await run('var carried = 5; console.log(carried * 2)', { language: 'javascript' });
    expect(js.result.isError).toBeFalsy();
    expect(js.out).toMatchObject({ stdout: '10\n', error: null });
    expect((await run('console.log(typeof carried)', { language: 'javascript' })).out).toMatchObject({
      stdout: 'undefined\n',
    });
    const sh = await run('carried=5; echo "$((carried * 3))"', { language: 'bash' });
    expect(sh.out).toMatchObject({ stdout: '15\n', error: null });
    expect((await run('echo "${carried:-unset}"', { language: 'bash' })).out).toMatchObject({ stdout: 'unset\n' });
    const failed = await run('exit 4', { language: 'bash' });
    expect(failed.result.isError).toBe(true);
    expect(failed.out.error).toMatchObject({ name: 'NonZeroExit', value: 'exited with 4' });
  });

  it('refuses an unavailable language and names the available ones', async () => {
    const result = await client.callTool('run_code', { code: 'const x: number = 1', language: 'typescript' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(
      'The language "typescript" is not available in this sandbox; available: python, javascript, bash',
    );
  });

  it('gives input() an empty stdin instead of hanging', async () => {
    // Not timed out, but an EOFError: input() did not wait for the 20 s timeout.
    const { result, out } = await run('input("name? ")', { timeout_ms: 20_000 });
    expect(result.isError).toBe(true);
    expect(out).toMatchObject({ timed_out: false, error: { name: 'EOFError' } });
  });

  it('shows output written by a subprocess in stdout', async () => {
    const { out } = await run(
      "import subprocess\nprint('before', flush=True)\nsubprocess.run(['echo', 'from-child'])\nprint('after')",
    );
    expect(out).toMatchObject({ stdout: 'before\nfrom-child\nafter\n', error: null });
  });

  it('leaves no process of the sandbox behind after DELETE of the session', async () => {
    const session = await connectClient('v2', server.url, { token: TOKEN });
    const mark = `E2E_KERNEL_MARK=${randomBytes(8).toString('hex')}`;
    const [name, value] = mark.split('=') as [string, string];
    // The first run_code starts the kernel with this environment, so its processes can be found on the host.
    const { out } = await run('import os\nos.getuid()', { env: { [name]: value } }, session);
    const uid = Number(out.results[0]?.text);
    const kernel = processesWithEnv(mark);
    expect(kernel.some((p) => p.argv.some((a) => a.includes('python')))).toBe(true);
    expect(kernel.every((p) => process.getuid?.() !== 0 || p.uid === uid)).toBe(true);
    await session.terminate();
    expect(await waitUntilGone(() => processesWithEnv(mark), SETTLE_MS)).toEqual([]);
    if (process.getuid?.() === 0) {
      expect(uid).toBeGreaterThanOrEqual(100_000);
      expect(await waitUntilGone(() => processesOfUid(uid), SETTLE_MS)).toEqual([]);
    } else {
      console.log(
        'not root: the sandbox shares the test user, so only the kernel processes (by environment) are checked',
      );
    }
  });
});
