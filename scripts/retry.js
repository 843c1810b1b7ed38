/**
 * Retries FC calls that failed for a passing reason (throttling, 5xx, a dropped connection) with exponential
 * backoff and jitter. Everything else fails at once. The SDK itself does not retry: it retries only when its Config
 * carries retryOptions, and fc-api.js gives it none.
 */
'use strict';

const { setTimeout: sleep } = require('node:timers/promises');

/** Errno codes of a connection that failed on the way, not a refused request. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ReadTimeout',
  'ConnectTimeout',
  'NetworkError',
]);

/**
 * @param {{ code?: string, statusCode?: number }} err
 */
function isRetryable(err) {
  const status = err.statusCode;
  if (status === 429 || (status !== undefined && status >= 500)) return true;
  if (typeof err.code === 'string' && err.code.includes('Throttling')) return true;
  return status === undefined && typeof err.code === 'string' && NETWORK_CODES.has(err.code);
}

/**
 * @typedef {object} RetryOptions
 * @property {number} [attempts=5] tries in all
 * @property {number} [baseDelayMs=500] first backoff; doubles each time, plus up to 50 % jitter
 * @property {number} [maxDelayMs=8000] longest single wait
 * @property {(err: unknown, attempt: number, delayMs: number) => void} [onRetry] told before each wait
 * @property {() => number} [random] the jitter's source, in [0, 1); Math.random unless given
 * @property {(ms: number) => Promise<unknown>} [wait] waits; setTimeout from node:timers/promises unless given
 */

/**
 * Runs `call` until it succeeds, fails for good, or runs out of attempts (then the last error is thrown).
 * @template T
 * @param {() => Promise<T>} call
 * @param {RetryOptions} [options]
 * @returns {Promise<T>}
 */
async function withRetry(call, options = {}) {
  const {
    attempts = 5,
    baseDelayMs = 500,
    maxDelayMs = 8000,
    onRetry = () => {},
    random = Math.random,
    wait = sleep,
  } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const e = /** @type {{ code?: string, statusCode?: number, retryAfterMs?: number }} */ (err);
      if (attempt >= attempts || !isRetryable(e)) throw err;
      const backoff = baseDelayMs * 2 ** (attempt - 1) * (1 + random() / 2);
      const delayMs = Math.min(maxDelayMs, Math.max(backoff, e.retryAfterMs ?? 0));
      onRetry(err, attempt, delayMs);
      await wait(delayMs);
    }
  }
}

module.exports = { withRetry };
