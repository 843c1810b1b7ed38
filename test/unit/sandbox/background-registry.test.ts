/** The background-process registry both backends share, over a backend made of plain data and a fake clock. */
import {
  type BackgroundBackend,
  type BackgroundHandle,
  BackgroundRegistry,
  type ExitStatus,
  parseStartedText,
  type StartedRecord,
  toStartedText,
} from '../../../functions/mcp/sandbox/background-registry';
import { LOG_SEGMENT_BYTES, type SegmentFile } from '../../../functions/mcp/sandbox/log-segments';
import type { ProcessLogPage } from '../../../functions/mcp/sandbox/types';
import { createFakeClock } from '../../support/fake-clock';

/** A process of the fake backend: ends when the test says, counts its own bytes or leaves that to the segments. */
interface FakeProcess extends BackgroundHandle {
  readonly signals: NodeJS.Signals[];
  readonly input: string[];
  end(status: ExitStatus | undefined): void;
  readsInput: boolean;
  /** A process that takes input without reading it: a write never finishes, and the bytes wait. */
  slow: boolean;
  unread: number;
}

/** The backend's log directory (segments by id) and what an earlier instance's processes report. */
function createFakeBackend(counting: boolean) {
  const segments = new Map<string, SegmentFile[]>();
  const earlier = new Map<string, ExitStatus | undefined>();
  const started = new Map<string, StartedRecord>();
  const launched: FakeProcess[] = [];
  const backend: BackgroundBackend<{ exitOnSignal: boolean }, FakeProcess> = {
    logs: async () => new Map([...segments].map(([id, files]) => [id, [...files]])),
    async launch(id, _command, { exitOnSignal }) {
      let end: (status: ExitStatus | undefined) => void = () => undefined;
      const ended = new Promise<ExitStatus | undefined>((resolve) => (end = resolve));
      segments.set(id, []);
      const process: FakeProcess = {
        ended,
        end,
        signals: [],
        input: [],
        readsInput: true,
        slow: false,
        unread: 0,
        outputBytes: () => (counting ? 42 : undefined),
        async signal(signal) {
          process.signals.push(signal);
          if (exitOnSignal) end({ code: null, signal });
        },
        async writeStdin(text) {
          if (!process.readsInput) return false;
          process.input.push(text);
          if (process.slow) {
            process.unread += text.length;
            return new Promise<boolean>(() => undefined);
          }
          return true;
        },
        stdinBacklog: () => process.unread,
      };
      launched.push(process);
      return process;
    },
    async readLog(id, handle, offset, limitBytes): Promise<ProcessLogPage | undefined> {
      if (!segments.has(id) && handle === undefined) return undefined;
      return {
        text: `${id}${handle === undefined ? ' (earlier)' : ''}`,
        offset: offset ?? 0,
        nextOffset: limitBytes,
        totalBytes: limitBytes,
        droppedBytes: 0,
      };
    },
    earlierStatus: async (id) => earlier.get(id),
    earlierStart: async (id) => started.get(id),
  };
  return { backend, segments, earlier, started, launched };
}

const clock = () => createFakeClock(Date.parse('2030-01-01T00:00:00Z'));

it('numbers processes after the logs an earlier instance left, each start side by side its own id', async () => {
  const { backend, segments } = createFakeBackend(false);
  segments.set('p7', [{ index: 0, size: 5 }]);
  segments.set('p3', [{ index: 0, size: 1 }]);
  const registry = new BackgroundRegistry(backend, clock());
  const started = await Promise.all([1, 2, 3].map(() => registry.start('sleep 1', { exitOnSignal: true })));
  expect(started.map((p) => p.id).sort()).toEqual(['p10', 'p8', 'p9']);
  expect(started[0]).toEqual({
    id: started[0]?.id,
    command: 'sleep 1',
    startedAt: '2030-01-01T00:00:00.000Z',
    state: 'running',
    exitCode: null,
    signal: null,
    outputBytes: 0,
  });
});

