import { createInitializeRate } from '../../../functions/mcp/sessions/initialize-rate';

describe('createInitializeRate', () => {
  it(
    'gives each credential its burst at once, then one a refill interval, and says how long to wait in whole ' +
      'seconds',
    () => {
      const rate = createInitializeRate({ burst: 3, perMinute: 6 }); // one every 10 s
      expect([0, 0, 0].map((at) => rate.take('a', at))).toEqual([0, 0, 0]);
      expect(rate.take('a', 0)).toBe(10);
      expect(rate.take('a', 4_000)).toBe(6);
      expect(rate.take('a', 10_000)).toBe(0);
      expect(rate.take('a', 10_000)).toBe(10);
      // Another credential has its own bucket.
      expect(rate.take('b', 10_000)).toBe(0);
      // Idle long enough, the bucket is full again, never fuller.
      expect([0, 0, 0, 0].map(() => rate.take('a', 3_600_000))).toEqual([0, 0, 0, 10]);
    },
  );

  it('takes nothing from a refused request: waiting the time it was told is enough', () => {
    const rate = createInitializeRate({ burst: 1, perMinute: 1 });
    expect(rate.take('a', 0)).toBe(0);
    for (let at = 0; at < 60_000; at += 7_000) expect(rate.take('a', at)).toBe(Math.ceil((60_000 - at) / 1000));
    expect(rate.take('a', 60_000)).toBe(0);
  });

  it('gives nothing for a clock that goes back', () => {
    const rate = createInitializeRate({ burst: 1, perMinute: 60 });
    expect(rate.take('a', 100_000)).toBe(0);
    expect(rate.take('a', 50_000)).toBe(1);
    expect(rate.take('a', 100_500)).toBe(1);
    expect(rate.take('a', 101_000)).toBe(0);
  });

  it('has no limit at 0 a minute', () => {
    const rate = createInitializeRate({ burst: 1, perMinute: 0 });
    for (let i = 0; i < 1000; i += 1) expect(rate.take('a', 0)).toBe(0);
  });

  it(
    'remembers at most maxPrincipals credentials: ' + 'the least recently used is forgotten (and starts full again)',
    () => {
      const rate = createInitializeRate({ burst: 1, perMinute: 1, maxPrincipals: 2 });
      expect(['a', 'b'].map((p) => rate.take(p, 0))).toEqual([0, 0]);
      expect(rate.take('a', 0)).toBeGreaterThan(0); // a is now the most recently used
      expect(rate.take('c', 0)).toBe(0); // b is forgotten
      expect(rate.take('a', 0)).toBeGreaterThan(0);
      expect(rate.take('b', 0)).toBe(0);
    },
  );
});
