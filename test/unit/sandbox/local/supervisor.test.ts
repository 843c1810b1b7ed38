/**
 * A sandbox's supervisor (supervisor.ts and its Python side), run straight on the host: what a process
 * started through it sees and reports, groups and signals, failures to start, the channel, port probes,
 * streams to ports (a preview's connections; the forwarder itself: preview-forwarder.test.ts), and a
 * supervisor that misbehaves or dies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { SandboxProcess } from '../../../../functions/mcp/sandbox/local/supervised-process';
import { Supervisor } from '../../../../functions/mcp/sandbox/local/supervisor';
import { STREAM_WINDOW_BYTES } from '../../../../functions/mcp/sandbox/local/supervisor-frames';
import type { SandboxStream } from '../../../../functions/mcp/sandbox/local/supervisor-streams';
import {
  listProcesses,
  markedSleep,
  pollUntil,
  processesWithCmdline,
  SETTLE_MS,
  waitUntilGone,
} from '../../../support/processes';
import { HOST_PATH, startHostSupervisor } from '../../../support/supervisor';

let dir: string;
let supervisor: Supervisor;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'supervisor-'));
  supervisor = await startHostSupervisor(dir);
});
afterAll(() => {
  supervisor.kill();
  rmSync(dir, { recursive: true, force: true });
});

const env = { PATH: HOST_PATH };

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Collects a process's output until `close`. */
function ended(proc: SandboxProcess): Promise<Ended> {
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code: number | null, signal: NodeJS.Signals | null) =>
      resolve({ code, signal, stdout, stderr }),
    );
  });
}

/**
 * A stand-in supervisor in Python: it says it is ready, then runs `onFrame` (lines, indented here) for every frame
 * the server sends it, with `kind`, `key`, `fd` and `n` (a counter it may use), and `send(kind, key, payload, fd)`.
 */
function standIn(onFrame: string[]): string {
  return [
    'import os, struct',
    'H = struct.Struct(">IBIB")',
    'def send(kind, key, payload=b"", fd=0):',
    '    os.write(1, H.pack(len(payload), kind, key, fd) + payload)',
    'send(6, 0, b\'{"ready":true}\')',
    'buf, n = b"", 0',
    'while True:',
    '    chunk = os.read(0, 65536)',
    '    if not chunk: break',
    '    buf += chunk',
    '    while len(buf) >= 10:',
    '        size, kind, key, fd = H.unpack_from(buf)',
    '        if len(buf) < 10 + size: break',
    '        buf = buf[10 + size:]',
    ...onFrame.map((line) => `        ${line}`),
  ].join('\n');
}

function killLeft(fragment: string): void {
  for (const { pid } of processesWithCmdline(fragment)) process.kill(pid, 'SIGKILL');
}

const sh = (command: string, options: { stdin?: boolean; cwd?: string } = {}) =>
  supervisor.spawn({ argv: ['sh', '-c', command], cwd: options.cwd ?? dir, env, stdin: options.stdin });

it('relays both streams in full, the exit code, the working directory and the environment', async () => {
  const proc = supervisor.spawn({
    argv: ['sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" a; echo; pwd >&2; echo "$GREETING" >&2; exit 7'],
    cwd: dir,
    env: { ...env, GREETING: 'hello' },
  });
  const result = await ended(proc);
  expect({
    code: result.code,
    signal: result.signal,
    stdoutBytes: result.stdout.length,
    stderr: result.stderr,
  }).toEqual({ code: 7, signal: null, stdoutBytes: 3_000_001, stderr: `${dir}\nhello\n` });
});

it('writes stdin and closes it', async () => {
  const proc = sh('cat; echo end', { stdin: true });
  proc.stdin?.write('one ');
  proc.stdin?.end('two\n');
  expect((await ended(proc)).stdout).toBe('one two\nend\n');
});

it('gives a process without stdin /dev/null, and default signal dispositions (a closed pipe ends `yes`)', async () => {
  const result = await ended(sh('cat; yes | head -n 1; trap'));
  expect(result).toEqual({ code: 0, signal: null, stdout: 'y\n', stderr: '' });
});

it('reports a program that is not there, and a working directory that is not, as errors with their codes', async () => {
  await expect(ended(supervisor.spawn({ argv: ['no-such-program-here'], cwd: dir, env }))).rejects.toMatchObject({
    code: 'ENOENT',
  });
  await expect(ended(supervisor.spawn({ argv: ['true'], cwd: join(dir, 'missing'), env }))).rejects.toMatchObject({
    code: 'ENOENT',
  });
  // And it keeps working.
  expect((await ended(sh('echo still here'))).stdout).toBe('still here\n');
});