it(
  "lists an earlier instance's processes beside its own, by " + "id, with byte counts from the log's segments",
  async () => {
    const { backend, segments, earlier, launched } = createFakeBackend(false);
    segments.set('p1', [
      { index: 1, size: 10 },
      { index: 0, size: LOG_SEGMENT_BYTES },
    ]);
    segments.set('p2', []);
    earlier.set('p1', { code: 3, signal: null });
    const registry = new BackgroundRegistry(backend, clock());
    const mine = await registry.start('serve', { exitOnSignal: false });
    segments.set(mine.id, [{ index: 0, size: 6 }]);
    launched[0]?.end({ code: 0, signal: null });
    await Promise.resolve();
    const earlierOne = { command: '(started by an earlier server instance)', startedAt: '' };
    expect(await registry.list()).toEqual([
      { id: 'p1', ...earlierOne, state: 'exited', exitCode: 3, signal: null, outputBytes: LOG_SEGMENT_BYTES + 10 },
      { id: 'p2', ...earlierOne, state: 'running', exitCode: null, signal: null, outputBytes: 0 },
      {
        id: 'p3',
        command: 'serve',
        startedAt: mine.startedAt,
        state: 'exited',
        exitCode: 0,
        signal: null,
        outputBytes: 6,
      },
    ]);
  },
);

it('takes the byte count from a backend that counts its own output', async () => {
  const { backend, segments } = createFakeBackend(true);
  const registry = new BackgroundRegistry(backend, clock());
  const started = await registry.start('x', { exitOnSignal: true });
  segments.set(started.id, [{ index: 0, size: 1 }]);
  expect(started.outputBytes).toBe(42);
  expect((await registry.list())[0]?.outputBytes).toBe(42);
  expect((await registry.signal(started.id, 'SIGTERM')).outputBytes).toBe(42);
});

it('reports the signal that ended a process, or after a wait one that ignored it as still running', async () => {
  const { backend, launched } = createFakeBackend(false);
  const fake = clock();
  const registry = new BackgroundRegistry(backend, fake);
  const obliging = await registry.start('a', { exitOnSignal: true });
  const stubborn = await registry.start('b', { exitOnSignal: false });
  expect(await registry.signal(obliging.id, 'SIGTERM')).toMatchObject({
    state: 'exited',
    exitCode: null,
    signal: 'SIGTERM',
  });
  expect(await registry.signal(stubborn.id, 'SIGTERM')).toMatchObject({ state: 'running', signal: null });
  expect(fake.sleeps).toEqual([2_000, 2_000]);
  expect(registry.hasRunning()).toBe(true);
  // An exited process is not signalled again.
  await registry.signal(obliging.id, 'SIGKILL');
  expect(launched[0]?.signals).toEqual(['SIGTERM']);
});

it('stops every running process with SIGKILL, and only those', async () => {
  const { backend, launched } = createFakeBackend(false);
  const registry = new BackgroundRegistry(backend, clock());
  await registry.start('a', { exitOnSignal: false });
  await registry.start('b', { exitOnSignal: false });
  launched[0]?.end({ code: 1, signal: null });
  await Promise.resolve();
  registry.stopAll();
  expect(launched.map((p) => p.signals)).toEqual([[], ['SIGKILL']]);
});

it('keeps a process whose end cannot be observed running', async () => {
  const { backend, launched } = createFakeBackend(false);
  const registry = new BackgroundRegistry(backend, clock());
  const started = await registry.start('a', { exitOnSignal: false });
  launched[0]?.end(undefined);
  await Promise.resolve();
  expect((await registry.list())[0]).toMatchObject({ id: started.id, state: 'running' });
  expect(registry.hasRunning()).toBe(true);
});

