/**
 * withRetry (scripts/retry.js), the backoff of every FC call the deploy makes: which failures it retries, how long
 * it waits (an injected wait records the delays and returns at once; an injected random sets the jitter), and
 * when it gives up. fc-deploy-retries.test.ts shows the same policy on real requests to the fake FC API.
 */
import { withRetry } from '../../scripts/retry';

/** A call that fails with `errors`, one per attempt, then answers 'done'; it counts its attempts. */
function failing(...errors: object[]) {
  const call = async (): Promise<string> => {
    call.attempts++;
    const error = errors[call.attempts - 1];
    if (error !== undefined) throw error;
    return 'done';
  };
  call.attempts = 0;
  return call;
}

/** Runs withRetry with a recording wait; keeps the outcome rather than throwing it. */
async function retry(
  call: () => Promise<string>,
  options: { random?: () => number; attempts?: number; maxDelayMs?: number } = {},
) {
  const delays: number[] = [];
  const wait = async (ms: number): Promise<void> => {
    delays.push(ms);
  };
  const outcome = await withRetry(call, { wait, ...options }).then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...outcome, delays };
}

const THROTTLED = { statusCode: 429, code: 'Throttling' };

it('waits 500 ms, doubling each time, and gives up after five attempts with the last error', async () => {
  const last = { ...THROTTLED, attempt: 5 };
  const call = failing(THROTTLED, THROTTLED, THROTTLED, THROTTLED, last);
  const run = await retry(call, { random: () => 0 });
  expect(call.attempts).toBe(5);
  expect(run.delays).toEqual([500, 1000, 2000, 4000]);
  expect(run.error).toBe(last);
});

it('adds up to 50 % jitter to each wait', async () => {
  const run = await retry(failing(THROTTLED, THROTTLED, THROTTLED, THROTTLED), { random: () => 0.5 });
  expect(run.delays).toEqual([625, 1250, 2500, 5000]);
  const longest = await retry(failing(THROTTLED, THROTTLED), { random: () => 0.999 });
  expect(longest.delays).toEqual([749.75, 1499.5]);
});

it('never waits longer than 8 s', async () => {
  const run = await retry(failing(...Array<object>(6).fill(THROTTLED)), { random: () => 0.999, attempts: 7 });
  expect(run.delays).toEqual([749.75, 1499.5, 2999, 5998, 8000, 8000]);
});

it('waits at least as long as FC asked (Retry-After)', async () => {
  const run = await retry(failing({ ...THROTTLED, retryAfterMs: 3000 }), { random: () => 0 });
  expect(run).toEqual({ value: 'done', error: undefined, delays: [3000] });
});

it.each([
  ['429', { statusCode: 429, code: 'TooManyRequests' }],
  ['a throttling code on another status', { statusCode: 400, code: 'Throttling.Api' }],
  ['a 5xx', { statusCode: 503, code: 'ServiceUnavailable' }],
  ['a dropped connection (an errno code, no status)', { code: 'ECONNRESET' }],
])('retries %s', async (_name, error) => {
  const call = failing(error);
  expect(await retry(call, { random: () => 0 })).toEqual({ value: 'done', error: undefined, delays: [500] });
  expect(call.attempts).toBe(2);
});

it.each([
  ['a 4xx such as AccessDenied', { statusCode: 403, code: 'AccessDenied' }],
  ['a 409 conflict', { statusCode: 409, code: 'FunctionAlreadyExists' }],
  ['an error without a status or a known errno code', { code: 'ERR_INVALID_ARG_TYPE' }],
])('fails at once on %s, which a retry cannot fix', async (_name, error) => {
  const call = failing(error);
  expect(await retry(call)).toEqual({ value: undefined, error, delays: [] });
  expect(call.attempts).toBe(1);
});