it('signals the whole group, and kills what the leader leaves behind when it exits', async () => {
  const inGroup = markedSleep(1101);
  const proc = sh(`${inGroup} & ${inGroup} & wait`);
  const done = ended(proc);
  await pollUntil(
    () => processesWithCmdline(inGroup).filter((p) => p.argv[0] === 'sleep').length,
    (n) => n === 2,
    SETTLE_MS,
  );
  proc.signal('SIGTERM');
  expect(await done).toMatchObject({ code: null, signal: 'SIGTERM' });
  expect(await waitUntilGone(() => processesWithCmdline(inGroup), SETTLE_MS)).toEqual([]);

  const left = markedSleep(1102);
  expect((await ended(sh(`${left} > /dev/null 2>&1 & echo started`))).stdout).toBe('started\n');
  expect(await waitUntilGone(() => processesWithCmdline(left), SETTLE_MS)).toEqual([]);
});

it('stop() ends a process that ignores SIGTERM', async () => {
  const proc = sh(`trap "" TERM; echo ready; ${markedSleep(1103)}`);
  const done = ended(proc);
  await new Promise((resolve) => proc.stdout.once('data', resolve));
  proc.stop(50);
  expect(await done).toMatchObject({ signal: 'SIGKILL' });
});

it('gives a process a socket on fd 3 when asked, both ways', async () => {
  const proc = supervisor.spawn({
    argv: [
      'python3',
      '-c',
      'import socket; s = socket.socket(fileno=3); f = s.makefile("rwb"); line = f.readline(); ' +
        'f.write(line.upper()); f.flush(); s.shutdown(socket.SHUT_WR)',
    ],
    cwd: dir,
    env,
    channel: true,
  });
  let echoed = '';
  proc.channel?.setEncoding('utf8').on('data', (chunk: string) => (echoed += chunk));
  proc.channel?.write('ping\n');
  expect(await ended(proc)).toMatchObject({ code: 0, stderr: '' });
  expect(echoed).toBe('PING\n');
});

it('does not leak its own descriptors or the channel into processes that did not ask for them', async () => {
  const result = await ended(sh('ls /proc/self/fd | sort -n | tr "\\n" " "'));
  // 0-2, and the descriptor ls reads the directory through.
  expect(result.stdout).toBe('0 1 2 3 ');
  expect((await ended(sh('exec 3<&- ; ls /proc/self/fd | sort -n | tr "\\n" " "'))).stdout).toBe('0 1 2 3 ');
});

describe("windows on a process's descriptors", () => {
  it('holds a process whose output nobody reads once a window of it is on its way, and loses nothing', async () => {
    // 80 chunks of 64 KiB to stdout, each followed by its number on stderr; stdout is not read at first.
    const proc = supervisor.spawn({
      argv: [
        'python3',
        '-c',
        'import sys\nfor i in range(80):\n    sys.stdout.buffer.write(b"x" * 65536); sys.stdout.flush(); ' +
          'sys.stderr.write("%d\\n" % i); sys.stderr.flush()',
      ],
      cwd: dir,
      env,
    });
    let written = -1;
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) if (line !== '') written = Number(line);
    });
    const closed = new Promise((resolve) => proc.once('close', resolve));
    await pollUntil(
      () => written,
      (n) => n >= 2,
      SETTLE_MS,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The window (256 KiB), the pipe (64 KiB) and the stream's buffer: a handful of chunks, never all 80.
    expect(written).toBeLessThan(16);
    expect(proc.stdout.readableLength).toBeLessThanOrEqual(STREAM_WINDOW_BYTES + 64 * 1024);
    let bytes = 0;
    proc.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length));
    await closed;
    expect({ written, bytes }).toEqual({ written: 79, bytes: 80 * 65536 });
  });

  it('writes input only as fast as the process reads it, and all of it', async () => {
    const go = join(dir, 'go-input');
    const proc = sh(`while [ ! -e ${go} ]; do sleep 0.05; done; wc -c`, { stdin: true });
    const done = ended(proc);
    let written = false;
    proc.stdin?.end(Buffer.alloc(4 * 1024 * 1024, 'y'), () => (written = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The process reads nothing yet: the window went to the supervisor, the rest waits here.
    expect(written).toBe(false);
    expect(proc.stdin?.writableLength).toBeGreaterThan(2 * 1024 * 1024);
    writeFileSync(go, '');
    expect((await done).stdout.trim()).toBe(String(4 * 1024 * 1024));
    expect(written).toBe(true);
  });

  it("is killed when it sends more of a process's output than the window without an acknowledgement", async () => {
    // A stand-in that starts nothing: it answers a SPAWN with a pid, then sends 400,000 bytes of its stdout.
    const script = standIn([
      'if kind != 1: continue',
      'send(6, key, b\'{"pid":4242}\')',
      'for _ in range(2): send(2, key, b"x" * 200000, 1)',
    ]);
    const fake = await Supervisor.start({ file: 'python3', args: ['-c', script], env, cwd: dir });
    const proc = fake.spawn({ argv: ['true'], cwd: dir, env });
    let held = 0;
    proc.stdout.pause();
    proc.stdout.on('data', (chunk: Buffer) => (held += chunk.length));
    proc.stdout.pause();
    expect(await ended(proc)).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(fake.alive).toBe(false);
    expect(held).toBeLessThanOrEqual(STREAM_WINDOW_BYTES);
  });

  it('is killed when it stops reading its stdin while more than its backlog waits there', async () => {
    const own = await startHostSupervisor(dir, { unresponsiveMs: 100 });
    const first = own.spawn({
      argv: ['sh', '-c', `echo $PPID; exec ${markedSleep(1106)}`],
      cwd: dir,
      env,
      stdin: true,
    });
    const firstEnded = ended(first);
    const ppid = Number(
      await new Promise<string>((resolve) => first.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()))),
    );
    const others = Array.from({ length: 6 }, () =>
      own.spawn({ argv: ['sh', '-c', `exec ${markedSleep(1106)}`], cwd: dir, env, stdin: true }),
    );
    await Promise.all(others.map((proc) => new Promise((resolve) => proc.once('spawn', resolve))));
    process.kill(ppid, 'SIGSTOP');
    try {
      // Each input's window (256 KiB) goes to the stopped supervisor's stdin: over 1 MiB there, and none of it read.
      for (const proc of [first, ...others]) proc.stdin?.write(Buffer.alloc(300_000, 'z'));
      expect(await firstEnded).toMatchObject({ code: null, signal: 'SIGKILL' });
      expect(own.alive).toBe(false);
      expect(await waitUntilGone(() => listProcesses().filter((p) => p.pid === ppid), SETTLE_MS)).toEqual([]);
    } finally {
      own.kill();
      killLeft(markedSleep(1106));
    }
  });
});

