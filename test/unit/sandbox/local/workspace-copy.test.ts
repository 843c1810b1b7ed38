/**
 * Forks' files (workspace-copy.ts, and createWorkspace's `forked`): a fork of a plain workspace and of an image
 * workspace, asleep or running, has its source's files and none of the server's state of it, a user of its own
 * that owns every file, and goes its own way after; a copy of a mounted image while a process writes is a clean
 * file system and leaves the source thawed; a copy that fails leaves nothing behind; a sandbox that swaps
 * directories for symlinks while it is copied never leads the copy out of its files.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { isAppError } from '../../../../functions/mcp/errors';
import { workspaceSandboxId } from '../../../../functions/mcp/sandbox/local/sandbox-id';
import {
  createWorkspace,
  removeWorkspace,
  toWorkspaceName,
  type Workspace,
} from '../../../../functions/mcp/sandbox/local/workspace';
import { copyWorkspace } from '../../../../functions/mcp/sandbox/local/workspace-copy';
import { imageOf } from '../../../../functions/mcp/sandbox/local/workspace-disk';
import { loopDevicesSettledUnder, mountsUnder, removeRootWithDisks } from '../../../support/disks';
import { needs } from '../../../support/needs';
import { uidClaimsIn } from '../../../support/server';

const MIB = 2 ** 20;

/** One entry of a tree as a fork must reproduce it: its kind, mode, time (whole seconds) and content. */
interface TreeEntry {
  readonly path: string;
  readonly kind: 'directory' | 'file' | 'symlink' | 'other';
  readonly mode?: number;
  readonly mtimeS?: number;
  readonly sha256?: string;
  readonly target?: string;
}

/** Every entry under `dir`, walked without following a symlink. */
function treeOf(dir: string): TreeEntry[] {
  const found: TreeEntry[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = rel === '' ? name : `${rel}/${name}`;
      const full = join(dir, path);
      const info = lstatSync(full);
      const mode = info.mode & 0o7777;
      const mtimeS = Math.floor(info.mtimeMs / 1000);
      if (info.isSymbolicLink()) found.push({ path, kind: 'symlink', target: readlinkSync(full) });
      else if (info.isDirectory()) {
        found.push({ path, kind: 'directory', mode, mtimeS });
        walk(path);
      } else if (info.isFile()) {
        const sha256 = createHash('sha256').update(readFileSync(full)).digest('hex');
        found.push({ path, kind: 'file', mode, mtimeS, sha256 });
      } else found.push({ path, kind: 'other' });
    }
  };
  walk('');
  return found;
}

/** The owners of `dir` and everything under it (symlinks themselves). */
function ownersOf(dir: string): Set<number> {
  const owners = new Set([lstatSync(dir).uid]);
  for (const entry of treeOf(dir)) owners.add(lstatSync(join(dir, entry.path)).uid);
  return owners;
}

/** Runs a shell script as `uid` (as the sandbox's own processes would), in `cwd`. */
function asUser(uid: number, cwd: string, script: string): void {
  execFileSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'sh', '-c', script], {
    cwd,
    stdio: 'pipe',
  });
}

/** What the source's sandbox made: modes, symlinks in and out, a sparse file, a named pipe, a file in /tmp. */
const SANDBOX_FILES = `
  mkdir -p src/deep/er && printf 'print(1)\\n' > src/main.py && chmod 640 src/main.py && chmod 750 src
  printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh && echo deep > src/deep/er/file
  ln -s src/main.py link-in && ln -s /etc/passwd link-out && ln -s /nonexistent/target dangling
  truncate -s 32M sparse && printf end >> sparse && mkfifo pipe && echo scratch > ../tmp/scratch.txt
`;

/** The server's own state of a sandbox: its id, its last-used marker, a background process's log. */
async function addServerState(ws: Workspace): Promise<string> {
  writeFileSync(join(ws.dir, 'last-used'), '');
  mkdirSync(join(ws.dir, 'processes'));
  writeFileSync(join(ws.dir, 'processes', 'p1.log'), 'output');
  return workspaceSandboxId(ws.dir);
}

