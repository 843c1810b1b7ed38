/** Bounded retry with exponential backoff and full jitter, and a gate that spaces sandbox creations. */
import { type Clock, SYSTEM_CLOCK } from '../../clock';

export interface RetryOptions {
  /** Give up once this much time has passed since the first attempt. @default 10_000 */
  maxWaitMs?: number;
  /** First backoff. @default 500 */
  baseDelayMs?: number;
  /** Largest single backoff. @default 4_000 */
  maxDelayMs?: number;
  clock?: Clock;
}

/** Runs `fn`, retrying while `shouldRetry(err)` and the time budget lasts; rethrows the last error. */
export async function retryWithBackoff<T>(
  fn: () => Promise<T>,
  shouldRetry: (err: unknown) => boolean,
  options: RetryOptions = {},
): Promise<T> {
  const { maxWaitMs = 10_000, baseDelayMs = 500, maxDelayMs = 4_000, clock = SYSTEM_CLOCK } = options;
  const started = clock.now();
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await fn();
    } catch (err: unknown) {
      const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** attempt);
      const delay = Math.round(ceiling / 2 + (clock.random() * ceiling) / 2);
      if (!shouldRetry(err) || clock.now() - started + delay > maxWaitMs) throw err;
      await clock.sleep(delay);
    }
  }
}

/** Spaces calls to at most `perSecond` per second, in arrival order. */
export interface RateGate {
  /** Resolves when the caller may go. */
  acquire(): Promise<void>;
}

/** Creates a gate for `perSecond` passes per second. */
export function createRateGate(perSecond: number, clock: Clock = SYSTEM_CLOCK): RateGate {
  const intervalMs = 1000 / perSecond;
  let nextFreeMs = 0;
  return {
    async acquire() {
      const now = clock.now();
      const at = Math.max(now, nextFreeMs);
      nextFreeMs = at + intervalMs;
      if (at > now) await clock.sleep(at - now);
    },
  };
}
