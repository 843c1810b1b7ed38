/**
 * The local E2B service's code interpreter (test/support/e2b-local/interpreter.ts with kernel.py) over real
 * HTTP: through the real `@e2b/code-interpreter` SDK (a stub control plane answers its connect; the sandbox
 * URL is this server), and raw, for the exact NDJSON lines and the status codes. Kernels run here as plain
 * host processes.
 */
import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NotFoundError, Sandbox, type Execution } from '@e2b/code-interpreter';

import { createInterpreter, type Interpreter, type InterpreterSpawn } from '../support/e2b-local/interpreter';
import { pollUntil, SETTLE_MS } from '../support/processes';

/** A 1×1 PNG. */
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const JPEG_B64 = Buffer.from('jpeg bytes').toString('base64');
/**
 * For a runCode that is answered with an error status: the SDK leaves its request timer running then (it is
 * cleared only after a successful answer), which would hold Jest open for a minute.
 */
const NO_REQUEST_TIMER = { requestTimeoutMs: 0 };
/** A class with every image and text format IPython's display formatter knows. */
const RICH_CLASS = `import base64
class Rich:
    def _repr_png_(self):
        return base64.b64decode("${PNG_B64}")
    def _repr_jpeg_(self):
        return b"jpeg bytes"
    def _repr_html_(self):
        return "<b>rich</b>"
    def _repr_json_(self):
        return {"a": 1}
`;

/** `child_process.spawn` as a SandboxProcess; every child is kept for the checks that nothing is left. */
function hostSpawn(children: ChildProcess[]): InterpreterSpawn {
  return async (argv, opts) => {
    const child = spawnChild(argv[0] as string, argv.slice(1), {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: 'pipe',
    });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    child.stdin.on('error', () => undefined);
    const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
      child.once('close', (exitCode, signal) => resolve({ exitCode, signal }));
    });
    return {
      pid: child.pid as number,
      onStdout: (listener) => child.stdout.on('data', listener),
      onStderr: (listener) => child.stderr.on('data', listener),
      write: (data) => child.stdin.write(data),
      closeStdin: () => child.stdin.end(),
      kill: (signal) => child.kill(signal),
      exited,
    };
  };
}

interface Service {
  url: string;
  interpreter: Interpreter;
  children: ChildProcess[];
  close(): Promise<void>;
}

