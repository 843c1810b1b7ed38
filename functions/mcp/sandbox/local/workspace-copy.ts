/**
 * A fork's files: a copy of another sandbox's workspace, made before the fork's workspace is opened
 * (`createWorkspace` with `forked`, which then drops what the server kept for the source and gives the files to the
 * fork's own user).
 *
 * An image workspace (workspace-disk.ts) is copied as its image file, copy-on-write where the host's file system
 * can (`cp --reflink=auto`) and sparse where it cannot, under the image's turn (nobody mounts or unmounts it
 * meanwhile). A mounted image is frozen for the copy (`fsfreeze`: writes wait, the journal is flushed), so the
 * copy is one consistent file system whatever the source's processes are doing; it is thawed however the copy
 * ends.
 *
 * A plain workspace's `home` and `tmp` are copied entry by entry while the sandbox may be running and swapping any
 * name for a symlink. `cp -a` is not safe against that: GNU cp does not walk with fts, it builds each source path
 * by name and opens it (coreutils copy.c: `copy_dir` calls `savedir` on the path, `copy_reg` opens the whole path
 * with O_NOFOLLOW on its last name only), so a directory swapped for a symlink mid-copy leads it out of the tree.
 * Here the server walks the directories itself, each opened from its parent's descriptor with O_NOFOLLOW, and one
 * `cp` per directory copies that directory's files and symlinks, named through the descriptor
 * (`/proc/self/fd/3/<name>`): cp resolves no name of the sandbox's but the last, which it lstats and opens with
 * O_NOFOLLOW, checking that what it opened is what it lstatted. It runs as the source's sandbox user when there
 * is one, so even a hard link can show it nothing that user could not read.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { chmod, type FileHandle, link, lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

import { AppError, toErrnoCode } from '../../errors';
import { takeTurn } from './disk-locks';
import { diskTools, runTool, TOOL_TIMEOUT_MS } from './disk-tools';
import { findProgram } from './find-program';
import { mountsAt, readLoopDevices, readMounts } from './host-mounts';
import { recordedUid } from './sandbox-users';
import { imageOf, realPaths } from './workspace-disk';

/** What a workspace's directory holds of the sandbox's own: the rest there is the server's, kept per sandbox. */
const SANDBOX_FILES = new Set(['home', 'tmp', 'lost+found']);
/** The trees a plain workspace's copy takes. */
const TREES = ['home', 'tmp'] as const;
/** Directories nested deeper than this fail the copy (the walk holds two descriptors per level). */
const MAX_DEPTH = 128;
/** One cp run copies at most this many names of a directory, and this many bytes of them. */
const BATCH_NAMES = 500;
const BATCH_BYTES = 64 * 1024;
/** How long a copy waits for the loop device of an image just unmounted to go. */
const DETACH_WAIT_MS = 2000;
/** A thaw that fails is tried again this often (a frozen workspace hangs every process that writes to it). */
const THAW_ATTEMPTS = 3;
/** cp's stderr kept; past this, the copy fails whatever it says. */
const MAX_STDERR_BYTES = 64 * 1024;
/** What cp says of a name that was deleted after the directory was read: a running sandbox's file, gone. */
const VANISHED = /: cannot stat .+: No such file or directory$/;
const TOOL_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' };

/**
 * Copies the workspace in `sourceDir` (running or asleep, image or plain) into `targetDir`, which must not exist:
 * its image to the target's image path, or its `home` and `tmp` into the new directory. A failure leaves no
 * target directory or image behind; a mounted source is thawed however the copy ends.
 */
