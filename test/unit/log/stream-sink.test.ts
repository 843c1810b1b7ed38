/** The log sink over a stream that fails: the failure is said once, later lines are dropped, nothing throws. */
import { EventEmitter } from 'node:events';

import { createLogger, createStreamSink, type LogStream } from '../../../functions/mcp/log';

/** A stream that accepts writes until `breakWith` is called, then fails them as a closed pipe does. */
class FakeStream extends EventEmitter implements LogStream {
  readonly lines: string[] = [];
  private failure: Error | undefined;
  throwOnWrite = false;

  breakWith(err: Error): void {
    this.failure = err;
    this.emit('error', err);
  }

  write(chunk: string, callback?: (err?: Error | null) => void): boolean {
    if (this.throwOnWrite) throw new Error('write after end');
    if (this.failure !== undefined) {
      const err = this.failure;
      setImmediate(() => {
        callback?.(err);
        this.emit('error', err);
      });
      return false;
    }
    this.lines.push(chunk);
    setImmediate(() => callback?.());
    return true;
  }
}

const epipe = (): Error => Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });

it('writes lines while the stream works', async () => {
  const stream = new FakeStream();
  const logger = createLogger(createStreamSink(stream), 'info', () => new Date(0));
  logger.info('hello', { n: 1 });
  await logger.flush();
  expect(stream.lines).toEqual(['{"time":"1970-01-01T00:00:00.000Z","level":"info","msg":"hello","n":1}\n', '']);
});

it('reports the first failure once, drops later lines, and still completes flushes', async () => {
  const stream = new FakeStream();
  const failures: string[] = [];
  const logger = createLogger(
    createStreamSink(stream, (err) => failures.push((err as NodeJS.ErrnoException).code ?? err.message)),
  );
  logger.info('before');
  stream.breakWith(epipe());
  for (let i = 0; i < 50; i += 1) logger.error('after', { i });
  await logger.flush();
  await new Promise((resolve) => setImmediate(resolve));
  expect(failures).toEqual(['EPIPE']);
  expect(stream.lines.map((line) => (line === '' ? '' : (JSON.parse(line) as { msg: string }).msg))).toEqual([
    'before',
  ]);
  // Nothing is left listening to fail again: every later write is dropped before it reaches the stream.
  expect(stream.listenerCount('error')).toBe(1);
});

it('takes a failure a write reports (not as an event) the same way', async () => {
  const stream = new FakeStream();
  let failures = 0;
  const sink = createStreamSink(stream, () => (failures += 1));
  stream.breakWith(epipe());
  failures = 0;
  const fresh = createStreamSink(new FakeStream(), () => undefined);
  expect(fresh.write('x\n')).toBe(true);
  const broken = new FakeStream();
  const sink2 = createStreamSink(broken, () => (failures += 1));
  (broken as unknown as { failure: Error }).failure = epipe();
  sink2.write('a\n');
  await new Promise((resolve) => setImmediate(resolve));
  sink2.write('b\n');
  expect(failures).toBe(1);
  expect(sink.write('dropped\n')).toBe(true);
});

it('survives a stream whose write throws, and one whose failure report throws', () => {
  const stream = new FakeStream();
  stream.throwOnWrite = true;
  const sink = createStreamSink(stream, () => {
    throw new Error('the fallback is broken too');
  });
  expect(() => sink.write('line\n')).not.toThrow();
  let called = false;
  sink.write('more\n', () => (called = true));
  expect(called).toBe(true);
});
