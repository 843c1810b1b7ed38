/**
 * Starts the built bundle (`dist/index.js`) as a child process on a free loopback port, the way a user
 * runs it, and stops it (and everything it started) after the test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { removeCgroupsOf } from './cgroups';
import { removeRootWithDisks } from './disks';

export const BUNDLE = resolve(__dirname, '../../dist/index.js');

export interface StartedServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** `http://127.0.0.1:<port>/mcp` */
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Where this server's sandbox workspaces live (LOCAL_SANDBOX_ROOT). */
  readonly sandboxRoot: string;
  /** Everything the server wrote to stdout (JSON log lines) and stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Parsed JSON log lines. */
  logs(): Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

export interface StartServerOptions {
  /** Extra environment variables (merged over a clean base). */
  env?: Record<string, string>;
  /** Path of the bundle to run. @default dist/index.js */
  bundle?: string;
  /** Working directory of the process. */
  cwd?: string;
  /** Reuse this LOCAL_SANDBOX_ROOT (kept on stop; the caller owns it). @default a fresh temp dir */
  sandboxRoot?: string;
  /** Listen on this port. @default a free one (PORT=0) */
  port?: number;
  /** The Node binary that runs the bundle (FC's Node 20.10.0, say). @default the one running the tests */
  node?: string;
}

/** A fresh LOCAL_SANDBOX_ROOT that sandbox users can pass through. */
export function makeSandboxRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'mcp-test-root-'));
  // Sandbox processes run as their own users: they must be able to pass through the root.
  chmodSync(root, 0o711);
  return root;
}

/** Two instances of one deployment, for the tests of one file (`useInstances`). */
export interface Deployment {
  readonly first: StartedServer;
  readonly second: StartedServer;
  /** Their LOCAL_SANDBOX_ROOT. */
  readonly root: string;
}

/**
 * Two instances of one deployment on the local backend for a whole test file: one LOCAL_SANDBOX_ROOT and the same
 * environment (give it one MCP_SESSION_SECRET), started before the file's tests, stopped and the root removed after
 * them. Read the fields inside the tests, once they are started.
 */
export function useInstances(env: Record<string, string>): Deployment {
  let started: Deployment | undefined;
  const get = (): Deployment => {
    if (started === undefined) throw new Error('the instances are started before the tests, not before the file');
    return started;
  };
  beforeAll(async () => {
    const root = makeSandboxRoot();
    const [first, second] = await Promise.all([
      startServer({ env, sandboxRoot: root }),
      startServer({ env, sandboxRoot: root }),
    ]);
    started = { first, second, root };
  }, 60_000);
  afterAll(async () => {
    await stopAllServers();
    if (started !== undefined) rmSync(started.root, { recursive: true, force: true });
  });
  return {
    get first() {
      return get().first;
    },
    get second() {
      return get().second;
    },
    get root() {
      return get().root;
    },
  };
}

/** The session workspaces under a LOCAL_SANDBOX_ROOT (beside them: `.uids`, the sandbox users' claims). */
export function workspacesIn(root: string): string[] {
  return readdirSync(root).filter((name) => name.startsWith('mcp-sandbox-'));
}

/** The sandbox uids claimed under a LOCAL_SANDBOX_ROOT. */
export function uidClaimsIn(root: string): number[] {
  return existsSync(join(root, '.uids')) ? readdirSync(join(root, '.uids')).map(Number) : [];
}

const running = new Set<StartedServer>();
// A safety net for a test file that dies before its afterAll: no server outlives the test process (their
// sandboxes run under bubblewrap's --die-with-parent and go with them).
process.once('exit', () => {
  for (const server of running) server.child.kill('SIGKILL');
});

/** Starts a server; resolves once it logged `listening`. */
export async function startServer(options: StartServerOptions = {}): Promise<StartedServer> {
  const ownsRoot = options.sandboxRoot === undefined;
  const sandboxRoot = options.sandboxRoot ?? makeSandboxRoot();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    PORT: String(options.port ?? 0),
    LOCAL_SANDBOX_ROOT: sandboxRoot,
    LOG_LEVEL: 'info',
    // Workspaces on disk images cost a format and a mount each, and a server killed outright leaves them mounted
    // for the next start on its root (a fresh root never sees one): only the disk-limit tests turn them on.
    LOCAL_SANDBOX_DISK_MB: '0',
    ...options.env,
  };
  const child = spawn(options.node ?? process.execPath, [options.bundle ?? BUNDLE], {
    env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${err}\n${out}`)), 30_000);
    const check = (): void => {
      const match = /"msg":"listening".*?"port":(\d+)/.exec(out);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolvePort(Number(match[1]));
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${err}\n${out}`));
    });
  });
  const server: StartedServer = {
    origin: `http://127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    child,
    sandboxRoot,
    stdout: () => out,
    stderr: () => err,
    logs: () =>
      out
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    async stop() {
      running.delete(server);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      // A server killed outright leaves its sandboxes' cgroups; no later server will have its root to sweep them.
      if (ownsRoot) await removeCgroupsOf(sandboxRoot);
      // Unmounted first: rm -rf would delete the images under their mounts and leave both (test/support/disks.ts).
      if (ownsRoot) removeRootWithDisks(sandboxRoot);
    },
  };
  running.add(server);
  return server;
}

/** A port that was free a moment ago (for tests that restart a server on the same address). */
export async function findFreePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolvePort(port));
    });
  });
}

/** Stops every server still running (registered in each e2e file's afterAll/afterEach). */
export async function stopAllServers(): Promise<void> {
  await Promise.all([...running].map((s) => s.stop()));
}

/** Runs the server with `env` and resolves with its exit code and output (for start-up refusals). */
export function runServerToExit(
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [BUNDLE], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: '0', LOCAL_SANDBOX_DISK_MB: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not exit within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}