/** The interpreter behind a node:http server on 127.0.0.1:0, with the two control-plane calls the SDK makes. */
async function startService(flavor: 'e2b' | 'alibaba'): Promise<Service> {
  const children: ChildProcess[] = [];
  const interpreter = createInterpreter(hostSpawn(children), { flavor });
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname;
    const sandbox = /^(?:\/v2)?\/sandboxes\/([^/]+)(\/connect)?$/.exec(path);
    if (sandbox !== null) {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          sandboxID: sandbox[1],
          templateID: 'code-interpreter-v1',
          clientID: 'local',
          envdVersion: '0.4.0',
          state: 'running',
        }),
      );
      return;
    }
    void interpreter.handle(req, res, path);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    interpreter,
    children,
    async close() {
      await interpreter.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function connect(service: Service): Promise<Sandbox> {
  return Sandbox.connect('sbx-local', { apiKey: 'e2b_local_test_key', apiUrl: service.url, sandboxUrl: service.url });
}

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** No signal waits to be delivered to `pid` (so a SIGINT sent to it has been handled). */
function noSignalPending(pid: number): boolean {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return /^SigPnd:\s*0+$/m.test(status) && /^ShdPnd:\s*0+$/m.test(status);
}

/** Python that waits (at most 30 s) for `path` to exist, printing `before` first and `gate open` after. */
function gatedCode(path: string, before: string): string {
  return `import os, time
print(${JSON.stringify(before)}, flush=True)
for _ in range(600):
    if os.path.exists(${JSON.stringify(path)}):
        break
    time.sleep(0.05)
print("gate open" if os.path.exists(${JSON.stringify(path)}) else "gate never opened")`;
}

async function postExecute(url: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/execute`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

async function ndjson(url: string, body: unknown): Promise<string[]> {
  const res = await postExecute(url, body);
  expect(res.status).toBe(200);
  return (await res.text()).split('\n').filter((l) => l !== '');
}

describe('the local code interpreter through the code-interpreter SDK', () => {
  let service: Service;
  let sandbox: Sandbox;
  let dir: string;
  beforeAll(async () => {
    service = await startService('e2b');
    sandbox = await connect(service);
    dir = mkdtempSync(join(tmpdir(), 'interpreter-test-'));
  });
  afterAll(async () => {
    await service?.close();
    expect(service.children.filter((c) => c.exitCode === null && c.signalCode === null)).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs code in the default context: state kept, printed output, the last expression as the main result', async () => {
    const first = await sandbox.runCode('x = 1\nx += 1\nprint("side effect")\nx');
    expect(first.text).toBe('2');
    expect(first.logs).toEqual({ stdout: ['side effect\n'], stderr: [] });
    expect(first.results).toHaveLength(1);
    expect(first.results[0]?.isMainResult).toBe(true);
    expect(first.error).toBeUndefined();
    const second = await sandbox.runCode('x * 21');
    expect(second.text).toBe('42');
    expect(second.executionCount).toBe((first.executionCount as number) + 1);
    expect((await sandbox.runCode('x', { language: 'python' })).text).toBe('2');
    expect((await sandbox.runCode('import sys\nprint("to stderr", file=sys.stderr)')).logs).toEqual({
      stdout: [],
      stderr: ['to stderr\n'],
    });
  });

  it('returns a string result without its quotes, as E2B does, and no result for None or a trailing semicolon', async () => {
    expect((await sandbox.runCode('"hi there"')).text).toBe('hi there');
    expect((await sandbox.runCode("'single'")).text).toBe('single');
    expect((await sandbox.runCode('[1, "a"]')).text).toBe("[1, 'a']");
    expect((await sandbox.runCode('None')).results).toEqual([]);
    expect((await sandbox.runCode('1 + 1;')).results).toEqual([]);
    expect((await sandbox.runCode('y = 3')).results).toEqual([]);
  });

  it('streams output as it is produced, before the code ends', async () => {
    const gate = join(dir, 'stream-gate');
    const execution = await sandbox.runCode(gatedCode(gate, 'before'), {
      onStdout: (msg) => {
        if (msg.line.includes('before')) writeFileSync(gate, '');
      },
    });
    expect(execution.logs.stdout.join('')).toBe('before\ngate open\n');
  });

  it('reports an exception as the error of its execution, and goes on with the state kept', async () => {
    const errors: string[] = [];
    const failed = await sandbox.runCode('kept = 5\n1/0', { onError: (e) => void errors.push(e.name) });
    expect(failed.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    expect(failed.error?.traceback).toContain('----> 2 1/0');
    expect(failed.error?.traceback).toContain('ZeroDivisionError: division by zero');
    expect(errors).toEqual(['ZeroDivisionError']);
    expect((await sandbox.runCode('def f(:')).error?.name).toBe('SyntaxError');
    expect((await sandbox.runCode('import sys\nsys.exit(3)')).error).toMatchObject({ name: 'SystemExit', value: '3' });
    expect((await sandbox.runCode('kept')).text).toBe('5');
  });

  it('gives the formats of _repr_*_ methods (images in base64), and display() results that are not the main one', async () => {
    const main = await sandbox.runCode(`${RICH_CLASS}Rich()`);
    expect(main.results).toHaveLength(1);
    const result = main.results[0];
    expect(result).toMatchObject({
      isMainResult: true,
      png: PNG_B64,
      jpeg: JPEG_B64,
      html: '<b>rich</b>',
      json: { a: 1 },
    });
    expect(result?.text).toMatch(/^<__main__\.Rich object at 0x/);
    expect(result?.formats()).toEqual(['html', 'png', 'jpeg', 'json']);
    const shown = await sandbox.runCode('display(Rich())\ndisplay("shown")\n7');
    expect(shown.results.map((r) => [r.isMainResult, r.text, r.png !== undefined])).toEqual([
      [false, expect.stringMatching(/^<__main__\.Rich/), true],
      [false, 'shown', false],
      [true, '7', false],
    ]);
  });

  it('applies env vars to one execution only', async () => {
    expect((await sandbox.runCode('import os\nos.environ.get("ONLY_NOW")', { envs: { ONLY_NOW: 'yes' } })).text).toBe(
      'yes',
    );
    expect((await sandbox.runCode('os.environ.get("ONLY_NOW") is None')).text).toBe('True');
    const home = process.env.HOME as string;
    expect((await sandbox.runCode('os.environ["HOME"]', { envs: { HOME: '/elsewhere' } })).text).toBe('/elsewhere');
    expect((await sandbox.runCode('os.environ["HOME"]')).text).toBe(home);
  });

  it('creates contexts with their own state and cwd, lists, restarts (state lost, same id) and removes them', async () => {
    const context = await sandbox.createCodeContext({ cwd: dir });
    expect(context).toEqual({ id: expect.any(String), language: 'python', cwd: dir });
    expect((await sandbox.runCode('import os\nsecret = 1\nos.getcwd()', { context })).text).toBe(dir);
    expect((await sandbox.runCode('"secret" in globals()')).text).toBe('False');
    const listed = await sandbox.listCodeContexts();
    expect(listed).toContainEqual(context);
    expect(listed.filter((c) => c.cwd === '/home/user' && c.language === 'python')).toHaveLength(1);

    const pid = Number((await sandbox.runCode('os.getpid()', { context })).text);
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain('ipykernel_launcher');
    await sandbox.restartCodeContext(context);
    expect(alive(pid)).toBe(false);
    // As on E2B, the restarted kernel is where Jupyter starts kernels (/home/user; / on a host without it).
    const restarted = await sandbox.runCode('import os\nprint(os.getcwd())\n"secret" in globals()', { context });
    expect(restarted.text).toBe('False');
    expect(restarted.logs.stdout).toEqual([existsSync('/home/user') ? '/home/user\n' : '/\n']);
    expect(await sandbox.listCodeContexts()).toContainEqual(context);
    expect(restarted.executionCount).toBe(1);
    const newPid = Number((await sandbox.runCode('os.getpid()', { context })).text);
    expect(newPid).not.toBe(pid);

    await sandbox.removeCodeContext(context);
    expect(
      await pollUntil(
        () => alive(newPid),
        (a) => !a,
        SETTLE_MS,
      ),
    ).toBe(false);
    await expect(sandbox.runCode('1', { context, ...NO_REQUEST_TIMER })).rejects.toThrow(NotFoundError);
    await expect(sandbox.runCode('1', { context, ...NO_REQUEST_TIMER })).rejects.toThrow(
      `Context ${context.id} not found`,
    );
    expect(await sandbox.listCodeContexts()).not.toContainEqual(context);
  });

  it('refuses a language it has no kernel for, as E2B does (a 500)', async () => {
    await expect(sandbox.createCodeContext({ language: 'javascript' })).rejects.toThrow('500');
    await expect(sandbox.runCode('1', { language: 'r', ...NO_REQUEST_TIMER })).rejects.toThrow('500');
  });

  it('takes SIGINT during an execution as KeyboardInterrupt, keeps the state, and ignores SIGINT while idle', async () => {
    const context = await sandbox.createCodeContext({ cwd: dir });
    const pid = Number((await sandbox.runCode('import os, time\nkept = "yes"\nos.getpid()', { context })).text);
    // As a person presses Ctrl-C again: a SIGINT that lands just before time.sleep starts is taken only when the
    // sleep returns (interpreter.ts, INTERRUPT_REPEAT_MS), so it is sent again while the execution runs.
    let again: NodeJS.Timeout | undefined;
    const interrupted = await sandbox
      .runCode('print("sleeping", flush=True)\ntime.sleep(600)', {
        context,
        onStdout: (msg) => {
          if (!msg.line.includes('sleeping')) return;
          process.kill(pid, 'SIGINT');
          again = setInterval(() => process.kill(pid, 'SIGINT'), 500);
        },
      })
      .finally(() => clearInterval(again));
    expect(interrupted.error).toMatchObject({ name: 'KeyboardInterrupt', value: '' });
    expect(interrupted.error?.traceback).toContain('----> 2 time.sleep(600)');
    process.kill(pid, 'SIGINT');
    expect(
      await pollUntil(
        () => noSignalPending(pid),
        (done) => done,
        SETTLE_MS,
      ),
    ).toBe(true);
    const after = await sandbox.runCode('kept', { context });
    expect(after.error).toBeUndefined();
    expect(after.text).toBe('yes');
    expect(Number((await sandbox.runCode('os.getpid()', { context })).text)).toBe(pid);
    await sandbox.removeCodeContext(context);
  });

  it('runs the executions of one context one after another', async () => {
    const context = await sandbox.createCodeContext({ cwd: dir });
    await sandbox.runCode('log = []', { context });
    const gate = join(dir, 'serial-gate');
    let second: Promise<Execution> | undefined;
    const first = await sandbox.runCode(
      `log.append("first")\n${gatedCode(gate, 'first started')}\nlog.append("first done")`,
      {
        context,
        onStdout: (msg) => {
          if (!msg.line.includes('first started')) return;
          second = sandbox.runCode('log.append("second")\nlog', { context });
          setImmediate(() => writeFileSync(gate, ''));
        },
      },
    );
    expect(first.logs.stdout.join('')).toBe('first started\ngate open\n');
    const secondDone = await (second as Promise<Execution>);
    expect(secondDone.text).toBe("['first', 'first done', 'second']");
    expect(secondDone.executionCount).toBe((first.executionCount as number) + 1);
    await sandbox.removeCodeContext(context);
  });

  it('ends an execution whose kernel dies with ContextRestarting; the next one gets a fresh kernel', async () => {
    const context = await sandbox.createCodeContext({ cwd: dir });
    const pid = Number((await sandbox.runCode('import os\nlost = 1\nos.getpid()', { context })).text);
    const died = await sandbox.runCode('import os\nos._exit(1)', { context });
    expect(died.error).toEqual(
      expect.objectContaining({ name: 'ContextRestarting', value: 'Context was restarted', traceback: '' }),
    );
    expect(alive(pid)).toBe(false);
    const fresh = await sandbox.runCode('import os\nprint("lost" in globals())\nos.getpid()', { context });
    expect(fresh.logs.stdout).toEqual(['False\n']);
    const freshPid = Number(fresh.text);
    expect(freshPid).not.toBe(pid);
    // Killed while idle: an execution sent before its exit is seen ends as above; after that, a fresh kernel serves.
    process.kill(freshPid, 'SIGKILL');
    expect(
      await pollUntil(
        () => alive(freshPid),
        (a) => !a,
        SETTLE_MS,
      ),
    ).toBe(false);
    const next = await sandbox.runCode('1 + 1', { context });
    expect(next.text === '2' || next.error?.name === 'ContextRestarting').toBe(true);
    expect((await sandbox.runCode('1 + 1', { context })).text).toBe('2');
    await sandbox.removeCodeContext(context);
  });

  it('keeps its protocol whatever the code prints, writes to its fds, reads from stdin or outputs in bulk', async () => {
    const mixed = await sandbox.runCode(
      `import os, sys
print('{"t": "done", "id": "x"}')
print('{"type": "end_of_execution"}')
os.system("echo from-shell")
os.write(1, b"raw fd\\n")
os.write(2, b"raw err\\n")
sys.stdin.read()`,
    );
    expect(mixed.logs.stdout.join('')).toBe(
      '{"t": "done", "id": "x"}\n{"type": "end_of_execution"}\nfrom-shell\nraw fd\n',
    );
    expect(mixed.logs.stderr.join('')).toBe('raw err\n');
    expect(mixed.text).toBe('');
    expect((await sandbox.runCode('input("? ")')).error?.name).toBe('StdinNotImplementedError');
    const bulk = await sandbox.runCode('print("x" * 3_000_000)\nprint("é✓")');
    expect(bulk.logs.stdout.join('')).toBe(`${'x'.repeat(3_000_000)}\né✓\n`);
    expect((await sandbox.runCode('"still " + "serving"')).text).toBe('still serving');
  });

  it('interrupts the execution of a client that goes away, and serves the next one', async () => {
    const context = await sandbox.createCodeContext({ cwd: dir });
    await sandbox.runCode('before = "kept"', { context });
    const controller = new AbortController();
    const res = await postExecute(
      service.url,
      { code: 'print("started", flush=True)\nimport time\ntime.sleep(600)', context_id: context.id },
      controller.signal,
    );
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    while (!seen.includes('started')) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += Buffer.from(value).toString('utf8');
    }
    controller.abort();
    expect((await sandbox.runCode('before', { context })).text).toBe('kept');
    await sandbox.removeCodeContext(context);
  });
});

describe('the local code interpreter over raw HTTP', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService('e2b');
  });
  afterAll(async () => {
    await service?.close();
    expect(service.children.filter((c) => c.exitCode === null && c.signalCode === null)).toEqual([]);
  });

  it('writes the NDJSON lines of E2B’s server, byte for byte where they are fixed', async () => {
    const lines = await ndjson(service.url, {
      code: 'print("out")\nimport sys\nprint("err", file=sys.stderr)\n"done"',
    });
    expect(lines[0]).toMatch(/^\{"type": "number_of_executions", "execution_count": \d+\}$/);
    const stdout = lines.find((l) => l.includes('"stdout"')) as string;
    expect(stdout).toMatch(
      /^\{"type": "stdout", "text": "out\\n", "timestamp": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00"\}$/,
    );
    expect(lines.find((l) => l.includes('"stderr"'))).toMatch(
      /^\{"type": "stderr", "text": "err\\n", "timestamp": "[^"]+"\}$/,
    );
    expect(lines.at(-2)).toBe('{"type": "result", "text": "done", "extra": {}, "is_main_result": true}');
    expect(lines.at(-1)).toBe('{"type": "end_of_execution"}');

    const failed = await ndjson(service.url, { code: '1/0' });
    expect(failed.at(-2)).toMatch(
      /^\{"type": "error", "name": "ZeroDivisionError", "value": "division by zero", "traceback": ".*"\}$/,
    );
    expect(failed.at(-1)).toBe('{"type": "end_of_execution"}');

    const unicode = await ndjson(service.url, { code: 'print("h\u00e9llo \u2713")' });
    expect(unicode.find((l) => l.includes('"stdout"'))).toContain('"text": "h\\u00e9llo \\u2713\\n"');
    expect(unicode.every((l) => /^[\x20-\x7e]*$/.test(l))).toBe(true);
  });

  it('answers bad requests with the statuses E2B’s server uses', async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const unknown = await postExecute(service.url, { code: '1', context_id: 'nope' });
    expect([unknown.status, await unknown.text()]).toEqual([404, 'Context nope not found']);
    const both = await postExecute(service.url, { code: '1', context_id: 'nope', language: 'python' });
    expect([both.status, await both.text()]).toEqual([400, 'Only one of context_id or language can be provided']);
    expect((await postExecute(service.url, { context_id: 'nope' })).status).toBe(422);
    expect((await postExecute(service.url, { code: 1 })).status).toBe(422);
    const cobol = await post('/contexts', { language: 'cobol' });
    expect(cobol.status).toBe(500);
    expect(await cobol.text()).toMatch(
      /^Failed to create context: \{"message": "The 'cobol' kernel is not available\..*", "short_message": "cobol not found"\}$/,
    );
    expect((await post('/contexts/nope/restart', {})).status).toBe(404);
    expect((await fetch(`${service.url}/contexts/nope`, { method: 'DELETE' })).status).toBe(404);
    const health = await fetch(`${service.url}/health`);
    expect([health.status, await health.json()]).toEqual([200, 'OK']);
    expect((await fetch(`${service.url}/nowhere`)).status).toBe(404);
  });

  it('ends a running execution with UnexpectedEndOfExecution when its context restarts', async () => {
    const created = await fetch(`${service.url}/contexts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ cwd: tmpdir() }),
    });
    const { id } = (await created.json()) as { id: string };
    const res = await postExecute(service.url, {
      code: 'print("started", flush=True)\nimport time\ntime.sleep(600)',
      context_id: id,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let body = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      body += Buffer.from(value).toString('utf8');
      if (body.includes('started')) {
        const restart = await fetch(`${service.url}/contexts/${id}/restart`, { method: 'POST' });
        expect([restart.status, await restart.json()]).toEqual([200, null]);
      }
    }
    const lines = body.split('\n').filter((l) => l !== '');
    expect(lines.slice(-2)).toEqual([
      '{"type": "error", "name": "UnexpectedEndOfExecution", "value": "Connection to the execution was closed before the execution was finished", "traceback": ""}',
      '{"type": "end_of_execution"}',
    ]);
    const after = await ndjson(service.url, { code: '"fresh"', context_id: id });
    expect(after[0]).toBe('{"type": "number_of_executions", "execution_count": 1}');
  });

  it('kills every kernel on stop', async () => {
    const other = await startService('e2b');
    const sandbox = await connect(other);
    const pids = [Number((await sandbox.runCode('import os\nos.getpid()')).text)];
    for (let i = 0; i < 2; i += 1) {
      const context = await sandbox.createCodeContext({ cwd: tmpdir() });
      pids.push(Number((await sandbox.runCode('import os\nos.getpid()', { context })).text));
    }
    let started!: () => void;
    const sleeping = new Promise<void>((resolve) => {
      started = resolve;
    });
    const running = sandbox
      .runCode('import time\nprint("sleeping", flush=True)\ntime.sleep(600)', { onStdout: () => started() })
      .catch((err: unknown) => err);
    await sleeping;
    await other.close();
    expect(pids.filter(alive)).toEqual([]);
    expect(other.children.filter((c) => c.exitCode === null && c.signalCode === null)).toEqual([]);
    const ended = await running;
    expect(ended instanceof Error || (ended as Execution).error?.name === 'UnexpectedEndOfExecution').toBe(true);
  });
});

