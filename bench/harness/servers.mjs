// Starting and stopping the servers under test as child processes on free loopback ports, and reading
// their memory. Every server is a bundle run with the same `node` as the benchmark.
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { removeRootWithDisks } from './sandbox-host.mjs';

const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT_DIR = join(BENCH_DIR, '..');

/**
 * The servers the benchmark knows, by name: the bundle to run. `BENCH_OURS_BUNDLE` runs another build of ours
 * (e.g. `node -e "import('./build.mjs').then((m) => m.build({ outdir: '/tmp/a' }))"`, then
 * `BENCH_OURS_BUNDLE=/tmp/a/index.js node bench/run.mjs --only cold-start`), so that others rebuilding dist/ do not
 * change the bundle mid-measurement.
 */
export const BUNDLES = {
  ours: process.env.BENCH_OURS_BUNDLE ?? join(ROOT_DIR, 'dist/index.js'),
  r1: join(BENCH_DIR, 'dist/r1.js'),
  r2: join(BENCH_DIR, 'dist/r2.js'),
  bare: join(BENCH_DIR, 'dist/bare.js'),
};

/** A port on 127.0.0.1 that was free a moment ago. */
export function findFreePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** A fresh LOCAL_SANDBOX_ROOT that sandbox users (their own uids when run as root) can pass through. */
export function createSandboxRoot() {
  const root = mkdtempSync(join(tmpdir(), 'mcp-bench-root-'));
  chmodSync(root, 0o711);
  return root;
}

/**
 * Ours at its default log level (`info`: one line per request) and at `warn` (no request lines), by name. Every
 * other figure runs `ours`, i.e. as deployed.
 */
export const OUR_LOG_LEVELS = { ours: undefined, 'ours-warn': 'warn' };

/**
 * The `env` of ours for figures that open more sessions than one credential may open at once (MCP_INITIALIZE_BURST,
 * 120 by default, then MCP_INITIALIZE_PER_MIN a minute): the initialize rate limit off (0: no limit), since they
 * measure sessions and sandboxes, not the limit.
 */
export const MANY_SESSIONS_ENV = Object.freeze({ MCP_INITIALIZE_PER_MIN: '0' });

/** Whether `name` is a build of ours (at some log level). */
export function isOurs(name) {
  return Object.hasOwn(OUR_LOG_LEVELS, name);
}

/** The bundle server `name` runs. */
export function bundleOf(name) {
  return isOurs(name) ? BUNDLES.ours : BUNDLES[name];
}

/**
 * The environment each server gets: a clean base, loopback, and for ours auth off and its log level; `env` (ours only)
 * is laid over the rest.
 */
export function serverEnv(name, port, { sandboxRoot, maxSessions = 2000, env = {} } = {}) {
  const base = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    PORT: String(port),
    HOST: '127.0.0.1',
  };
  if (!isOurs(name)) return base;
  // No disk images: the figures measure calls, not workspace creation, and images of sessions the bench lets go
  // would stay mounted under the root it deletes afterwards.
  const logLevel = OUR_LOG_LEVELS[name];
  return {
    ...base,
    MCP_AUTH: 'none',
    ...(logLevel && { LOG_LEVEL: logLevel }),
    LOCAL_SANDBOX_ROOT: sandboxRoot,
    LOCAL_SANDBOX_DISK_MB: '0',
    MCP_MAX_SESSIONS: String(maxSessions),
    ...env,
  };
}

const GC_HOOK = join(BENCH_DIR, 'harness/gc-on-signal.cjs');
/** The file in BENCH_HEAP_SNAPSHOT_DIR that asks GC_HOOK for a heap snapshot with its next reading. */
const SNAPSHOT_REQUEST = 'snapshot-requested';
const GC_DONE = /^bench-gc-done (.*)$/gm;

/**
 * Spawns server `name` on `port`. Its stdout (ours: the log) goes to a fresh file, as with
 * `node dist/index.js > server.log`: each line costs its real write, as on FC, and the bench's own event loop, busy
 * with load, cannot slow a reader down (a pipe drained by it could fill and block the server's writes);
 * `child.stdoutBytes()` is that file's size so far, `child.readLog()` its text. The tail of stderr is kept for error
 * messages. With `gcHook`, the server also runs a full GC on SIGUSR2 (see `collectGarbage`).
 */
