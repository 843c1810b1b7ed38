/**
 * run_command on the E2B backend, through the built bundle and the real SDK, against the local E2B service:
 * exit codes, stderr, stdin, env, cwd, bounded output, and timeouts and cancellation that stop everything the
 * command started (checked from inside the sandbox, whose processes the service runs for real).
 */
import { failure, NODES, ok, suiteWire, wireDescribe } from '../support/e2b-wire';
import { pollUntil, SETTLE_MS } from '../support/processes';

interface CommandOut {
  exit_code: number | null;
  stdout: string;
  stderr: string;
  stdout_bytes: number;
  timed_out: boolean;
}

wireDescribe.each(NODES)('run_command on E2B, server on %s', (_name, node) => {
  const suite = suiteWire(node);

  const run = async (args: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<CommandOut> =>
    ok<CommandOut>(await suite.client.callTool('run_command', args, options));
  /** Whether a process whose command line contains `mark` runs in the sandbox. */
  const running = async (mark: string): Promise<boolean> =>
    (await run({ command: `pgrep -f '${mark.slice(0, -1)}[${mark.slice(-1)}]' >/dev/null` })).exit_code === 0;

  it('returns stdout, stderr and a non-zero exit code as a result, not an error', async () => {
    const out = await run({ command: 'echo out; echo err >&2; exit 3' });
    expect(out).toMatchObject({ exit_code: 3, stdout: 'out\n', stderr: 'err\n', timed_out: false });
  });

  it('runs in /home/user by default, in a relative or absolute cwd, with env', async () => {
    await run({ command: 'mkdir -p sub/dir' });
    expect((await run({ command: 'pwd' })).stdout).toBe('/home/user\n');
    expect(
      (await run({ command: 'pwd; echo "$GREETING"', cwd: 'sub/dir', env: { GREETING: 'héllo wörld' } })).stdout,
    ).toBe('/home/user/sub/dir\nhéllo wörld\n');
    expect((await run({ command: 'pwd', cwd: '/tmp' })).stdout).toBe('/tmp\n');
  });

  it('feeds stdin, unicode included, and closes it', async () => {
    expect((await run({ command: 'cat; echo "[eof]"', stdin: 'line one\n日本語 ✓\n' })).stdout).toBe(
      'line one\n日本語 ✓\n[eof]\n',
    );
    // Without stdin the command reads end-of-file at once instead of hanging.
    expect((await run({ command: 'cat; echo nothing' })).stdout).toBe('nothing\n');
  });

  it('keeps the head and tail of a flood of output with its true byte count', async () => {
    const out = await run({ command: 'head -c 3000000 /dev/zero | tr "\\0" y' });
    expect(out.stdout_bytes).toBe(3_000_000);
    expect(out.stdout).toContain(' bytes omitted …]');
    expect(Buffer.byteLength(out.stdout)).toBeLessThan(140_000);
  });

  it('at its timeout stops the command and everything it started', async () => {
    const result = await suite.client.callTool('run_command', { command: 'sleep 1001 & sleep 1002', timeout_ms: 1000 });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ timed_out: true, exit_code: null });
    await pollUntil(
      async () => (await running('sleep 1001')) || (await running('sleep 1002')),
      (alive) => !alive,
      SETTLE_MS,
      200,
    );
    expect(await running('sleep 1001')).toBe(false);
    expect(await running('sleep 1002')).toBe(false);
  });

  it('stops a cancelled command and what it started, and the session goes on', async () => {
    const controller = new AbortController();
    const call = suite.client.callTool(
      'run_command',
      { command: 'sleep 1003 & sleep 1004' },
      { signal: controller.signal },
    );
    const outcome = call.then(
      () => 'resolved',
      () => 'rejected',
    );
    await pollUntil(
      () => running('sleep 1004'),
      (alive) => alive,
      SETTLE_MS,
      200,
    );
    controller.abort();
    expect(await outcome).toBe('rejected');
    await pollUntil(
      async () => (await running('sleep 1003')) || (await running('sleep 1004')),
      (alive) => !alive,
      SETTLE_MS,
      200,
    );
    expect(await running('sleep 1003')).toBe(false);
    expect((await run({ command: 'echo still-here' })).stdout).toBe('still-here\n');
  });

  it('reports a cwd that does not exist as a clean error', async () => {
    const text = failure(await suite.client.callTool('run_command', { command: 'true', cwd: 'no/such/dir' }));
    expect(text).not.toMatch(/\n\s+at /);
  });
});
