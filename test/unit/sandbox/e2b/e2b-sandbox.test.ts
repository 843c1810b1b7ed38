import * as e2b from 'e2b';

import { E2BSandbox } from '../../../../functions/mcp/sandbox/e2b/e2b-sandbox';
import { shellQuote } from '../../../../functions/mcp/sandbox/e2b/shell';
import { createFakeClock } from '../../../support/fake-clock';
import { StubSandbox } from '../../../support/e2b-stub';

function setup(renewEveryMs = 30_000) {
  const clock = createFakeClock();
  const api = new StubSandbox('sbx-test');
  const sandbox = new E2BSandbox({ api, errors: e2b, template: 'code-interpreter-v1', apiKey: 'e2b_key_0123456789', leaseMs: 1_800_000, renewEveryMs, maxOutputBytes: 1024, clock });
  return { clock, api, sandbox };
}

describe('an E2B sandbox', () => {
  it('renews its lease with setTimeout at most once per interval, not on every call', async () => {
    const { clock, api, sandbox } = setup();
    await sandbox.writeFile('a.txt', Buffer.from('a'));
    clock.advance(10_000);
    await sandbox.readFile('a.txt', 100);
    clock.advance(10_000);
    await sandbox.listFiles({ path: '.', depth: 1, includeHidden: false, maxEntries: 10 });
    expect(api.setTimeouts).toEqual([]);
    clock.advance(11_000);
    await sandbox.readFile('a.txt', 100);
    await sandbox.readFile('a.txt', 100);
    expect(api.setTimeouts).toEqual([1_800_000]);
  });

  it('runs a command in the background under an in-sandbox timeout -k, and a non-zero exit is a normal result', async () => {
    const { api, sandbox } = setup();
    api.command = () => ({ stdout: 'out\n', stderr: 'err\n', exitCode: 3 });
    const result = await sandbox.runCommand({ command: `echo 'it''s'`, cwd: 'src', env: { A: '1' }, timeoutMs: 30_000 });
    expect(result).toMatchObject({ exitCode: 3, timedOut: false, cancelled: false, stdout: { text: 'out\n' }, stderr: { text: 'err\n' } });
    const [started] = api.commands;
    expect(started?.cmd).toBe(`exec timeout -k 2 30 bash -c ${shellQuote(`echo 'it''s'`)} < /dev/null`);
    expect(started?.opts).toMatchObject({ cwd: '/home/user/src', envs: { A: '1' } });
  });

  it('feeds stdin from a file it writes first, and removes it after', async () => {
    const { api, sandbox } = setup();
    await sandbox.runCommand({ command: 'cat', stdin: 'abc', timeoutMs: 5_000 });
    const stdinFile = [...api.files.keys()].find((p) => p.startsWith('/tmp/.mcp-stdin-'));
    expect(stdinFile).toBeDefined();
    expect(Buffer.from(api.files.get(stdinFile ?? '') ?? []).toString()).toBe('abc');
    expect(api.commands[0]?.cmd).toBe(`exec timeout -k 2 5 bash -c ${shellQuote(`rm -f ${stdinFile}; cat`)} < ${stdinFile}`);
  });

  it('reports exit 124 after the deadline as a timeout', async () => {
    const { api, sandbox, clock } = setup();
    api.command = () => {
      clock.advance(2_000);
      return { exitCode: 124 };
    };
    const result = await sandbox.runCommand({ command: 'sleep 100', timeoutMs: 2_000 });
    expect(result).toMatchObject({ timedOut: true, exitCode: null });
  });

  it('stops the command and everything it started when the call is cancelled', async () => {
    const { api, sandbox } = setup();
    api.command = () => ({ hang: true });
    const abort = new AbortController();
    const running = sandbox.runCommand({ command: 'sleep 100', timeoutMs: 60_000, signal: abort.signal });
    await new Promise((r) => setImmediate(r));
    abort.abort();
    await expect(running).resolves.toMatchObject({ cancelled: true, exitCode: null });
    // The command's whole process group is signalled from inside the sandbox, not just its first process.
    expect(api.commands[1]?.cmd).toBe('kill -TERM 1 2>/dev/null; sleep 2; kill -KILL -- -1 2>/dev/null; true');
    expect(api.terminatedPids).toEqual([1]);
  });

  it('returns charts as images, the last value as text, and exceptions with name, value and traceback', async () => {
    const { api, sandbox } = setup();
    api.code = async (_code, opts) => {
      await opts.onStdout?.({ line: 'hello\n', timestamp: 0, error: false } as never);
      return {
        results: [{ png: 'iVBORw0KGgo=' }, { text: '42' }] as never,
        logs: { stdout: ['hello\n'], stderr: [] },
        error: { name: 'ValueError', value: 'bad', traceback: 'Traceback…' } as never,
      };
    };
    const result = await sandbox.runCode({ code: 'x', language: 'python', timeoutMs: 1000 });
    expect(result.results).toEqual([{ type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' }, { type: 'text', text: '42' }]);
    expect(result.error).toEqual({ name: 'ValueError', value: 'bad', traceback: 'Traceback…' });
    expect(result.stdout.text).toBe('hello\n');
  });

  it('reports an execution timeout as a timed-out result', async () => {
    const { api, sandbox } = setup();
    api.failNext = new e2b.TimeoutError("Execution timed out — the 'timeoutMs' option can be used to increase this timeout");
    await expect(sandbox.runCode({ code: 'while True: pass', language: 'python', timeoutMs: 1000 })).resolves.toMatchObject({ timedOut: true });
  });

  it('says plainly when the template has no code interpreter', async () => {
    const { api, sandbox } = setup();
    api.failNext = new e2b.TimeoutError('502 Bad Gateway: This error is likely due to sandbox timeout.');
    await expect(sandbox.runCode({ code: '1', language: 'python', timeoutMs: 1000 })).rejects.toMatchObject({
      code: 'sandbox_error',
      message: expect.stringContaining('has no code interpreter'),
    });
    expect(sandbox.isGone()).toBe(false);
  });

  it('says the same when the interpreter endpoint is missing (404)', async () => {
    const { api, sandbox } = setup();
    api.failNext = new e2b.NotFoundError('404 page not found');
    await expect(sandbox.runCode({ code: '1', language: 'python', timeoutMs: 1000 })).rejects.toMatchObject({ message: expect.stringContaining('E2B_TEMPLATE') });
  });

  it('checks a file’s size before reading it, and refuses directories', async () => {
    const { api, sandbox } = setup();
    api.files.set('/home/user/big.bin', new Uint8Array(5000));
    const reads = jest.spyOn(api, 'readFile');
    await expect(sandbox.readFile('big.bin', 1000)).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining('5000 bytes') });
    await expect(sandbox.readFile('/home/user', 1000)).rejects.toMatchObject({ message: expect.stringContaining('is a directory') });
    expect(reads).not.toHaveBeenCalled();
    await expect(sandbox.readFile('missing.txt', 1000)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('writes files (created, then overwritten) and lists them relative to the directory, hidden ones on request', async () => {
    const { api, sandbox } = setup();
    expect(await sandbox.writeFile('src/a.py', Buffer.from('print(1)'))).toEqual({ path: '/home/user/src/a.py', created: true });
    expect(await sandbox.writeFile('/home/user/src/a.py', Buffer.from('print(2)'))).toEqual({ path: '/home/user/src/a.py', created: false });
    api.dirs.add('/home/user/src');
    api.files.set('/home/user/.env', new Uint8Array(3));
    const listing = await sandbox.listFiles({ path: '.', depth: 2, includeHidden: false, maxEntries: 100 });
    expect(listing.entries.map((e) => [e.path, e.type, e.size])).toEqual([['src/', 'directory', 4096], ['src/a.py', 'file', 8]]);
    const hidden = await sandbox.listFiles({ path: '.', depth: 1, includeHidden: true, maxEntries: 100 });
    expect(hidden.entries.map((e) => e.path)).toEqual(['.env', 'src/']);
  });

  it('still kills a sandbox that was found gone (only the path to it may have failed)', async () => {
    const { api, sandbox } = setup();
    api.failNext = new e2b.TimeoutError('502: This error is likely due to sandbox timeout.');
    await expect(sandbox.readFile('a', 1)).rejects.toMatchObject({ code: 'sandbox_gone' });
    expect(sandbox.isGone()).toBe(true);
    await sandbox.kill();
    expect(api.killed).toBe(true);
  });

  it('is gone after kill, and says so', async () => {
    const { api, sandbox } = setup();
    await sandbox.kill();
    expect(api.killed).toBe(true);
    expect(sandbox.isGone()).toBe(true);
    await expect(sandbox.readFile('a', 1)).rejects.toMatchObject({ code: 'sandbox_gone' });
  });
});