export function spawnServer(name, port, options = {}) {
  const args = options.gcHook === true ? ['--expose-gc', '--require', GC_HOOK, bundleOf(name)] : [bundleOf(name)];
  const logDir = mkdtempSync(join(tmpdir(), 'mcp-bench-log-'));
  const logFile = join(logDir, 'stdout.log');
  const logFd = openSync(logFile, 'w');
  const env = serverEnv(name, port, options);
  const child = spawn(process.execPath, args, {
    env,
    stdio: ['ignore', logFd, 'pipe'],
  });
  closeSync(logFd);
  child.snapshotDir = env.BENCH_HEAP_SNAPSHOT_DIR;
  child.once('exit', () => rmSync(logDir, { recursive: true, force: true }));
  child.stdoutBytes = () => {
    try {
      return statSync(logFile).size;
    } catch {
      return Number.NaN;
    }
  };
  child.readLog = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  let stderr = '';
  child.gcReports = [];
  child.stderr.setEncoding('utf8').on('data', (chunk) => {
    for (const match of chunk.matchAll(GC_DONE)) child.gcReports.push(JSON.parse(match[1]));
    stderr = (stderr + chunk.replace(GC_DONE, '')).slice(-4000);
    child.emit('bench-stderr');
  });
  child.stderrTail = () => stderr;
  return child;
}

/**
 * Makes a server started with `gcHook` run a full GC; resolves with its `process.memoryUsage()` right
 * after (bytes), with `codeBytes`. With `snapshot` (a server started with BENCH_HEAP_SNAPSHOT_DIR in its `env`), it
 * also writes a heap snapshot, whose path is then `snapshot` (bench/harness/gc-on-signal.cjs).
 */
export function collectGarbage(server, { snapshot = false } = {}) {
  const { child } = server;
  const target = child.gcReports.length + 1;
  if (snapshot) {
    if (child.snapshotDir === undefined) throw new Error(`${server.name} was started without BENCH_HEAP_SNAPSHOT_DIR`);
    writeFileSync(join(child.snapshotDir, SNAPSHOT_REQUEST), '');
  }
  return new Promise((resolve, reject) => {
    // A bound on a hang: a heap snapshot takes a second or two.
    const timer = setTimeout(() => reject(new Error(`${server.name} did not run GC within 30 s`)), 30_000);
    const check = () => {
      if (child.gcReports.length < target) return;
      clearTimeout(timer);
      child.off('bench-stderr', check);
      resolve(child.gcReports[target - 1]);
    };
    child.on('bench-stderr', check);
    child.kill('SIGUSR2');
  });
}

/**
 * Starts server `name` and waits until it accepts connections. Resolves with
 * `{ name, url, origin, pid, child, sandboxRoot, stop() }`.
 */
export async function startServer(name, options = {}) {
  const ownsRoot = isOurs(name) && options.sandboxRoot === undefined;
  const sandboxRoot = isOurs(name) ? (options.sandboxRoot ?? createSandboxRoot()) : undefined;
  const port = await findFreePort();
  const child = spawnServer(name, port, { ...options, sandboxRoot });
  const origin = `http://127.0.0.1:${port}`;
  await waitForPort(port, child, 15_000);
  return {
    name,
    origin,
    url: `${origin}/mcp`,
    pid: child.pid,
    child,
    sandboxRoot,
    stop: async () => {
      await stopChild(child, 30_000);
      if (ownsRoot) await removeRootWithDisks(sandboxRoot);
    },
  };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopChild(child, graceMs = 10_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * CPU time a process has used so far, all its threads, user + system, in ms (`/proc/<pid>/stat`, 10 ms ticks on
 * Linux); `NaN` where there is no /proc.
 */
export function readCpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU time of a process's main thread (the one that runs JavaScript) so far, in ms, to the nanosecond
 * (`/proc/<pid>/schedstat`); `NaN` where there is none.
 */
export function readMainThreadCpuMs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

/** `getconf CLK_TCK`: 100 on every Linux this runs on. */
const CLOCK_TICKS_PER_S = 100;

/** The peak resident set size of a process so far (`VmHWM` of /proc/<pid>/status), in KiB; `NaN` where none. */
export function readPeakRssKiB(pid) {
  try {
    return Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}

/** Resident set size of a process, in KiB (`ps -o rss=`). */
export function readRssKiB(pid) {
  return Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim());
}

async function waitForPort(port, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${child.stderrTail()}`);
    if (await canConnect(port)) return;
    if (Date.now() > deadline) throw new Error(`server did not listen within ${timeoutMs} ms:\n${child.stderrTail()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function canConnect(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
