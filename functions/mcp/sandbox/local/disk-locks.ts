/**
 * Who may mount and unmount a workspace's disk image, among every server process that shares LOCAL_SANDBOX_ROOT
 * (and every sandbox of one process). Two flock(2) locks per image, both in `<root>/.disks` (root's, 0700: no
 * sandbox user can open, let alone lock, either):
 *
 * - **the hold**: a shared lock on the image file itself, taken by each sandbox that has the workspace open and
 *   kept for as long as it does. The kernel drops it when the descriptor closes, however the process ends
 *   (SIGKILL, a crash), so a hold cannot outlive its holder and needs no pid or start time to be tested;
 * - **the turn**: an exclusive lock on `<name>.lock`, held only while one process decides and acts on the
 *   image (format, mount, unmount, delete), so each decision is made on what is there and acted on before
 *   anyone else looks.
 *
 * The rule: an image is unmounted only under the turn, and only when an exclusive lock on it can be had at once
 * (no hold: no live sandbox anywhere has the workspace open); that lock is kept until the unmount is done, so a
 * sandbox opening the workspace meanwhile waits and then finds it unmounted. Deleting a workspace (DELETE, the
 * sweep) takes the turn but not that test: an ended session's files go whoever holds them.
 *
 * Locks are taken by flock(1) on a descriptor this process hands it (as descriptor 3) and keeps: the lock
 * belongs to the open file, not to the flock process, and each open file is its own lock, even within one
 * process. Node opens every file close-on-exec, so no sandbox process inherits one.
 */
import { constants } from 'node:fs';
import { type FileHandle, mkdir, open, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

import { toErrnoCode } from '../../errors';
import { diskTools, runTool, runToolExit, TOOL_TIMEOUT_MS } from './disk-tools';

/** flock(1)'s exit code when `-n` finds the lock taken (its `-E`). */
const LOCK_TAKEN_EXIT = 75;
/** A turn won on a lock file deleted meanwhile is taken again, at most this often. */
const MAX_TURN_ATTEMPTS = 5;

/** The turn's lock file of `image` (`<root>/.disks/<name>.img` → `<root>/.disks/<name>.lock`). */
export function lockFileOf(image: string): string {
  return `${image.replace(/\.img$/, '')}.lock`;
}

/** A turn on one image: the exclusive right to change it (mount, unmount, format, delete). */
export interface DiskTurn {
  /** Ends the turn. */
  release(): Promise<void>;
  /** Deletes the lock file (the image is gone for good); the turn still needs `release`. */
  removeLockFile(): Promise<void>;
}

async function lockDescriptor(handle: FileHandle, mode: '-x' | '-s'): Promise<void> {
  try {
    await runTool(diskTools().flock, [mode, '-w', String(TOOL_TIMEOUT_MS / 1000), '3'], handle.fd);
  } catch (err: unknown) {
    await handle.close();
    throw err;
  }
}

/** Waits for the turn on `image` (at most TOOL_TIMEOUT_MS); `<root>/.disks` is made again if it went. */
export async function takeTurn(image: string): Promise<DiskTurn> {
  const path = lockFileOf(image);
  await mkdir(dirname(path), { mode: 0o700 }).catch((err: unknown) => {
    if (toErrnoCode(err) !== 'EEXIST') throw err;
  });
  for (let attempt = 1; ; attempt += 1) {
    const handle = await open(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    await lockDescriptor(handle, '-x');
    // The lock file goes with its image, under the turn: a lock won on a file deleted meanwhile is no turn.
    const [held, named] = await Promise.all([handle.stat(), stat(path).catch(() => undefined)]);
    if (named !== undefined && named.ino === held.ino && named.dev === held.dev) {
      return { release: () => handle.close(), removeLockFile: () => unlink(path).catch(() => undefined) };
    }
    await handle.close();
    if (attempt >= MAX_TURN_ATTEMPTS) throw new Error(`the lock file ${path} keeps being replaced`);
  }
}

/** A hold on an image: a shared lock, for as long as a sandbox has its workspace open. */
export interface DiskHold {
  /** Lets go (closes the descriptor). */
  close(): Promise<void>;
}

/**
 * Holds `image` (shared with every other holder). Waits only while someone is unmounting it (the exclusive lock
 * below); rejects with ENOENT when there is no image.
 */
export async function holdImage(image: string): Promise<DiskHold> {
  const handle = await open(image, constants.O_RDONLY | constants.O_NOFOLLOW);
  await lockDescriptor(handle, '-s');
  return { close: () => handle.close() };
}

/** What `lockIfUnheld` found: a live holder, or none (the image then locked until `release`, or `gone`). */
export type UnheldImage =
  | { readonly held: true }
  | { readonly held: false; readonly gone: boolean; release(): Promise<void> };

/**
 * Under the turn: the image with no hold on it, locked exclusively until `release` (nobody holds or takes a
 * hold meanwhile), or `held` when some live process holds it. An image that no longer exists (`gone`) has no
 * holder anyone could test: whoever deleted it was ending the workspace.
 */
export async function lockIfUnheld(image: string): Promise<UnheldImage> {
  const handle = await open(image, constants.O_RDONLY | constants.O_NOFOLLOW).catch((err: unknown) => {
    if (toErrnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (handle === undefined) return { held: false, gone: true, release: () => Promise.resolve() };
  const exit = await runToolExit(diskTools().flock, ['-x', '-n', '-E', String(LOCK_TAKEN_EXIT), '3'], handle.fd).catch(
    async (err: unknown) => {
      await handle.close();
      throw err;
    },
  );
  if (exit.code === 0) return { held: false, gone: false, release: () => handle.close() };
  await handle.close();
  if (exit.code === LOCK_TAKEN_EXIT) return { held: true };
  throw new Error(`flock failed: ${exit.stderr}`);
}
