import { createProgressForwarder } from '../../../functions/mcp/tools/progress';

describe('the progress forwarder (on fake timers)', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it(
    'sends the first output at once, ' + 'coalesces the rest to one notification per interval, and nothing after close',
    async () => {
      const sent: Array<{ progress: number; message: string }> = [];
      const forwarder = createProgressForwarder(async (update) => void sent.push(update), { intervalMs: 250 });
      forwarder.push('a');
      await jest.advanceTimersByTimeAsync(0);
      expect(sent).toEqual([{ progress: 1, message: 'a' }]);
      forwarder.push('b');
      await jest.advanceTimersByTimeAsync(100);
      forwarder.push('c');
      await jest.advanceTimersByTimeAsync(149);
      expect(sent).toHaveLength(1);
      await jest.advanceTimersByTimeAsync(1);
      expect(sent).toEqual([
        { progress: 1, message: 'a' },
        { progress: 2, message: 'bc' },
      ]);
      forwarder.push('d');
      await forwarder.close();
      forwarder.push('e');
      await jest.advanceTimersByTimeAsync(1_000);
      expect(sent.map((u) => u.message).join('')).toBe('abcd');
      expect(sent.map((u) => u.progress)).toEqual([1, 2, 3]);
    },
  );

  it('stops quietly when the stream is gone', async () => {
    let calls = 0;
    const forwarder = createProgressForwarder(
      async () => {
        calls += 1;
        throw new Error('stream closed');
      },
      { intervalMs: 1, maxMessageChars: 4 },
    );
    forwarder.push('0123456789');
    await jest.advanceTimersByTimeAsync(0);
    forwarder.push('more');
    await jest.advanceTimersByTimeAsync(10);
    await forwarder.close();
    expect(calls).toBe(1);
  });

  it(
    'holds at most one message of what waits: ' + 'its head and tail, the middle counted, in one last message',
    async () => {
      const sent: Array<{ progress: number; message: string }> = [];
      const forwarder = createProgressForwarder(async (update) => void sent.push(update), {
        intervalMs: 250,
        maxMessageChars: 8,
      });
      forwarder.push('first');
      await jest.advanceTimersByTimeAsync(0);
      // 700 MiB in 64 KiB chunks would not fit in a string; a long run of chunks is what a flood looks like.
      const chunk = 'x'.repeat(65_536);
      forwarder.push('HEAD');
      for (let i = 0; i < 1_000; i += 1) forwarder.push(chunk);
      forwarder.push('TAIL');
      await forwarder.close();
      expect(sent).toEqual([
        { progress: 1, message: 'first' },
        { progress: 2, message: `HEAD\n[… ${1_000 * 65_536} bytes omitted …]\nTAIL` },
      ]);
    },
  );

  it('waits for one notification to be sent before the next (a slow reader gets no queue)', async () => {
    const sent: string[] = [];
    let release: (() => void) | undefined;
    const forwarder = createProgressForwarder(
      (update) => {
        sent.push(update.message);
        return new Promise<void>((resolve) => (release = resolve));
      },
      { intervalMs: 10, maxMessageChars: 100 },
    );
    forwarder.push('a');
    await jest.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 20; i += 1) {
      forwarder.push('b');
      await jest.advanceTimersByTimeAsync(50);
    }
    expect(sent).toEqual(['a']);
    release?.();
    await jest.advanceTimersByTimeAsync(50);
    expect(sent).toEqual(['a', 'b'.repeat(20)]);
    release?.();
    await forwarder.close();
  });
});
