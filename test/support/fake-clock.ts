/**
 * A clock that tests drive: time moves only when `advance` is called, or, unless `frozen`, by each
 * `sleep` (which records the wait and returns at once). Injected where the code takes a `Clock`.
 */
import type { Clock } from '../../functions/mcp/clock';

export interface FakeClock extends Clock {
  /** Moves time forward. */
  advance(ms: number): void;
  /** Every wait asked of `sleep`, in order. */
  readonly sleeps: number[];
}

export interface FakeClockOptions {
  /** Waits leave time where it is, so that concurrent waits show how they were scheduled. @default false */
  frozen?: boolean;
  /** What `random` returns (backoff jitter). @default 0.5 */
  random?: number;
}

/** Creates a fake clock starting at `startMs`. */
export function createFakeClock(
  startMs = 1_000_000,
  { frozen = false, random = 0.5 }: FakeClockOptions = {},
): FakeClock {
  let now = startMs;
  const sleeps: number[] = [];
  return {
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      if (!frozen) now += ms;
    },
    random: () => random,
    advance: (ms) => {
      now += ms;
    },
    sleeps,
  };
}