it('writes stdin while the process reads it, and says it has exited otherwise', async () => {
  const { backend, launched } = createFakeBackend(false);
  const registry = new BackgroundRegistry(backend, clock());
  const a = await registry.start('a', { exitOnSignal: false });
  const b = await registry.start('b', { exitOnSignal: false });
  await registry.writeStdin(a.id, 'hi\n');
  expect(launched[0]?.input).toEqual(['hi\n']);
  launched[0]?.end({ code: 0, signal: null });
  await Promise.resolve();
  await expect(registry.writeStdin(a.id, 'more')).rejects.toMatchObject({
    code: 'invalid_input',
    message: `Process ${a.id} has exited; it reads no more input.`,
  });
  if (launched[1] !== undefined) launched[1].readsInput = false;
  await expect(registry.writeStdin(b.id, 'more')).rejects.toMatchObject({ code: 'invalid_input' });
  await expect(registry.writeStdin('p9', 'x')).rejects.toMatchObject({ code: 'not_found' });
});

it('says how much input waits when the process is slow to read it, and refuses more until it has read it', async () => {
  const { backend, launched } = createFakeBackend(false);
  const fake = clock();
  const registry = new BackgroundRegistry(backend, fake);
  const a = await registry.start('a', { exitOnSignal: false });
  const proc = launched[0] as FakeProcess;
  proc.slow = true;
  expect(await registry.writeStdin(a.id, 'x'.repeat(1_000))).toEqual({ state: 'pending', pendingBytes: 1_000 });
  expect(fake.sleeps).toEqual([2_000]);
  await expect(registry.writeStdin(a.id, 'more')).rejects.toMatchObject({
    code: 'invalid_input',
    message:
      `Process ${a.id} has not read the 1000 bytes of input written before yet, so nothing more was written; check ` +
      `its logs, and write again once it has read them.`,
  });
  expect(proc.input).toEqual(['x'.repeat(1_000)]);
  proc.slow = false;
  proc.unread = 0;
  expect(await registry.writeStdin(a.id, 'now')).toEqual({ state: 'written' });
});

it("reads its own logs and an earlier instance's, and names no other", async () => {
  const { backend, segments } = createFakeBackend(false);
  segments.set('p1', [{ index: 0, size: 3 }]);
  const registry = new BackgroundRegistry(backend, clock());
  const mine = await registry.start('a', { exitOnSignal: false });
  segments.delete(mine.id);
  // The backend would read these; no id has their shape, so none is asked for.
  segments.set('q1', []);
  segments.set('../p1', []);
  expect((await registry.read(mine.id, undefined, 5)).text).toBe(mine.id);
  expect((await registry.read('p1', 0, 5)).text).toBe('p1 (earlier)');
  for (const id of ['p9', '../p1', 'p1/../p1', 'q1']) {
    await expect(registry.read(id, undefined, 5)).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('manage_process with action "list"'),
    });
  }
  await expect(registry.signal('p1', 'SIGTERM')).rejects.toMatchObject({ code: 'not_found' });
});

it(
  'lists what an earlier instance started by the command and ' + 'start time it kept, or says it does not know',
  async () => {
    const { backend, segments, started } = createFakeBackend(false);
    segments.set('p1', [{ index: 0, size: 3 }]);
    segments.set('p2', [{ index: 0, size: 0 }]);
    started.set('p1', { command: 'npm run dev', startedAt: '2029-12-31T23:00:00.000Z' });
    const listed = await new BackgroundRegistry(backend, clock()).list();
    expect(listed.map((p) => [p.id, p.command, p.startedAt])).toEqual([
      ['p1', 'npm run dev', '2029-12-31T23:00:00.000Z'],
      ['p2', '(started by an earlier server instance)', ''],
    ]);
  },
);

it('keeps a command beside its log as its start time and its first 1024 characters, and reads back only that', () => {
  const long = `echo ${'x'.repeat(2000)}`;
  const text = toStartedText({ command: long, startedAt: '2030-01-01T00:00:00.000Z' });
  expect(parseStartedText(text)).toEqual({ command: long.slice(0, 1024), startedAt: '2030-01-01T00:00:00.000Z' });
  expect(parseStartedText('not a record')).toBeUndefined();
  expect(parseStartedText('2030-01-01T00:00:00.000Z\nline one\nline two')?.command).toBe('line one\nline two');
});
