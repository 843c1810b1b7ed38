/**
 * Interval of the `:` keep-alive comments on every open response stream, in both lanes: proxies and load
 * balancers cut a stream that stays silent too long, and a long tool call may print nothing for minutes.
 */
export const SSE_KEEP_ALIVE_MS = 10_000;