let root: string;
/** The processes a test started, each with its end: the teardown kills them and waits. */
const children = new Map<ChildProcess, Promise<unknown>>();
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'ws-copy-'));
  // The sandbox users reach their workspaces through it, as through LOCAL_SANDBOX_ROOT.
  chmodSync(root, 0o711);
});
afterEach(async () => {
  for (const child of children.keys()) child.kill('SIGKILL');
  await Promise.all(children.values());
  children.clear();
  removeRootWithDisks(root);
  expect(mountsUnder(root)).toEqual([]);
  expect(await loopDevicesSettledUnder(root)).toEqual([]);
});

/** Starts a process the teardown kills (and waits for). */
function start(file: string, args: readonly string[], cwd?: string): ChildProcess {
  const child = spawn(file, args, { cwd, stdio: 'ignore' });
  children.set(child, new Promise((resolve) => child.once('close', resolve)));
  return child;
}

/** A process that appends numbered lines to `file` (and rewrites a small one) until it is killed. */
const keepWriting = (file: string): ChildProcess =>
  start('sh', ['-c', `i=0; while :; do i=$((i+1)); echo $i >> '${file}'; echo $i > '${file}.last'; done`]);

const open = (sessionKey: string, options: { diskBytes?: number; forked?: boolean } = {}): Promise<Workspace> =>
  createWorkspace({ root, sessionKey, virtualHome: true, sandboxUser: true, ...options });
const dirOf = (sessionKey: string): string => join(root, toWorkspaceName(sessionKey));
/**
 * Checks what every fork has: its source's files (an image's whole; a plain workspace's without its named pipe,
 * whose processes are not forked), a user of its own owning all of them, none of its state.
 */
async function expectForkOf(source: Workspace, sourceId: string, fork: Workspace): Promise<void> {
  const pipes = source.disk === undefined ? ['pipe'] : [];
  expect(treeOf(fork.home)).toEqual(treeOf(source.home).filter((entry) => !pipes.includes(entry.path)));
  expect(treeOf(fork.tmp)).toEqual(treeOf(source.tmp));
  expect(lstatSync(join(fork.home, 'sparse')).blocks * 512).toBeLessThan(MIB);
  expect(fork.owner?.uid).toBeDefined();
  expect(fork.owner?.uid).not.toBe(source.owner?.uid);
  expect(ownersOf(fork.home)).toEqual(new Set([fork.owner?.uid]));
  expect(ownersOf(fork.tmp)).toEqual(new Set([fork.owner?.uid]));
  expect(ownersOf(source.home)).toEqual(new Set([source.owner?.uid]));
  expect(
    readdirSync(fork.dir)
      .filter((name) => name !== 'lost+found')
      .sort(),
  ).toEqual(['home', 'tmp', 'uid']);
  expect(readFileSync(join(fork.dir, 'uid'), 'utf8')).toBe(`${fork.owner?.uid}\n`);
  expect(uidClaimsIn(root).sort()).toEqual([source.owner?.uid, fork.owner?.uid].sort());
  expect(await workspaceSandboxId(fork.dir)).not.toBe(sourceId);
  // Each goes its own way.
  asUser(fork.owner?.uid ?? -1, fork.home, 'echo fork > src/main.py && echo new > only-fork');
  asUser(source.owner?.uid ?? -1, source.home, 'echo source > run.sh');
  expect(readFileSync(join(source.home, 'src/main.py'), 'utf8')).toBe('print(1)\n');
  expect(existsSync(join(source.home, 'only-fork'))).toBe(false);
  expect(readFileSync(join(fork.home, 'run.sh'), 'utf8')).toBe('#!/bin/sh\necho hi\n');
}