describe('the local code interpreter as Alibaba Cloud’s (charts only as files)', () => {
  let service: Service;
  let sandbox: Sandbox;
  let dir: string;
  beforeAll(async () => {
    service = await startService('alibaba');
    sandbox = await connect(service);
    dir = mkdtempSync(join(tmpdir(), 'interpreter-test-'));
  });
  afterAll(async () => {
    await service?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('returns results with text, html and json only, never image data', async () => {
    const execution = await sandbox.runCode(`${RICH_CLASS}display(Rich())\nRich()`);
    expect(execution.results).toHaveLength(2);
    for (const result of execution.results) {
      expect(result).toMatchObject({ html: '<b>rich</b>', json: { a: 1 } });
      expect([result.png, result.jpeg, result.chart]).toEqual([undefined, undefined, undefined]);
      expect(result.text).toMatch(/^<__main__\.Rich object/);
    }
    expect(execution.results.map((r) => r.isMainResult)).toEqual([false, true]);
  });

  it('lets code save an image as a file, read back through the filesystem', async () => {
    const path = join(dir, 'chart.png');
    const execution = await sandbox.runCode(
      `import base64\nwith open(${JSON.stringify(path)}, "wb") as f:\n    f.write(base64.b64decode("${PNG_B64}"))\nprint("saved")`,
    );
    expect(execution.logs.stdout).toEqual(['saved\n']);
    expect(readFileSync(path).toString('base64')).toBe(PNG_B64);
  });
});