it('probes ports from where the processes are', async () => {
  const server: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  expect(await supervisor.probe(port)).toBe(true);
  await new Promise((resolve) => server.close(resolve));
  expect(await supervisor.probe(port)).toBe(false);
});

/**
 * What a stream went through until `close`: its events in order, and the bytes it carried out (acknowledged as
 * they come, unless `acknowledge` is false: a reader that never keeps up).
 */
function streamed(stream: SandboxStream, acknowledge = true): Promise<{ events: string[]; data: string }> {
  const events: string[] = [];
  let data = '';
  stream.on('connect', () => events.push('connect'));
  stream.on('refused', (code: string) => events.push(`refused ${code}`));
  stream.on('data', (chunk: Buffer) => {
    data += chunk.toString();
    if (acknowledge) stream.consumed(chunk.length);
  });
  stream.on('end', () => events.push('end'));
  return new Promise((resolve) => stream.once('close', () => resolve({ events: [...events, 'close'], data })));
}

it('carries a stream to a port where the processes are, both ways, and refuses one where nothing listens', async () => {
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    let got = '';
    socket.on('data', (chunk: Buffer) => (got += chunk.toString()));
    socket.on('end', () => socket.end(`echo: ${got}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const stream = supervisor.connect(port);
  const done = streamed(stream);
  stream.write(Buffer.from('hello'));
  stream.end();
  expect(await done).toEqual({ events: ['connect', 'end', 'close'], data: 'echo: hello' });
  await new Promise((resolve) => server.close(resolve));
  expect(await streamed(supervisor.connect(port))).toEqual({ events: ['refused ECONNREFUSED', 'close'], data: '' });
  expect(supervisor.alive).toBe(true);
});

describe('a supervisor that goes', () => {
  it('ends its processes as killed when it dies, and refuses new ones', async () => {
    const own = await startHostSupervisor(dir);
    const sleep = markedSleep(1104);
    const proc = own.spawn({ argv: ['sh', '-c', sleep], cwd: dir, env });
    const done = ended(proc);
    await new Promise((resolve) => proc.once('spawn', resolve));
    own.kill();
    expect(await done).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(own.alive).toBe(false);
    await expect(ended(own.spawn({ argv: ['true'], cwd: dir, env }))).rejects.toMatchObject({ code: 'ESRCH' });
    expect(await own.probe(1)).toBe(false);
    killLeft(sleep);
  });

  it(
    'is killed, with what it started, when it is stopped (a process of the sandbox can) and a stopped process is ' +
      'not reported gone',
    async () => {
      const own = await startHostSupervisor(dir, { unresponsiveMs: 100 });
      // Its pid is the parent pid of what it starts; the test stops it as the sandbox's user could.
      const first = own.spawn({ argv: ['sh', '-c', `echo $PPID; exec ${markedSleep(1105)}`], cwd: dir, env });
      const firstEnded = ended(first);
      const ppid = Number(
        await new Promise<string>((resolve) => first.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()))),
      );
      process.kill(ppid, 'SIGSTOP');
      const waiting = own.spawn({ argv: ['true'], cwd: dir, env });
      const outcome = ended(waiting);
      waiting.stop(50);
      await expect(outcome).rejects.toMatchObject({ code: 'ESRCH' });
      expect(own.alive).toBe(false);
      expect(await firstEnded).toMatchObject({ code: null, signal: 'SIGKILL' });
      expect(await waitUntilGone(() => listProcesses().filter((p) => p.pid === ppid), SETTLE_MS)).toEqual([]);
      // On the host nothing takes its processes along (in a sandbox its pid namespace does): the test does.
      killLeft(markedSleep(1105));
    },
  );

  it('goes once nothing of its own has run for idleMs, and not while something runs', async () => {
    const own = await startHostSupervisor(dir, { idleMs: 50 });
    const sleeping = own.spawn({ argv: ['sleep', '0.5'], cwd: dir, env });
    const done = ended(sleeping);
    await new Promise((resolve) => sleeping.once('spawn', resolve));
    // Well past idleMs while the process runs: still there, and its process ends normally.
    expect(await done).toMatchObject({ code: 0, signal: null });
    expect(own.alive).toBe(true);
    await pollUntil(
      () => own.alive,
      (alive) => !alive,
      SETTLE_MS,
    );
  });

  it('is killed when it sends a frame larger than any it writes', async () => {
    // A stand-in that says it is ready, then claims a 2 MiB frame.
    const fake = await Supervisor.start({
      file: 'python3',
      args: [
        '-c',
        'import os, struct, time; os.write(1, struct.pack(">IBIB", 14, 6, 0, 0) + b\'{"ready":true}\'); ' +
          'os.write(1, struct.pack(">IBIB", 2 << 20, 2, 1, 1)); time.sleep(60)',
      ],
      env,
      cwd: dir,
    });
    const outcome = ended(fake.spawn({ argv: ['true'], cwd: dir, env }));
    await expect(outcome).rejects.toMatchObject({ code: 'ESRCH' });
    expect(fake.alive).toBe(false);
  });

  it('ignores stream frames for ids it never opened, and is killed when a stream sends past its window', async () => {
    // A stand-in: the first CONNECT is answered, preceded by frames for an unknown id, then "hello"; the
    // second by 400,000 bytes nobody acknowledged (the window is 262,144).
    const script = standIn([
      'if kind != 9: continue',
      'n += 1',
      'for k in (10, 2, 3, 11, 12): send(k, 999, b"1")',
      'send(10, key)',
      'if n == 1: send(2, key, b"hello")',
      'else: send(2, key, b"x" * 200000); send(2, key, b"x" * 200000)',
    ]);
    const fake = await Supervisor.start({ file: 'python3', args: ['-c', script], env, cwd: dir });
    const first = fake.connect(1);
    const firstDone = streamed(first);
    await new Promise((resolve) => first.once('data', resolve));
    expect(fake.alive).toBe(true);
    const second = await streamed(fake.connect(2), false);
    expect({ events: second.events, bytes: second.data.length }).toEqual({
      events: ['connect', 'close'],
      bytes: 200_000,
    });
    expect(fake.alive).toBe(false);
    expect(await firstDone).toEqual({ events: ['connect', 'close'], data: 'hello' });
  });

  it('does not go idle while a stream is open', async () => {
    const server: Server = createServer((socket) => socket.on('data', (chunk: Buffer) => socket.write(chunk)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const own = await startHostSupervisor(dir, { idleMs: 50 });
    const stream = own.connect((server.address() as { port: number }).port);
    const done = streamed(stream);
    // Echoed pings, well past idleMs: each one comes back, so it is still there.
    for (let i = 0; i < 5; i += 1) {
      const echoed = new Promise((resolve) => stream.once('data', resolve));
      stream.write(Buffer.from(`ping ${i}`));
      expect(String(await echoed)).toBe(`ping ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(own.alive).toBe(true);
    stream.destroy();
    await done;
    await pollUntil(
      () => own.alive,
      (alive) => !alive,
      SETTLE_MS,
    );
    expect(own.alive).toBe(false);
    await new Promise((resolve) => server.close(resolve));
  });
});
