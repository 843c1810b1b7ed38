// Figure 8: waking a sleeping sandbox, beside a fresh sandbox's first call and a warm call, in the same run. One
// fresh server of ours per backend, with MCP_SESSION_IDLE_TTL_S=1: local (bubblewrap, and a workspace disk image
// where the host can make one: LOCAL_SANDBOX_DISK_MB at its default) and E2B on the local E2B service
// (test/support/e2b-local/, in this process; pausing with memory, as E2B does). Each run, over one keep-alive
// connection: a new session; its first `run_command echo hi`, which creates the sandbox ("fresh"); WARM_CALLS more
// ("warm": their median); idle past the TTL, one `initialize` for the sweep, and a wait until the sandbox is asleep
// (the session's `session asleep` line; locally no process of the server's left and no image mounted, on E2B the
// service has it paused with its memory); the same call again ("wake", whose result must carry the wake notice).
// Then the session is deleted, its sandbox with it. One uncounted run first. Median and p90 of each over `runs`.
import { performance } from 'node:perf_hooks';

import { Agent } from 'undici';

import { startLocalE2B } from '../harness/e2b-local.mjs';
import { median, percentile } from '../harness/load.mjs';
import { callTool, closeSession, openSession } from '../harness/mcp-wire.mjs';
import { descendantsOf, mountsUnder } from '../harness/sandbox-host.mjs';
import { startServer } from '../harness/servers.mjs';
import { countLogLines, IDLE_TTL_S, lastSessionTag, sleepIdle, waitFor } from '../harness/sleep.mjs';
import { findBwrap } from './tool-latency.mjs';

const NO_BWRAP = 'bwrap is not installed';

/** The call timed in all three states. */
export const WAKE_CALL = { name: 'run_command', args: { command: 'echo hi' } };
/** Warm calls per run; the run's warm figure is their median. */
export const WARM_CALLS = 5;
/** The start of the notice a woken sandbox's first result carries (functions/mcp/sandbox/wake-notice.ts). */
const WAKE_NOTICE = 'Note: this sandbox was asleep';

/**
 * Resolves with `{ local, e2b }`, each `{ label, runs: [{ freshMs, warmMs, wakeMs, sleepMs }], fresh, warm, wake,
 * sleep }` (stats: `{ p50Ms, p90Ms }`), or `{ skipped: reason }` where that backend cannot run here.
 */
export async function measureWake({ runs = 15 } = {}) {
  // Both backends run sandboxes under it here: ours locally, and the local E2B service.
  if (findBwrap() === undefined) return { local: { skipped: NO_BWRAP }, e2b: { skipped: NO_BWRAP } };
  return { local: await measureLocal(runs), e2b: await measureE2B(runs) };
}

async function measureLocal(runs) {
  const server = await startServer('ours', {
    // LOCAL_SANDBOX_DISK_MB=1024 is the default the bench's other figures turn off.
    env: { MCP_SESSION_IDLE_TTL_S: String(IDLE_TTL_S), LOCAL_SANDBOX_DISK_MB: '1024' },
  });
  const root = server.sandboxRoot;
  const quiet = () => descendantsOf(server.pid).length === 0 && mountsUnder(root).length === 0;
  try {
    return await measureOn(server, {
      runs,
      describe: ({ isolation, limits }) => {
        if (isolation !== 'bwrap') return { skipped: `our sandboxes run with isolation ${isolation}` };
        const disk = limits?.disk_bytes?.enforced_by;
        return { label: `bwrap, ${disk === undefined ? 'no disk image' : `disk limit by ${disk}`}` };
      },
      isAsleep: quiet,
      isGone: quiet,
    });
  } finally {
    await server.stop();
  }
}

async function measureE2B(runs) {
  let e2b;
  try {
    e2b = await startLocalE2B();
  } catch (err) {
    return { skipped: `the local E2B service did not start: ${err instanceof Error ? err.message : String(err)}` };
  }
  try {
    const server = await startServer('ours', {
      // E2B_MAX_CREATES_PER_S as the wire suite has it: the figure times creation, not the creation rate gate.
      env: {
        SANDBOX_BACKEND: 'e2b',
        ...e2b.env(),
        E2B_MAX_CREATES_PER_S: '50',
        MCP_SESSION_IDLE_TTL_S: String(IDLE_TTL_S),
      },
    });
    try {
      return await measureOn(server, {
        runs,
        describe: () => ({ label: 'E2B_SLEEP=memory' }),
        isAsleep: () => e2b.sandboxes().every((s) => s.state === 'paused' && s.memory === true),
        isGone: () => e2b.sandboxes().length === 0,
      });
    } finally {
      await server.stop();
    }
  } finally {
    await e2b.stop();
  }
}

/**
 * The runs on one server: `describe(status)` names what runs (`{ label }`, from the first sandbox_status) or says why
 * it cannot be measured (`{ skipped }`); `isAsleep` and `isGone` say what the host shows.
 */
async function measureOn(server, { runs, describe, isAsleep, isGone }) {
  const agent = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  try {
    let label;
    const samples = [];
    for (let run = 0; run <= runs; run += 1) {
      const sessionId = await openSession(server.url, agent);
      const tag = lastSessionTag(server);
      const call = () => timedCall(server.url, sessionId, agent);
      const fresh = await call();
      if (label === undefined) {
        const status = await callTool(server.url, sessionId, 'sandbox_status', {}, agent);
        const described = describe(status.structuredContent ?? {});
        if (described.skipped !== undefined) return described;
        label = described.label;
      }
      const warm = [];
      for (let i = 0; i < WARM_CALLS; i += 1) warm.push((await call()).ms);
      const sleepMs = await sleepIdle(server, () => countLogLines(server, 'session asleep', tag) > 0 && isAsleep());
      const wake = await call();
      if (!wake.text.startsWith(WAKE_NOTICE))
        throw new Error(`the call after the sleep did not wake the sandbox: ${wake.text.slice(0, 200)}`);
      await closeSession(server.url, sessionId, agent);
      await waitFor(isGone, 'the deleted session’s sandbox to go');
      // Run 0 is the uncounted one: the server's first sandbox also probes the host and loads code.
      if (run > 0) samples.push({ freshMs: fresh.ms, warmMs: median(warm), wakeMs: wake.ms, sleepMs });
    }
    const of = (key) => stats(samples.map((s) => s[key]));
    return { label, runs: samples, fresh: of('freshMs'), warm: of('warmMs'), wake: of('wakeMs'), sleep: of('sleepMs') };
  } finally {
    await agent.close();
  }
}

/** One WAKE_CALL, send → answer read in full; checks its output. Resolves with `{ ms, text }`. */
async function timedCall(url, sessionId, agent) {
  const start = performance.now();
  const result = await callTool(url, sessionId, WAKE_CALL.name, WAKE_CALL.args, agent);
  const ms = performance.now() - start;
  if (result.structuredContent?.stdout !== 'hi\n')
    throw new Error(`${WAKE_CALL.name}: unexpected result ${JSON.stringify(result).slice(0, 300)}`);
  return { ms, text: result.content?.[0]?.text ?? '' };
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50Ms: median(sorted), p90Ms: percentile(sorted, 90) };
}