needs('root').describe('a fork of a plain workspace (as root: sandbox users)', () => {
  it('has its files (modes, times, symlinks as symlinks, sparse), a user of its own, none of its state', async () => {
    const source = await open('plain-source');
    asUser(source.owner?.uid ?? -1, source.home, SANDBOX_FILES);
    const sourceId = await addServerState(source);
    await copyWorkspace(source.dir, dirOf('plain-fork'));
    expect(lstatSync(dirOf('plain-fork')).mode & 0o7777).toBe(0o711);
    const fork = await open('plain-fork', { forked: true });
    await expectForkOf(source, sourceId, fork);
    // Nothing of the copy is left beside it.
    expect(readdirSync(root).sort()).toEqual(
      ['.uids', toWorkspaceName('plain-source'), toWorkspaceName('plain-fork')].sort(),
    );
    await removeWorkspace(fork);
    await removeWorkspace(source);
    expect(uidClaimsIn(root)).toEqual([]);
  });

  it('never leads out of the files of a sandbox that swaps its directories for symlinks meanwhile', async () => {
    // A file its user may read, outside its workspace (bubblewrap shows it none of the host's but the system). A
    // plain `cp -a` as that user, racing the same swaps, copied it in 4 of 600 runs: cp walks by path.
    const outside = join(root, 'outside');
    mkdirSync(outside, { mode: 0o755 });
    writeFileSync(join(outside, 'secret'), 'SECRET', { mode: 0o644 });
    const source = await open('racing-source');
    const uid = source.owner?.uid ?? -1;
    asUser(uid, source.home, 'mkdir -p d/e && echo mine > d/e/secret && echo mine > d/secret');
    const swaps =
      `while :; do mv d d.x; ln -s '${outside}' d; rm d; mv d.x d; ` +
      `mv d/e d/e.x; ln -s '${outside}' d/e; rm d/e; mv d/e.x d/e; done`;
    start('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'sh', '-c', swaps], source.home);
    let copied = 0;
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const target = dirOf(`racing-fork-${attempt}`);
      // A name swapped at the wrong moment fails the copy; one that succeeds holds the sandbox's own files only.
      const done = await copyWorkspace(source.dir, target).then(
        () => true,
        () => false,
      );
      if (!done) continue;
      copied += 1;
      const secrets = spawnSync('grep', ['-r', '-l', 'SECRET', target], { encoding: 'utf8' }).stdout;
      expect(secrets).toBe('');
      rmSync(target, { recursive: true, force: true });
    }
    expect(copied).toBeGreaterThan(0);
    expect(readdirSync(root).filter((name) => name.includes('racing-fork') || name.includes('.copy-'))).toEqual([]);
  });

  it('leaves nothing behind when the copy fails (the target is full)', async () => {
    const source = await open('full-source');
    asUser(source.owner?.uid ?? -1, source.home, 'head -c 4194304 /dev/urandom > big');
    const small = join(root, 'small');
    mkdirSync(small);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', small]);
    const target = join(small, toWorkspaceName('full-fork'));
    await expect(copyWorkspace(source.dir, target)).rejects.toThrow(/cp failed: .*No space left on device/);
    expect(readdirSync(small)).toEqual([]);
    expect(readFileSync(join(source.home, 'big')).length).toBe(4 * MIB);
  });
});

