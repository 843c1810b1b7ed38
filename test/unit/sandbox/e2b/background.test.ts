import * as e2b from 'e2b';

import { E2BSandbox } from '../../../../functions/mcp/sandbox/e2b/e2b-sandbox';
import { createFakeClock } from '../../../support/fake-clock';
import { StubSandbox } from '../../../support/e2b-stub';

function setup() {
  const clock = createFakeClock();
  const api = new StubSandbox('sbx-bg');
  const sandbox = new E2BSandbox({ api, errors: e2b, template: 'code-interpreter-v1', apiKey: 'e2b_key_0123456789', leaseMs: 1_800_000, renewEveryMs: 30_000, maxOutputBytes: 1024, clock });
  return { api, sandbox };
}

describe('background processes on E2B', () => {
  it('start in the background with their output capped into a log inside the sandbox, and page through it', async () => {
    const { api, sandbox } = setup();
    api.command = (cmd) => (cmd.includes('http.server') ? { hang: true } : { exitCode: 0 });
    const started = await sandbox.startBackground({ command: 'python3 -m http.server 8000', cwd: 'site' });
    expect(started).toMatchObject({ id: 'p1', state: 'running', command: 'python3 -m http.server 8000' });
    const [call] = api.commands;
    expect(call?.cmd).toBe(
      "mkdir -p /tmp/.mcp-processes && { bash -c 'python3 -m http.server 8000' 2>&1; echo $? > /tmp/.mcp-processes/p1.log.exit; } | { head -c 8388608 > /tmp/.mcp-processes/p1.log; cat > /dev/null; }",
    );
    expect(call?.opts).toMatchObject({ cwd: '/home/user/site', stdin: true });
    expect(sandbox.hasRunningBackground()).toBe(true);

    api.files.set('/tmp/.mcp-processes/p1.log', Buffer.from('Serving HTTP on 0.0.0.0 port 8000\nGET /\n'));
    expect(await sandbox.readBackgroundLog('p1', { limitBytes: 6 })).toMatchObject({ text: 'GET /\n', offset: 34, nextOffset: 40, totalBytes: 40 });
    expect(await sandbox.readBackgroundLog('p1', { offset: 0, limitBytes: 7 })).toMatchObject({ text: 'Serving', nextOffset: 7 });
    await sandbox.writeBackgroundStdin('p1', 'hello\n');
    expect(api.stdinWrites).toEqual([[1, 'hello\n']]);
  });

  it('kill signals the whole process tree from inside the sandbox, and an exited process reports its code', async () => {
    const { api, sandbox } = setup();
    api.command = () => ({ exitCode: 0 });
    await sandbox.startBackground({ command: 'make build' });
    api.files.set('/tmp/.mcp-processes/p1.log.exit', Buffer.from('2\n'));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await sandbox.listBackground()).toEqual([expect.objectContaining({ id: 'p1', state: 'exited', exitCode: 2 })]);
    await sandbox.startBackground({ command: 'sleep 100' });
    await sandbox.signalBackground('p2', 'SIGTERM');
    expect(api.commands.at(-1)?.cmd).toContain('kill -s TERM "$1"');
    expect(api.commands.at(-1)?.cmd).toContain('t 2; true');
    await expect(sandbox.signalBackground('p9', 'SIGKILL')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('gives the public host of a port as preview URL, and whether something listens there', async () => {
    const { api, sandbox } = setup();
    api.command = (cmd) => ({ exitCode: cmd.includes('/dev/tcp/127.0.0.1/3000') ? 0 : 1 });
    expect(await sandbox.preview(3000)).toEqual({ url: 'https://3000-sbx-bg.e2b.test', listening: true, reachable: true });
    expect(await sandbox.preview(3001)).toMatchObject({ listening: false });
  });

  it('cancels run_code like Jupyter: what the cell started is killed and the kernel interrupted', async () => {
    const { api, sandbox } = setup();
    let interrupted: () => void = () => undefined;
    api.code = () =>
      new Promise((resolve) => {
        interrupted = () => resolve({ results: [], logs: { stdout: [], stderr: [] }, error: { name: 'KeyboardInterrupt', value: '', traceback: '' } as never });
      });
    api.command = (cmd) => {
      if (cmd.includes('ipykernel_launcher')) setImmediate(interrupted);
      return { exitCode: 0 };
    };
    const abort = new AbortController();
    const running = sandbox.runCode({ code: 'while True: pass', language: 'python', timeoutMs: 60_000, signal: abort.signal });
    await new Promise((resolve) => setImmediate(resolve));
    abort.abort();
    await expect(running).resolves.toMatchObject({ cancelled: true, timedOut: false });
    expect(api.commands.some((c) => c.cmd.includes('kill -INT "$k"'))).toBe(true);
  });
});
