/**
 * The file tools run as the server (often root) inside a workspace whose owner can swap a directory for a
 * symlink at any moment. Hammer that race and check nothing outside the workspace is ever read, written or
 * listed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  listWorkspaceFiles,
  readWorkspaceFile,
  writeWorkspaceFile,
} from '../../../../functions/mcp/sandbox/local/files';
import { createWorkspace, type Workspace } from '../../../../functions/mcp/sandbox/local/workspace';

const ROUNDS = 400;
let root: string;
let outside: string;
let ws: Workspace;
let swapper: ChildProcess;
let exchanger: ChildProcess;

/**
 * Swaps `x/d` (a directory) and `x/l` (a symlink to the outside) atomically and endlessly with
 * renameat2(RENAME_EXCHANGE): at every instant one of the two names is a directory and the other the link.
 */
const EXCHANGE_LOOP = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
while True:
    libc.renameat2(AT_FDCWD, b"x/d", AT_FDCWD, b"x/l", RENAME_EXCHANGE)`;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'race-'));
  outside = join(root, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret'), 'host secret');
  ws = await createWorkspace({ root, sessionKey: 'racer', virtualHome: false, sandboxUser: false });
  // Flip home/d between a real directory and a symlink to the outside directory, as fast as possible.
  // Its own process group, so that killing it also kills the `mkdir` or `ln` it is running at that moment.
  swapper = spawn(
    'bash',
    [
      '-c',
      `cd ${ws.home} && while true; do rm -rf d; mkdir d; echo inside > d/secret; rm -rf d; ln -s ${outside} d; done`,
    ],
    { stdio: 'ignore', detached: true },
  );
  mkdirSync(join(ws.home, 'x', 'd'), { recursive: true });
  writeFileSync(join(ws.home, 'x', 'd', 'inside-entry'), 'inside');
  symlinkSync(outside, join(ws.home, 'x', 'l'));
  exchanger = spawn('python3', ['-c', EXCHANGE_LOOP], { cwd: ws.home, stdio: 'ignore', detached: true });
});

/**
 * Kills `child` and everything it started (its process group: a loop's `mkdir` outlives a killed bash) and resolves
 * once it is gone, so that nothing creates files while the directory is removed.
 */
function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(-child.pid, 'SIGKILL');
  return gone;
}

afterAll(async () => {
  await Promise.all([killed(swapper), killed(exchanger)]);
  // A command the group was running when it was killed may still be leaving the kernel: retry a directory it filled.
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
});

it('never writes through a directory swapped for a symlink', async () => {
  for (let i = 0; i < ROUNDS; i += 1) {
    await writeWorkspaceFile(ws, `d/written-${i}`, Buffer.from('x')).catch(() => undefined);
  }
  const leaked = Array.from({ length: ROUNDS }, (_, i) => `written-${i}`).filter((name) =>
    existsSync(join(outside, name)),
  );
  expect(leaked).toEqual([]);
});

it('never reads through a directory swapped for a symlink', async () => {
  const contents = new Set<string>();
  for (let i = 0; i < ROUNDS; i += 1) {
    const read = await readWorkspaceFile(ws, 'd/secret', 1024).catch(() => undefined);
    if (read !== undefined) contents.add(read.bytes.toString());
  }
  expect([...contents].filter((c) => c.includes('host secret'))).toEqual([]);
});

it('never lists a directory swapped for a symlink from its target', async () => {
  const seen = new Set<string>();
  for (let i = 0; i < ROUNDS; i += 1) {
    const listed = await listWorkspaceFiles(ws, { path: 'x', depth: 2, includeHidden: true, maxEntries: 100 }).catch(
      () => undefined,
    );
    for (const entry of listed?.entries ?? []) seen.add(entry.path);
  }
  // The walk did see inside the real directory (under either name), so the race was run.
  expect([...seen].some((path) => path.endsWith('/inside-entry'))).toBe(true);
  expect([...seen].filter((path) => path.endsWith('/secret'))).toEqual([]);
});
