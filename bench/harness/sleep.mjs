// Putting a server's sandboxes to sleep from outside, as production does: nothing runs on a timer (FC freezes an
// instance between requests), so idle sandboxes fall asleep in the sweep of the next request after
// MCP_SESSION_IDLE_TTL_S. The figures run ours with the shortest TTL, wait past it, send one `initialize` (a new
// session, no sandbox touched) and wait until what they look for says the sleep is over, reading the server's log
// (JSON lines: `session asleep`, `sandbox asleep`) and the host.
import { performance } from 'node:perf_hooks';

import { initializeBody, postRpc } from './mcp-wire.mjs';

/** MCP_SESSION_IDLE_TTL_S of the servers whose sandboxes the figures put to sleep: the least it takes. */
export const IDLE_TTL_S = 1;
/** How long after the last call the sweep is asked for: past the TTL, with a margin for the clock's whole seconds. */
export const IDLE_WAIT_MS = IDLE_TTL_S * 1000 + 250;
/** A bound on a hang, not a speed check: a sleep or a clean-up not done by then fails the figure. */
const SETTLE_MS = 20_000;

/** The server's log lines so far, parsed (lines that are not JSON, such as the start-up banner, left out). */
export function logLines(server) {
  return server.child
    .readLog()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

/** How many log lines with message `msg` the server has written, of session or sandbox `tag` when given. */
export function countLogLines(server, msg, tag) {
  return logLines(server).filter((l) => l.msg === msg && (tag === undefined || l.session === tag || l.sandbox === tag))
    .length;
}

/** The tag the log gives the session opened last (`session opened`): call right after opening it, one at a time. */
export function lastSessionTag(server) {
  const tag = logLines(server).findLast((l) => l.msg === 'session opened')?.session;
  if (tag === undefined) throw new Error('no `session opened` line in the server log');
  return tag;
}

/**
 * Waits past the idle TTL (the caller's last call just ended), sends one `initialize` so that the sweep runs, and
 * waits until `isAsleep()` holds. Resolves with the ms from that request to the sleep seen done.
 */
export async function sleepIdle(server, isAsleep) {
  await new Promise((resolve) => setTimeout(resolve, IDLE_WAIT_MS));
  const start = performance.now();
  const init = await postRpc(server.url, initializeBody());
  if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${init.text.slice(0, 300)}`);
  await waitFor(isAsleep, 'the idle sandboxes to fall asleep');
  return performance.now() - start;
}

/** Polls `condition` every 10 ms until it holds; throws after SETTLE_MS, naming `what` it waited for. */
export async function waitFor(condition, what) {
  const deadline = performance.now() + SETTLE_MS;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`waited ${SETTLE_MS} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