needs('disk images').describe('a fork of an image workspace (root, loop devices)', () => {
  it(
    'asleep (let go, unmounted): has its files, a user of its own, none of its state; the source stays as it ' +
      'was and the copy takes only what the source uses',
    async () => {
      const source = await open('image-source', { diskBytes: 64 * MIB });
      asUser(source.owner?.uid ?? -1, source.home, SANDBOX_FILES);
      const sourceId = await addServerState(source);
      await source.disk?.release();
      expect(mountsUnder(root)).toEqual([]);
      await copyWorkspace(source.dir, dirOf('image-fork'));
      expect(mountsUnder(root)).toEqual([]);
      const image = lstatSync(imageOf(dirOf('image-fork')));
      expect([image.uid, image.mode & 0o777, image.size]).toEqual([0, 0o600, 64 * MIB]);
      expect(image.blocks * 512).toBeLessThan(16 * MIB);
      expect(readdirSync(join(root, '.disks')).filter((name) => name.includes('.new-'))).toEqual([]);
      const fork = await open('image-fork', { forked: true });
      expect(fork.diskLimitBytes).toBe(64 * MIB);
      const back = await open('image-source');
      await expectForkOf(back, sourceId, fork);
      expect(mountsUnder(root).sort()).toEqual([back.dir, fork.dir].sort());
      await removeWorkspace(fork);
      await removeWorkspace(back);
    },
  );

  it('running, while a process writes: is a clean file system, and the source is thawed after', async () => {
    const source = await open('busy-source', { diskBytes: 64 * MIB });
    const log = join(source.home, 'log');
    const writer = keepWriting(log);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await copyWorkspace(source.dir, dirOf('busy-fork'));
    const fsck = spawnSync('e2fsck', ['-f', '-n', imageOf(dirOf('busy-fork'))], { encoding: 'utf8' });
    expect([fsck.status, fsck.stderr]).toEqual([0, expect.any(String)]);
    // Thawed: a write goes through at once, and the writer goes on.
    const write = spawnSync('sh', ['-c', `echo after > '${join(source.home, 'after')}'`], { timeout: 10_000 });
    expect(write.status).toBe(0);
    const lengthAfterCopy = readFileSync(log).length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(readFileSync(log).length).toBeGreaterThan(lengthAfterCopy);
    writer.kill('SIGKILL');
    const fork = await open('busy-fork', { forked: true });
    // The writer's lines, up to the moment of the freeze: none torn, none missing.
    const lines = readFileSync(join(fork.home, 'log'), 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.length).toBeGreaterThan(0);
    expect(lines).toEqual(lines.map((_, i) => String(i + 1)));
    expect(ownersOf(fork.home)).toEqual(new Set([fork.owner?.uid]));
    await removeWorkspace(fork);
    await removeWorkspace(source);
  });

  it('leaves nothing behind when the copy fails (the target is full), and thaws the source', async () => {
    const source = await open('full-source', { diskBytes: 64 * MIB });
    execFileSync('sh', ['-c', `head -c ${8 * MIB} /dev/urandom > '${join(source.home, 'big')}'`]);
    keepWriting(join(source.home, 'log'));
    const other = join(root, 'other');
    mkdirSync(join(other, '.disks'), { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', join(other, '.disks')]);
    const target = join(other, toWorkspaceName('full-fork'));
    await expect(copyWorkspace(source.dir, target)).rejects.toThrow(/cp failed: .*No space left on device/);
    expect(readdirSync(other)).toEqual(['.disks']);
    expect(readdirSync(join(other, '.disks'))).toEqual([]);
    const write = spawnSync('sh', ['-c', `echo after > '${join(source.home, 'after')}'`], { timeout: 10_000 });
    expect(write.status).toBe(0);
    await removeWorkspace(source);
  });
});

describe('what a copy refuses', () => {
  it('a source that does not exist: not_found, and no target is made', async () => {
    const err: unknown = await copyWorkspace(dirOf('nobody'), dirOf('fork')).catch((caught: unknown) => caught);
    expect(isAppError(err, 'not_found')).toBe(true);
    expect(existsSync(dirOf('fork'))).toBe(false);
  });

  it('a target that exists: left as it is', async () => {
    const source = await createWorkspace({ root, sessionKey: 'a', virtualHome: true, sandboxUser: false });
    const target = await createWorkspace({ root, sessionKey: 'b', virtualHome: true, sandboxUser: false });
    writeFileSync(join(target.home, 'kept'), 'kept');
    await expect(copyWorkspace(source.dir, target.dir)).rejects.toThrow(/exists already/);
    expect(readFileSync(join(target.home, 'kept'), 'utf8')).toBe('kept');
  });
});
