/**
 * Keep-alive cadence on a silent response stream, in both lanes: a `:` comment every 10 s while a tool call
 * prints nothing. Jest's fake timers drive the SDK transports' keep-alive intervals (only setInterval is
 * faked; promises, streams and the event loop run as usual), and the test holds the call open.
 */
import { createHarness } from '../support/harness';
import { holdCommands, settle } from '../support/held-commands';
import { teeToolCallBodies } from '../support/http';

const keepAlives = (stream: string | undefined): number =>
  (stream ?? '').split('\n').filter((line) => line.startsWith(':')).length;

beforeEach(() => {
  jest.useFakeTimers({
    doNotFake: [
      'Date',
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'setImmediate',
      'clearImmediate',
      'setTimeout',
      'clearTimeout',
    ],
  });
});
afterEach(() => {
  jest.useRealTimers();
});

describe.each([
  ['2025 session', false],
  ['2026-07-28', true],
] as const)('a silent tool call (%s lane)', (_lane, modern) => {
  it('gets a keep-alive comment every 10 s on its stream, none before, and its result at the end', async () => {
    const h = createHarness();
    const held = holdCommands(h);
    const recorder = teeToolCallBodies(h.fetch);
    const args = { command: 'hold-silent' };
    let call: Promise<unknown>;
    if (modern) {
      const client = await h.connectModern({ fetch: recorder.fetch });
      call = client.callTool({ name: 'run_command', arguments: args });
    } else {
      const client = await h.connect({ fetch: recorder.fetch });
      call = client.callTool('run_command', args);
    }
    // (The modern lane's answer may start only with its first event: the stream need not exist yet.)
    await settle(() => held.started('hold-silent'));

    await jest.advanceTimersByTimeAsync(9_999);
    await settle(() => true, 50);
    expect(keepAlives(recorder.texts[0])).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    await settle(() => keepAlives(recorder.texts[0]) === 1);
    await jest.advanceTimersByTimeAsync(30_000);
    await settle(() => keepAlives(recorder.texts[0]) === 4);

    held.release('hold-silent');
    expect(await call).toMatchObject({ structuredContent: { exit_code: 0 } });
    await settle(() => (recorder.texts[0] ?? '').includes('"exit_code":0'));
    expect(keepAlives(recorder.texts[0])).toBe(4);
  });
});
