/**
 * run_command in the local sandbox: bounded output, stdin/env, timeouts and cancellation that leave nothing behind,
 * secrets kept out, isolation, per-session users. (The fork bomb is in test/reliability/real-time.test.ts.)
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, textOf, type TestClient } from '../support/clients';
import { markedSleep, pollUntil, processesWithCmdline, SETTLE_MS, waitUntilGone } from '../support/processes';
import { startServer, stopAllServers, type StartedServer } from '../support/server';
import { needs } from '../support/needs';

const TOKEN = 'e2e-proc-token-0123456789abcdef';
const FILE_TOKEN = 'e2e-file-token-fedcba9876543210';
const E2B_KEY = 'e2b_secret_value';
const SESSION_SECRET = 'session-secret-0123456789abcdef0123456789';
const CONNECT_SCRIPT = (port: number): string =>
  `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 2); print('connected')"`;

needs('bubblewrap').describe('run_command under bubblewrap', () => {
  let server: StartedServer;
  let client: TestClient;
  let secretsDir: string;
  let tokenFile: string;

  beforeAll(async () => {
    // /opt is mounted read-only inside the sandbox: a token file there must be masked, not just out of view.
    secretsDir = mkdtempSync(join(process.getuid?.() === 0 ? '/opt' : tmpdir(), 'mcp-secrets-'));
    tokenFile = join(secretsDir, 'tokens');
    // The server's own (a world-readable one is refused at start-up); the sandbox must see the mask in its place.
    chmodSync(secretsDir, 0o755);
    writeFileSync(tokenFile, `${FILE_TOKEN}\n`, { mode: 0o600 });
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        MCP_AUTH_TOKEN_FILE: tokenFile,
        // An E2B key alone would pick the E2B backend: this suite is about the local one.
        SANDBOX_BACKEND: 'local',
        E2B_API_KEY: E2B_KEY,
        MCP_SESSION_SECRET: SESSION_SECRET,
      },
    });
    client = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await client.close();
    await stopAllServers();
    rmSync(secretsDir, { recursive: true, force: true });
  });

  it('bounds a flood of output to head and tail with an omission marker and the true byte count', async () => {
    const result = await client.callTool('run_command', { command: 'yes | head -c 5000000' });
    expect(result.isError).toBeFalsy();
    const out = result.structuredContent as { stdout: string; stdout_bytes: number; exit_code: number };
    expect(out.exit_code).toBe(0);
    expect(out.stdout_bytes).toBe(5_000_000);
    expect(out.stdout).toContain(`\n[… ${5_000_000 - 65_536} bytes omitted …]\n`);
    expect(Buffer.byteLength(out.stdout)).toBeLessThan(70_000);
    expect(out.stdout.startsWith('y\ny\n')).toBe(true);
    expect(out.stdout.endsWith('y\ny\n')).toBe(true);
  });

  it('passes stdin and extra environment variables to the command', async () => {
    const cat = await client.callTool('run_command', { command: 'cat', stdin: 'abc' });
    expect(cat.structuredContent).toMatchObject({ exit_code: 0, stdout: 'abc', stderr: '' });
    const env = await client.callTool('run_command', {
      command: 'printf "%s|%s" "$GREETING" "$HOME"',
      env: { GREETING: 'hello world' },
    });
    expect(env.structuredContent).toMatchObject({ exit_code: 0, stdout: 'hello world|/home/user' });
  });

  // A command of 1,000 s that comes back timed out was ended by its timeout (how soon:
  // test/reliability/real-time.test.ts).
  it('kills a command that never ends at its timeout and leaves no process behind', async () => {
    const result = await client.callTool('run_command', { command: markedSleep(1000), timeout_ms: 1000 });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ timed_out: true });
    expect(textOf(result)).toContain('Timed out after 1000 ms');
    expect(await waitUntilGone(() => processesWithCmdline(markedSleep(1000)), SETTLE_MS)).toEqual([]);
  });

  it('kills background children of a timed-out command too', async () => {
    const result = await client.callTool('run_command', {
      command: `${markedSleep(1001)} & ${markedSleep(1002)} & wait`,
      timeout_ms: 1000,
    });
    expect(result.structuredContent).toMatchObject({ timed_out: true });
    expect(
      await waitUntilGone(
        () => [...processesWithCmdline(markedSleep(1001)), ...processesWithCmdline(markedSleep(1002))],
        SETTLE_MS,
      ),
    ).toEqual([]);
  });

  it('kills a cancelled command, and the session keeps working', async () => {
    const controller = new AbortController();
    const call = client.callTool('run_command', { command: markedSleep(1003) }, { signal: controller.signal });
    const outcome = call.then(
      () => 'resolved',
      () => 'rejected',
    );
    const seen = await pollUntil(
      () => processesWithCmdline(markedSleep(1003)),
      (list) => list.length > 0,
      SETTLE_MS,
    );
    expect(seen.length).toBeGreaterThan(0);
    controller.abort();
    expect(await outcome).toBe('rejected');
    expect(await waitUntilGone(() => processesWithCmdline(markedSleep(1003)), SETTLE_MS)).toEqual([]);
    const after = await client.callTool('run_command', { command: 'echo still-here' });
    expect(after.structuredContent).toMatchObject({ exit_code: 0, stdout: 'still-here\n' });
  });

  it('gives the sandbox none of the server secrets in its environment', async () => {
    const result = await client.callTool('run_command', { command: 'env' });
    const env = result.structuredContent?.stdout as string;
    expect(env).toContain('HOME=/home/user');
    for (const secret of [
      TOKEN,
      FILE_TOKEN,
      E2B_KEY,
      SESSION_SECRET,
      'MCP_AUTH',
      'E2B_API_KEY',
      'MCP_SESSION_SECRET',
      'LOCAL_SANDBOX_ROOT',
    ]) {
      expect(env).not.toContain(secret);
    }
  });

  it('cannot read the auth token file from inside the sandbox: an empty device stands in its place', async () => {
    const result = await client.callTool('run_command', {
      command: `cat ${tokenFile}; ls ${secretsDir}; stat -c %F ${tokenFile}`,
    });
    expect(result.structuredContent?.stdout).not.toContain(FILE_TOKEN);
    expect(result.structuredContent?.stdout).toContain('character special file');
    expect(JSON.stringify(result)).not.toContain(FILE_TOKEN);
  });

  it('has no network: connecting to the server port fails, and sandbox_status says bwrap and disabled', async () => {
    const result = await client.callTool('run_command', { command: CONNECT_SCRIPT(server.port) });
    expect(result.structuredContent?.exit_code).not.toBe(0);
    expect(result.structuredContent?.stdout).toBe('');
    expect(result.structuredContent?.stderr).toMatch(/Error/);
    const status = await client.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({
      backend: 'local',
      state: 'running',
      isolation: 'bwrap',
      network: 'disabled',
      workdir: '/home/user',
    });
  });

  it(
    "shares one network among a sandbox's processes: a background server serves its later commands and its preview " +
      'probe, and no other sandbox',
    async () => {
      const port = 8765;
      const fetchScript =
        `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/index.html', ` +
        `timeout=5).read().decode())"`;
      await client.callTool('write_file', { path: 'site/index.html', content: '<h1>served inside</h1>' });
      const started = await client.callTool('run_command', {
        command: `cd site && exec python3 -m http.server ${port} --bind 127.0.0.1`,
        background: true,
      });
      const id = started.structuredContent?.process_id as string;
      const preview = await pollUntil(
        async () =>
          (await client.callTool('get_preview_url', { port })).structuredContent as {
            url: string;
            listening: boolean;
            reachable: boolean;
            note: string | null;
          },
        (p) => p.listening,
        SETTLE_MS,
        100,
      );
      // Its URL is a forwarder on the host (test/e2e/preview-forwarder.test.ts), not the port itself.
      expect(preview).toMatchObject({
        listening: true,
        reachable: true,
        note: expect.stringContaining('access token'),
      });
      expect(preview.url).not.toBe(`http://127.0.0.1:${port}`);
      expect((await client.callTool('run_command', { command: fetchScript })).structuredContent).toMatchObject({
        exit_code: 0,
        stdout: '<h1>served inside</h1>\n',
      });

      const other = await connectClient('v2', server.url, { token: TOKEN });
      expect((await other.callTool('run_command', { command: CONNECT_SCRIPT(port) })).structuredContent?.stdout).toBe(
        '',
      );
      expect((await other.callTool('get_preview_url', { port })).structuredContent).toMatchObject({ listening: false });
      await other.terminate();

      await client.callTool('manage_process', { action: 'kill', process_id: id });
      expect((await client.callTool('get_preview_url', { port })).structuredContent).toMatchObject({
        listening: false,
      });
    },
  );

  it('runs two sessions as two different unprivileged users when the server is root', async () => {
    if (process.getuid?.() !== 0) {
      console.log('skipped: the test runner is not root, so the server does not drop privileges per session');
      return;
    }
    const a = await connectClient('v2', server.url, { token: TOKEN });
    const b = await connectClient('v2', server.url, { token: TOKEN });
    const [ua, ub] = await Promise.all(
      [a, b].map(
        async (c) => (await c.callTool('run_command', { command: 'id -u' })).structuredContent?.stdout as string,
      ),
    );
    expect(ua).toMatch(/^\d+\n$/);
    expect(ub).toMatch(/^\d+\n$/);
    expect(ua).not.toBe(ub);
    expect(Number(ua)).toBeGreaterThanOrEqual(100_000);
    expect(Number(ub)).toBeGreaterThanOrEqual(100_000);
    await Promise.all([a.terminate(), b.terminate()]);
  });
});

describe('run_command with LOCAL_SANDBOX_ISOLATION=none', () => {
  let server: StartedServer;
  let client: TestClient;

  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_ISOLATION: 'none' } });
    client = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await client.close();
    await stopAllServers();
  });

  it('warns on stdout that it is not a security boundary', async () => {
    const logs = await pollUntil(
      () => server.logs(),
      (l) => l.some((line) => line.level === 'warn' && String(line.msg).includes('NOT a security boundary')),
      SETTLE_MS,
    );
    expect(logs).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: expect.stringContaining('this is NOT a security boundary') }),
    );
  });

  it('reports isolation none and host network in sandbox_status, and the network is really reachable', async () => {
    const connected = await client.callTool('run_command', { command: CONNECT_SCRIPT(server.port) });
    expect(connected.structuredContent).toMatchObject({ exit_code: 0, stdout: 'connected\n' });
    const status = await client.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({
      backend: 'local',
      state: 'running',
      isolation: 'none',
      network: 'host',
    });
  });

  it('kills background children of a timed-out command without the help of a PID namespace', async () => {
    const result = await client.callTool('run_command', {
      command: `${markedSleep(1004)} & ${markedSleep(1005)} & wait`,
      timeout_ms: 1000,
    });
    expect(result.structuredContent).toMatchObject({ timed_out: true });
    expect(
      await waitUntilGone(
        () => [...processesWithCmdline(markedSleep(1004)), ...processesWithCmdline(markedSleep(1005))],
        SETTLE_MS,
      ),
    ).toEqual([]);
  });
});
