import { RunToCompletion, type StopReason } from '../../../functions/mcp/sandbox/run-to-completion';

describe('RunToCompletion', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('captures each stream within its bound and passes every chunk on as live output', () => {
    const live: Array<[string, string]> = [];
    const run = new RunToCompletion({ maxOutputBytes: 10, onOutput: (stream, text) => live.push([stream, text]) });
    for (let i = 0; i < 10; i += 1) run.take('stdout', `${i}${i}`);
    run.callbacks().onStderr('oops');
    const { stdout, stderr } = run.output();
    expect(stdout).toEqual({ text: '00112\n[… 10 bytes omitted …]\n78899', totalBytes: 20, truncated: true });
    expect(stderr).toEqual({ text: 'oops', totalBytes: 4, truncated: false });
    expect(live).toHaveLength(11);
    expect(live[10]).toEqual(['stderr', 'oops']);
  });

  it('keeps bytes as they are and passes text on whole: a character split between chunks goes on once complete', () => {
    const live: string[] = [];
    const run = new RunToCompletion({ maxOutputBytes: 100, onOutput: (_stream, text) => live.push(text) });
    const euro = Buffer.from('€', 'utf8');
    run.takeBytes('stdout', euro.subarray(0, 1));
    run.takeBytes('stdout', euro.subarray(1));
    expect(live).toEqual(['', '€']);
    expect(run.output().stdout).toEqual({ text: '€', totalBytes: 3, truncated: false });
  });

  it('stops at the deadline and at the abort, recording each, and not after disarm', () => {
    const stops: StopReason[] = [];
    const controller = new AbortController();
    const run = new RunToCompletion({ maxOutputBytes: 10 });
    run.arm({ timeoutMs: 1_000, signal: controller.signal, stop: (why) => stops.push(why) });
    jest.advanceTimersByTime(999);
    expect(run.timedOut).toBe(false);
    jest.advanceTimersByTime(1);
    expect(stops).toEqual(['timeout']);
    expect(run.timedOut).toBe(true);
    controller.abort();
    expect(stops).toEqual(['timeout', 'cancel']);
    expect(run.cancelled).toBe(true);

    const later = new AbortController();
    const quiet = new RunToCompletion({ maxOutputBytes: 10 });
    quiet.arm({ timeoutMs: 1_000, signal: later.signal, stop: (why) => stops.push(why) });
    quiet.disarm();
    jest.advanceTimersByTime(5_000);
    later.abort();
    expect(stops).toEqual(['timeout', 'cancel']);
    expect(quiet.timedOut || quiet.cancelled).toBe(false);
  });

  it('stops at once for a signal already aborted; without a deadline only the abort stops it', () => {
    const stops: StopReason[] = [];
    const run = new RunToCompletion({ maxOutputBytes: 10 });
    run.arm({ signal: AbortSignal.abort(), stop: (why) => stops.push(why) });
    expect(stops).toEqual(['cancel']);
    jest.advanceTimersByTime(3_600_000);
    expect(stops).toEqual(['cancel']);
    expect(run.timedOut).toBe(false);
  });

  it('measures its duration on the clock it is given, from when it was made', () => {
    let now = 1_000;
    const run = new RunToCompletion({ maxOutputBytes: 10, now: () => now });
    now += 1_234.4;
    expect(run.elapsedMs()).toBe(1_234);
  });
});
