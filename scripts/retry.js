/**
 * Retries FC calls that failed for a passing reason (throttling, 5xx, a dropped connection) with exponential
 * backoff and jitter. Everything else fails at once. The SDK itself does not retry (FACTS.md §7).
 */
'use strict';

const { setTimeout: sleep } = require('node:timers/promises');

/** Errno codes of a connection that failed on the way, not a refused request. */
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'ReadTimeout', 'ConnectTimeout', 'NetworkError']);

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
 * @property {number} [attempts] tries in all. @default 5
 * @property {number} [baseDelayMs] first backoff; doubles each time, plus up to 50 % jitter. @default 500
 * @property {number} [maxDelayMs] longest single wait. @default 8000
 * @property {(err: any, attempt: number, delayMs: number) => void} [onRetry] told before each wait
 * @property {(ms: number) => Promise<unknown>} [wait] @default setTimeout from node:timers/promises
 */

/**
 * Runs `call` until it succeeds, fails for good, or runs out of attempts (then the last error is thrown).
 * @template T
 * @param {() => Promise<T>} call
 * @param {RetryOptions} [options]
 * @returns {Promise<T>}
 */
async function withRetry(call, options = {}) {
  const { attempts = 5, baseDelayMs = 500, maxDelayMs = 8000, onRetry = () => {}, wait = sleep } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const e = /** @type {{ code?: string, statusCode?: number, retryAfterMs?: number }} */ (err);
      if (attempt >= attempts || !isRetryable(e)) throw err;
      const backoff = baseDelayMs * 2 ** (attempt - 1) * (1 + Math.random() / 2);
      const delayMs = Math.min(maxDelayMs, Math.max(backoff, e.retryAfterMs ?? 0));
      onRetry(err, attempt, delayMs);
      await wait(delayMs);
    }
  }
}

module.exports = { withRetry };
