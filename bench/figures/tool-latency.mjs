// Figure 7: per-tool latency on the local backend under bubblewrap. One session of ours over real HTTP (one
// keep-alive connection, sequential calls), its sandbox created beforehand; each round calls every tool once,
// in an order rotated each round, and spawns the bare bubblewrap reference from this process in the same
// round. Uncounted warm-up rounds first, `warmup` of them and for at least `warmupMs` (on the 2-vCPU VM this
// was written on, sequential round trips kept getting faster over the first ~3 s of steady load, the bare
// node:http floor from ~1 ms to ~0.2 ms, whatever the server). p50 and p95 per tool.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { Agent } from 'undici';

import { median, percentile } from '../harness/load.mjs';
import { callTool, openSession } from '../harness/mcp-wire.mjs';
import { startServer } from '../harness/servers.mjs';

/** The small file read_file reads (written once before the rounds) and write_file writes (every round). */
const SMALL_FILE = 'bench-small.txt';
const SMALL_WRITTEN = 'bench-written.txt';
const SMALL_CONTENT = 'a small file for the latency bench\n'.repeat(3);

/** The calls measured, by label: tool name, arguments, a check of the result, and how RESULTS.md names it. */
export const TOOL_CALLS = [
  { label: 'sandbox_status', name: 'sandbox_status', args: {}, check: (r) => r.structuredContent?.state === 'running' },
  {
    label: 'run_command',
    name: 'run_command',
    args: { command: 'echo hi' },
    check: (r) => r.structuredContent?.stdout === 'hi\n',
  },
  {
    label: 'read_file',
    name: 'read_file',
    args: { path: SMALL_FILE },
    check: (r) => r.structuredContent?.content === SMALL_CONTENT,
  },
  {
    label: 'write_file',
    name: 'write_file',
    args: { path: SMALL_WRITTEN, content: SMALL_CONTENT },
    check: (r) => r.structuredContent?.bytes_written === SMALL_CONTENT.length,
    shown: `{"path":"${SMALL_WRITTEN}","content":<${SMALL_CONTENT.length} bytes>}`,
  },
  {
    label: 'list_files',
    name: 'list_files',
    args: { path: '.' },
    check: (r) => r.structuredContent?.entries?.some((e) => e.path === SMALL_FILE) === true,
  },
  {
    label: 'run_code',
    name: 'run_code',
    args: { code: 'x+1', language: 'python' },
    check: (r) => r.structuredContent?.results?.[0]?.text === '2',
  },
];

/** What the bare reference spawns: plain bubblewrap, no rlimits, no user switch, no seccomp filter. */
export const BARE_BWRAP_ARGS = [
  '--unshare-all',
  '--die-with-parent',
  '--ro-bind',
  '/usr',
  '/usr',
  '--ro-bind-try',
  '/bin',
  '/bin',
  '--ro-bind-try',
  '/lib',
  '/lib',
  '--ro-bind-try',
  '/lib64',
  '/lib64',
  '--ro-bind-try',
  '/etc',
  '/etc',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  '--tmpfs',
  '/tmp',
  '--',
  'bash',
  '-c',
  'echo hi',
];

/**
 * Resolves with `{ isolation, reps, warmupRounds, tools: { [label]: stats }, bareSpawn: stats }` (stats:
 * `{ p50Ms, p95Ms, minMs, maxMs }`), or `{ skipped: reason }` where our sandboxes do not run under bubblewrap.
 */
export async function measureToolLatency({ reps = 60, warmup = 10, warmupMs = 3000 } = {}) {
  const bwrap = findBwrap();
  if (bwrap === undefined) return { skipped: 'bwrap is not installed' };
  const server = await startServer('ours');
  const agent = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  try {
    const sessionId = await openSession(server.url, agent);
    const call = (name, args) => callTool(server.url, sessionId, name, args, agent);
    // The sandbox, the file read_file reads, and the variable run_code adds to.
    await call('run_command', { command: 'true' });
    await call('write_file', { path: SMALL_FILE, content: SMALL_CONTENT });
    await call('run_code', { code: 'x = 1', language: 'python' });
    const status = await call('sandbox_status', {});
    const isolation = String(status.structuredContent?.isolation);
    if (isolation !== 'bwrap') return { skipped: `our sandboxes run with isolation ${isolation}` };

    const steps = [
      ...TOOL_CALLS.map((tool) => ({
        label: tool.label,
        run: async () => {
          const result = await call(tool.name, tool.args);
          if (!tool.check(result))
            throw new Error(`${tool.label}: unexpected result ${JSON.stringify(result).slice(0, 300)}`);
        },
      })),
      { label: 'bare', run: () => spawnBareBwrap(bwrap) },
    ];
    const samples = Object.fromEntries(steps.map((s) => [s.label, []]));
    const round = async (index, counted) => {
      const shift = index % steps.length;
      for (const step of [...steps.slice(shift), ...steps.slice(0, shift)]) {
        const start = performance.now();
        await step.run();
        if (counted) samples[step.label].push(performance.now() - start);
      }
    };
    const warmUntil = performance.now() + warmupMs;
    let warmupRounds = 0;
    while (warmupRounds < warmup || performance.now() < warmUntil) await round(warmupRounds++, false);
    for (let i = 0; i < reps; i += 1) await round(warmupRounds + i, true);
    const { bare, ...tools } = Object.fromEntries(Object.entries(samples).map(([label, list]) => [label, stats(list)]));
    return { isolation, reps, warmupRounds, tools, bareSpawn: bare };
  } finally {
    await agent.close();
    await server.stop();
  }
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50Ms: median(sorted), p95Ms: percentile(sorted, 95), minMs: sorted[0], maxMs: sorted.at(-1) };
}

/** bwrap where the server looks for it (the sandbox's PATH directories); `undefined` where it is not installed. */
export function findBwrap() {
  for (const dir of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    try {
      accessSync(join(dir, 'bwrap'), constants.X_OK);
      return join(dir, 'bwrap');
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Spawns the bare reference and resolves once it exited and its `hi` was read in full. */
function spawnBareBwrap(bwrap) {
  return new Promise((resolve, reject) => {
    const child = spawn(bwrap, BARE_BWRAP_ARGS, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0 && stdout === 'hi\n') resolve();
      else
        reject(
          new Error(`bare bwrap exited with ${code}, stdout ${JSON.stringify(stdout)}: ${stderr.trim().slice(0, 300)}`),
        );
    });
  });
}
