import { SingleFlight } from '../../functions/mcp/single-flight';

/** A start whose promise the test settles. */
function deferred<T>() {
  let resolve: (value: T) => void = () => undefined;
  let reject: (err: unknown) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('SingleFlight', () => {
  it('shares one start among concurrent callers, and keeps its value', async () => {
    const flight = new SingleFlight<string>();
    const start = jest.fn(async () => 'value');
    const calls = [flight.get(start), flight.get(start), flight.get(start)];
    expect(flight.starting).toBe(true);
    await expect(Promise.all(calls)).resolves.toEqual(['value', 'value', 'value']);
    expect(start).toHaveBeenCalledTimes(1);
    expect(flight.value).toBe('value');
    expect(flight.starting).toBe(false);
    await expect(flight.get(start)).resolves.toBe('value');
    expect(start).toHaveBeenCalledTimes(1);
  });

  it('gives a failed start to everyone waiting on it, then starts again on the next call', async () => {
    const flight = new SingleFlight<string>();
    const failing = deferred<string>();
    const first = flight.get(() => failing.promise);
    const joined = flight.get(async () => 'never');
    failing.reject(new Error('no'));
    await expect(first).rejects.toThrow('no');
    await expect(joined).rejects.toThrow('no');
    expect(flight.current()).toBeUndefined();
    expect(flight.value).toBeUndefined();
    await expect(flight.get(async () => 'second')).resolves.toBe('second');
  });

  it(
    'replaces an unusable value once: ' + 'the first caller to see it starts the next, the others join that one',
    async () => {
      const flight = new SingleFlight<{ alive: boolean; n: number }>();
      let n = 0;
      const start = jest.fn(async () => ({ alive: true, n: ++n }));
      const usable = (v: { alive: boolean }) => v.alive;
      const first = await flight.get(start, usable);
      first.alive = false;
      const after = await Promise.all([
        flight.get(start, usable),
        flight.get(start, usable),
        flight.get(start, usable),
      ]);
      expect(after.map((v) => v.n)).toEqual([2, 2, 2]);
      expect(start).toHaveBeenCalledTimes(2);
    },
  );

  it('take() forgets the start and hands it over; a start taken while in flight never becomes the value', async () => {
    const flight = new SingleFlight<string>();
    const slow = deferred<string>();
    const running = flight.get(() => slow.promise);
    const taken = flight.take();
    expect(taken).toBe(running);
    expect(flight.starting).toBe(false);
    const next = flight.get(async () => 'fresh');
    slow.resolve('stale');
    await expect(running).resolves.toBe('stale');
    await expect(next).resolves.toBe('fresh');
    expect(flight.value).toBe('fresh');
    flight.take();
    expect(flight.value).toBeUndefined();
  });

  it('a start that throws rejects the call and leaves nothing behind', async () => {
    const flight = new SingleFlight<string>();
    await expect(
      flight.get(() => {
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(flight.current()).toBeUndefined();
    await expect(flight.get(async () => 'ok')).resolves.toBe('ok');
  });
});