export async function copyWorkspace(sourceDir: string, targetDir: string): Promise<void> {
  const [dir, image] = await Promise.all([lstatIfAny(sourceDir), lstatIfAny(imageOf(sourceDir))]);
  if (dir === undefined && image === undefined)
    throw new AppError('not_found', 'The sandbox to copy has no files any more: it was deleted.');
  // Claimed before anything is copied: a second copy to the same target fails here.
  await mkdir(targetDir, { mode: 0o700 }).catch((err: unknown) => {
    if (toErrnoCode(err) !== 'EEXIST') throw err;
    throw new Error(`the workspace ${basename(targetDir)} exists already`, { cause: err });
  });
  try {
    await chmod(targetDir, 0o711);
    if (image !== undefined) await copyImage(sourceDir, targetDir);
    else await copyTrees(sourceDir, targetDir);
  } catch (err: unknown) {
    await rm(targetDir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Deletes what the workspace in `dir` holds of the server's for its sandbox (the uid record, the sandbox's id, the
 * last-used marker, the background processes' logs, and whatever else is not `home`, `tmp` or `lost+found`): a
 * fork has none of its source's.
 */
export async function removeInheritedState(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!SANDBOX_FILES.has(name)) await rm(join(dir, name), { recursive: true, force: true });
  }
}

/**
 * Gives every file under `paths` to `owner` (`chown -R -P -h`: symlinks are changed themselves and never
 * followed). For trees nothing else touches meanwhile, such as a fork's before its first process.
 */
export async function chownTrees(paths: readonly string[], owner: { uid: number; gid: number }): Promise<void> {
  const chown = findProgram('chown');
  if (chown === undefined) throw new Error('chown (coreutils) is not installed');
  await runTool(chown, ['-R', '-P', '-h', `${owner.uid}:${owner.gid}`, '--', ...paths]);
}

async function lstatIfAny(path: string): Promise<Stats | undefined> {
  return lstat(path).catch((err: unknown) => {
    if (toErrnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
}

/** Copies the source's image under its turn, written aside and linked into place (never over another image). */
async function copyImage(sourceDir: string, targetDir: string): Promise<void> {
  const tools = diskTools();
  const target = imageOf(targetDir);
  await mkdir(dirname(target), { recursive: true, mode: 0o700 });
  // A server that dies mid-copy leaves this name, which its successor's start-up probe deletes (disk-limit.ts).
  const aside = `${target}.new-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const real = await realPaths(sourceDir);
    const copy = (): Promise<void> => runTool(tools.cp, ['--reflink=auto', '--sparse=always', '--', real.image, aside]);
    const turn = await takeTurn(real.image);
    try {
      if (mountsAt(await readMounts(), real.dir) > 0) await whileFrozen(tools.fsfreeze, real.dir, copy);
      else {
        await untilDetached(real.image);
        await copy();
      }
    } finally {
      await turn.release();
    }
    await chmod(aside, 0o600);
    await link(aside, target);
  } finally {
    await rm(aside, { force: true });
  }
}

/**
 * Waits (under the turn: nothing attaches it again meanwhile) until no loop device is behind `image`. One that
 * stays is a file system detached lazily, alive until a process lets go of a file in it: it cannot be frozen, and
 * the image may not hold its last writes yet. One that goes is the kernel clearing it just after an unmount.
 */
async function untilDetached(image: string): Promise<void> {
  for (let waitedMs = 0; (await readLoopDevices()).some((device) => device.backingFile === image); waitedMs += 50) {
    if (waitedMs >= DETACH_WAIT_MS)
      throw new Error('the workspace to copy is still being let go (a process has a file open in it); try again');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs `work` with the file system mounted at `dir` frozen, and thaws it however `work` ends. */
async function whileFrozen(fsfreeze: string, dir: string, work: () => Promise<void>): Promise<void> {
  await runTool(fsfreeze, ['--freeze', dir]);
  try {
    await work();
  } finally {
    await thaw(fsfreeze, dir);
  }
}

async function thaw(fsfreeze: string, dir: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await runTool(fsfreeze, ['--unfreeze', dir]);
      return;
    } catch (err: unknown) {
      if (attempt >= THAW_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/** Copies `files` (names in `from`) into `into`: one cp run, which resolves no name but their last. */
type CopyFiles = (from: FileHandle, into: FileHandle, files: readonly string[]) => Promise<void>;

/** Copies a plain workspace's trees aside, then renames them into place over the empty target directory. */
async function copyTrees(sourceDir: string, targetDir: string): Promise<void> {
  const uid = process.getuid?.() === 0 ? await recordedUid(sourceDir) : undefined;
  const copyFiles = fileCopier(uid);
  const aside = `${targetDir}.copy-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(aside, { mode: 0o700 });
  try {
    const into = await openDirectory(aside);
    try {
      for (const name of TREES) {
        // `home` and `tmp` are names in the server's directory: the sandbox cannot swap them.
        const from = await openDirectory(join(sourceDir, name)).catch((err: unknown) => {
          if (toErrnoCode(err) === 'ENOENT') return undefined;
          throw err;
        });
        if (from === undefined) continue;
        try {
          await copyDirectory(from, into, name, { copyFiles, uid, depth: 0 });
        } finally {
          await from.close();
        }
      }
    } finally {
      await into.close();
    }
    await chmod(aside, 0o711);
    await rename(aside, targetDir);
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
}

interface Walk {
  readonly copyFiles: CopyFiles;
  /** The user the copies are made as (the new directories are its while they fill), or the server. */
  readonly uid: number | undefined;
  readonly depth: number;
}

/**
 * Copies the directory open as `from` to `name` in `into`: its files and symlinks by cp, its directories by
 * recursion, each opened from `from`'s descriptor. Named pipes, sockets and devices are left out (the processes
 * they connect are not forked). A name deleted meanwhile is left out; one swapped for a symlink fails the copy.
 */
async function copyDirectory(from: FileHandle, into: FileHandle, name: string, walk: Walk): Promise<void> {
  if (walk.depth >= MAX_DEPTH) throw new Error(`the workspace's directories nest deeper than ${MAX_DEPTH}`);
  const info = await from.stat();
  await mkdir(inside(into, name), { mode: 0o700 });
  const made = await openDirectory(inside(into, name));
  try {
    if (walk.uid !== undefined) await made.chown(walk.uid, walk.uid);
    const entries = await readdir(inside(from), { withFileTypes: true });
    const files = entries.filter((entry) => entry.isFile() || entry.isSymbolicLink()).map((entry) => entry.name);
    for (const batch of toBatches(files)) await walk.copyFiles(from, made, batch);
    for (const entry of entries.filter((each) => each.isDirectory())) {
      const child = await openDirectory(inside(from, entry.name)).catch((err: unknown) => {
        if (toErrnoCode(err) === 'ENOENT') return undefined;
        throw err;
      });
      if (child === undefined) continue;
      try {
        await copyDirectory(child, made, entry.name, { ...walk, depth: walk.depth + 1 });
      } finally {
        await child.close();
      }
    }
    // Last: a directory without write permission still had its entries made, and they moved its time.
    await made.chmod(info.mode & 0o7777);
    await made.utimes(info.atime, info.mtime);
  } finally {
    await made.close();
  }
}

/** A directory opened by a path whose last name is not followed if it is a symlink. */
function openDirectory(path: string): Promise<FileHandle> {
  return open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
}

/** The open directory itself, or `name` in it, reached through its descriptor (no name above it is resolved). */
function inside(dir: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${dir.fd}` : `/proc/self/fd/${dir.fd}/${name}`;
}

function* toBatches(names: readonly string[]): Generator<readonly string[]> {
  let batch: string[] = [];
  let bytes = 0;
  for (const name of names) {
    if (batch.length >= BATCH_NAMES || bytes + name.length > BATCH_BYTES) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(name);
    bytes += name.length;
  }
  if (batch.length > 0) yield batch;
}

/**
 * The cp run of one batch: the source directory is its descriptor 3, the target its 4. As `uid` (through setpriv,
 * all groups dropped) when given; a name cp cannot stat (deleted since the directory was read) is not a failure.
 */
function fileCopier(uid: number | undefined): CopyFiles {
  const cp = findProgram('cp');
  const setpriv = findProgram('setpriv');
  if (cp === undefined) throw new Error('cp (coreutils) is not installed');
  if (uid !== undefined && setpriv === undefined) throw new Error('setpriv (util-linux) is not installed');
  const asUser =
    uid === undefined || setpriv === undefined
      ? []
      : [setpriv, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--'];
  const options = [
    '-P',
    '--preserve=mode,timestamps,links',
    '--reflink=auto',
    '--sparse=always',
    '-t',
    '/proc/self/fd/4',
  ];
  return (from, into, files) => {
    const [program = cp, ...args] = [
      ...asUser,
      cp,
      ...options,
      '--',
      ...files.map((name) => `/proc/self/fd/3/${name}`),
    ];
    return new Promise((resolve, reject) => {
      const child = spawn(program, args, {
        env: TOOL_ENV,
        stdio: ['ignore', 'ignore', 'pipe', from.fd, into.fd],
        timeout: TOOL_TIMEOUT_MS,
      });
      let stderr = '';
      child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
        if (stderr.length <= MAX_STDERR_BYTES) stderr += chunk;
      });
      child.once('error', (err) => reject(new Error(`cp failed: ${err.message}`)));
      child.once('close', (code, signal) => {
        const lines = stderr.split('\n').filter((line) => line !== '');
        const vanishedOnly = stderr.length <= MAX_STDERR_BYTES && lines.every((line) => VANISHED.test(line));
        if (code === 0 || (code === 1 && vanishedOnly && lines.length > 0)) resolve();
        else reject(new Error(`cp failed: ${lines[0] ?? signal ?? `exit ${code}`}`));
      });
    });
  };
}
