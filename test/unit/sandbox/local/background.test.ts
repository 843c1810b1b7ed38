/** Local background processes: a process reported exited has all its output counted and readable. */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';

import { createLocalBackgroundProcesses } from '../../../../functions/mcp/sandbox/local/background';
import type { Supervisor } from '../../../../functions/mcp/sandbox/local/supervisor';
import { pollUntil, SETTLE_MS } from '../../../support/processes';
import { startHostSupervisor } from '../../../support/supervisor';

const MIB = 1024 * 1024;
let dir: string;
let supervisor: Supervisor;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bg-'));
  supervisor = await startHostSupervisor(dir);
});
afterAll(() => {
  supervisor.kill();
  rmSync(dir, { recursive: true, force: true });
});

const spec = (command: string) => () =>
  supervisor.spawn({ argv: ['sh', '-c', command], env: { PATH: '/usr/bin:/bin' }, cwd: dir, stdin: true });

it('says "exited" only once every byte the process wrote is in its log, for starts side by side too', async () => {
  const processes = createLocalBackgroundProcesses(join(dir, 'logs'));
  // A flood that ends at once: the exit arrives while most of it is still on its way to the log.
  const started = await Promise.all(
    [0, 1, 2].map(() => processes.start('flood', spec(`head -c ${6 * MIB} /dev/zero; printf END; exit 3`))),
  );
  expect(new Set(started.map((p) => p.id)).size).toBe(3);
  for (const { id } of started) {
    const done = await pollUntil(
      async () => (await processes.list()).find((p) => p.id === id),
      (p) => p?.state === 'exited',
      SETTLE_MS,
      5,
    );
    expect({ state: done?.state, exitCode: done?.exitCode, outputBytes: done?.outputBytes }).toEqual({
      state: 'exited',
      exitCode: 3,
      outputBytes: 6 * MIB + 3,
    });
    expect((await processes.read(id, undefined, 3)).text).toBe('END');
  }
});

it(
  'reports a process exited only with every byte it wrote counted, ' + 'when the exit comes right behind its output',
  async () => {
    const processes = createLocalBackgroundProcesses(join(dir, 'fake-logs'));
    const child = Object.assign(new EventEmitter(), {
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      stdin: null,
      signal: () => undefined,
      ended: false,
    });
    const started = processes.start('burst', () => {
      setImmediate(() => child.emit('spawn'));
      return child;
    });
    const { id } = await started;
    // Many chunks and the exit in one go: the log is still being written when the exit is seen.
    for (let i = 0; i < 64; i += 1) child.stdout.write(Buffer.alloc(64 * 1024, 'a'));
    child.stdout.write('END');
    // As a sandbox process does: its streams end, and it closes before they were read to the end.
    child.stdout.end();
    child.stderr.end();
    await new Promise((resolve) => setImmediate(resolve));
    child.emit('close', 0, null);
    const seen: Array<{ state: string; outputBytes: number }> = [];
    await pollUntil(
      async () => (await processes.list()).find((p) => p.id === id),
      (p) => {
        if (p !== undefined) seen.push({ state: p.state, outputBytes: p.outputBytes });
        return p?.state === 'exited';
      },
      SETTLE_MS,
      0,
    );
    expect(seen.filter((p) => p.state === 'exited')).toEqual([{ state: 'exited', outputBytes: 4 * MIB + 3 }]);
    expect((await processes.read(id, undefined, 3)).text).toBe('END');
  },
);

it(
  'takes a process’s output only as fast as its log is written: ' + 'the stream says wait, and nothing is lost',
  async () => {
    const processes = createLocalBackgroundProcesses(join(dir, 'slow-logs'));
    const child = Object.assign(new EventEmitter(), {
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      stdin: null,
      signal: () => undefined,
      ended: false,
    });
    const { id } = await processes.start('flood', () => {
      setImmediate(() => child.emit('spawn'));
      return child;
    });
    // 32 MiB in one go, faster than any disk: the supervisor acknowledges only what the stream takes
    // (supervisor.ts), so once the log's queue is full the stream must refuse more, not hold it all.
    let refused = 0;
    for (let i = 0; i < 512; i += 1) if (!child.stdout.write(Buffer.alloc(64 * 1024, 'b'))) refused += 1;
    expect(refused).toBeGreaterThan(400);
    child.stdout.end();
    child.stderr.end();
    await new Promise((resolve) => child.stdout.once('end', resolve));
    child.emit('close', 0, null);
    const done = await pollUntil(
      async () => (await processes.list()).find((p) => p.id === id),
      (p) => p?.state === 'exited',
      SETTLE_MS,
      5,
    );
    expect(done?.outputBytes).toBe(32 * MIB);
  },
);
