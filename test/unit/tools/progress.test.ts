import { createProgressForwarder } from '../../../functions/mcp/tools/progress';

describe('the progress forwarder', () => {
  it('sends the first output at once, coalesces the rest per interval, and nothing after close', async () => {
    const sent: Array<{ progress: number; message: string }> = [];
    const forwarder = createProgressForwarder(async (update) => void sent.push(update), { intervalMs: 50 });
    forwarder.push('a');
    await new Promise((resolve) => setTimeout(resolve, 5));
    forwarder.push('b');
    forwarder.push('c');
    expect(sent).toEqual([{ progress: 1, message: 'a' }]);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(sent).toEqual([
      { progress: 1, message: 'a' },
      { progress: 2, message: 'bc' },
    ]);
    forwarder.push('d');
    await forwarder.close();
    forwarder.push('e');
    await new Promise((resolve) => setTimeout(resolve, 80));
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
