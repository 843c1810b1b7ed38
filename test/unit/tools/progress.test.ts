import { createProgressForwarder } from '../../../functions/mcp/tools/progress';

describe('the progress forwarder (on fake timers)', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('sends the first output at once, coalesces the rest to one notification per interval, and nothing after close', async () => {
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
  });

  it('splits long output over several notifications and stops quietly when the stream is gone', async () => {
    let calls = 0;
    const forwarder = createProgressForwarder(
      async () => {
        calls += 1;
        throw new Error('stream closed');
      },
      { intervalMs: 1, maxMessageChars: 4 },
    );
    forwarder.push('0123456789');
    await forwarder.close();
    expect(calls).toBe(1);
  });
});
