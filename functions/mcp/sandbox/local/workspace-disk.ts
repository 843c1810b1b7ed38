/**
 * A workspace's disk: a sparse ext4 image (`<root>/.disks/<workspace name>.img`, the server's own, out of every
 * sandbox user's reach) loop-mounted at the workspace's directory itself. Everything of the workspace lives in
 * it — `home`, `tmp`, the uid record, the background logs — so the host pays at most the image's size for a
 * sandbox, and a write past it fails inside the sandbox with ENOSPC. Only the server, as root, on a host with
 * loop devices and mkfs.ext4 can do this; the start-up probe (`probeWorkspaceDisks`, disk-limit.ts) finds out
 * once.
 *
 * The file system: `-m 0` (no blocks kept for root: the server writes write_file's data as root, and must
 * hit the same limit); a journal of mke2fs's default size (a server crash does not touch a mounted file
 * system, but a host crash or power loss would leave one without a journal in need of fsck; with it, the
 * metadata is replayed on the next mount), initialized lazily (a fresh sparse file reads as zeros already: mkfs
 * takes ~13 ms and ~0.7 MiB of the host for a 1 GiB image, the same as without a journal). Mounted `nosuid`,
 * `nodev`, and `discard`, so that deleted files give their blocks back to the host.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, open, readdir, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

import { describeError, toErrnoCode } from '../../errors';
import { type Logger, SILENT_LOGGER } from '../../log';
import { type DiskHold, holdImage, lockIfUnheld, takeTurn } from './disk-locks';
import { detachLoopDevices, diskTools, runTool, unmount, type Unmounted } from './disk-tools';
import { mountsAt, readMounts } from './host-mounts';

/** The directory under LOCAL_SANDBOX_ROOT that holds the images (mode 0700, root's). */
export const DISKS_DIR = '.disks';
/** Options of every mount: no set-uid programs or device files from the image; freed blocks go back to the host. */
const MOUNT_OPTIONS = 'loop,nosuid,nodev,discard';

/** The image of the workspace in `dir` (`<root>/<name>` → `<root>/.disks/<name>.img`). */
export function imageOf(dir: string): string {
  return join(dirname(dir), DISKS_DIR, `${basename(dir)}.img`);
}

/** What `openWorkspaceDisk` finds before it acts. */
export interface DiskState {
  /** A file system is mounted at the workspace's directory. */
  readonly mounted: boolean;
  /** The workspace's image exists. */
  readonly imageExists: boolean;
  /** The workspace's directory (unmounted) holds nothing. */
  readonly dirEmpty: boolean;
}

/**
 * What to do for a workspace: `mounted` (use it as it is), `mount` (its image exists: mount it, never format it),
 * `format` (a new workspace gets an image), `plain` (a plain directory: no limit configured or possible, or a
 * workspace made before disk images, whose files stay where they are, unlimited, not migrated).
 */
export type DiskAction = 'mounted' | 'mount' | 'format' | 'plain';

/** Decides, from what is there and the limit for new workspaces (`undefined`: none). */
export function decideDisk(state: DiskState, limitBytes: number | undefined): DiskAction {
  if (state.mounted) return 'mounted';
  // An image holds the workspace's files whatever the setting is now: it is mounted, never re-made.
  if (state.imageExists) return 'mount';
  if (limitBytes === undefined || !state.dirEmpty) return 'plain';
  return 'format';
}

/**
 * Creates `image` as a sparse file of `bytes` with an empty ext4 file system: formatted aside, then renamed into place.
 */
export async function formatImage(image: string, bytes: number): Promise<void> {
  const aside = `${image}.new-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const handle = await open(
      aside,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      await handle.truncate(bytes);
    } finally {
      await handle.close();
    }
    await runTool(diskTools().mkfs, [
      '-q',
      '-F',
      '-m',
      '0',
      '-E',
      'lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0',
      aside,
    ]);
    // A crash before this line leaves no half-made image under the name that is mounted.
    await rename(aside, image);
  } finally {
    await rm(aside, { force: true });
  }
}

export async function mountImage(image: string, dir: string): Promise<void> {
  await runTool(diskTools().mount, ['-t', 'ext4', '-o', MOUNT_OPTIONS, image, dir]);
}

async function inspect(dir: string, image: string): Promise<DiskState> {
  const [mounts, real, imageInfo, entries] = await Promise.all([
    readMounts(),
    realpath(dir),
    stat(image).catch((err: unknown) => {
      if (toErrnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }),
    readdir(dir),
  ]);
  return { mounted: mountsAt(mounts, real) > 0, imageExists: imageInfo !== undefined, dirEmpty: entries.length === 0 };
}

/** The real paths of a workspace's directory and image (what mountinfo and the loop devices name). */
export async function realPaths(dir: string): Promise<{ dir: string; image: string }> {
  const root = await realpath(dirname(dir));
  return { dir: join(root, basename(dir)), image: join(root, DISKS_DIR, `${basename(dir)}.img`) };
}

/**
 * Unmounts every file system at `real` (stacked mounts never happen: the turn prevents them, but each would need
 * its own unmount) and detaches the loop device behind the image, should it not have cleared itself (it is set
 * to when `mount -o loop` attaches it). Resolves with `lazy` when a mount had to be detached lazily.
 */
export async function unmountImage(real: { dir: string; image: string }): Promise<Unmounted> {
  let how: Unmounted = 'clean';
  for (let mounted = mountsAt(await readMounts(), real.dir); mounted > 0; mounted -= 1) {
    if ((await unmount(real.dir)) === 'lazy') how = 'lazy';
  }
  if (mountsAt(await readMounts(), real.dir) > 0)
    throw new Error(`the workspace's disk image is still mounted at ${real.dir}`);
  await detachLoopDevices((device) => device.backingFile === real.image);
  return how;
}

/** A workspace's disk image, mounted at its directory and held (disk-locks.ts) while a sandbox has it open. */
export interface WorkspaceDisk {
  /** The image's size: the limit on all the workspace's files, in bytes. */
  readonly limitBytes: number;
  /**
   * Lets go of it (the sandbox ended, or was let go for its session to come back to): the last holder, on any
   * server sharing the root, unmounts the image and frees its loop device; the image stays, and is mounted again
   * when a sandbox opens the workspace. Never rejects (a failure is logged: the next start-up releases it).
   */
  release(): Promise<void>;
  /** Lets go of the hold only, for a caller that deletes the workspace (removeWorkspaceDisk). */
  drop(): Promise<void>;
}

export interface OpenWorkspaceDiskOptions {
  /** The size of a new workspace's image, in bytes. @default none: a new workspace is a plain directory */
  limitBytes?: number;
  /** Where a disk that could not be let go is reported. @default SILENT_LOGGER */
  logger?: Logger;
}

/**
 * Gives the workspace in `dir` (just made, or re-opened) its disk: mounts its image when it has one and it is not
 * mounted (it was let go, or the host restarted), formats one of `limitBytes` for a new workspace, or leaves a
 * plain directory (`undefined`). Every change happens under the image's turn, so an image is never mounted
 * twice; the hold is taken first, so an image found mounted stays mounted while this sandbox has it.
 */
export async function openWorkspaceDisk(
  dir: string,
  { limitBytes, logger = SILENT_LOGGER }: OpenWorkspaceDiskOptions = {},
): Promise<WorkspaceDisk | undefined> {
  const image = imageOf(dir);
  if (decideDisk(await inspect(dir, image), limitBytes) === 'plain') return undefined;
  let hold = await holdImage(image).catch((err: unknown) => {
    if (toErrnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
  try {
    if (hold === undefined || decideDisk(await inspect(dir, image), limitBytes) !== 'mounted') {
      const turn = await takeTurn(image);
      try {
        // Decided again under the turn: another sandbox may have mounted (or let go of) it meanwhile.
        const action = decideDisk(await inspect(dir, image), limitBytes);
        if (action === 'plain') {
          await hold?.close();
          return undefined;
        }
        if (action === 'format') await formatImage(image, limitBytes ?? 0);
        if (action !== 'mounted') {
          await mountImage(image, dir);
          // The file system's root is the workspace's directory: the server's, searchable only (as createWorkspace
          // makes it).
          await chmod(dir, 0o711);
        }
        hold ??= await holdImage(image);
      } finally {
        await turn.release();
      }
    }
    return createWorkspaceDisk(dir, (await stat(image)).size, hold, logger);
  } catch (err: unknown) {
    await hold?.close();
    throw err;
  }
}

function createWorkspaceDisk(dir: string, limitBytes: number, hold: DiskHold, logger: Logger): WorkspaceDisk {
  let dropped: Promise<void> | undefined;
  const drop = (): Promise<void> => (dropped ??= hold.close().catch(() => undefined));
  let released: Promise<void> | undefined;
  const release = async (): Promise<void> => {
    await drop();
    const image = imageOf(dir);
    // Deleted meanwhile (DELETE on another server, or the root removed): nothing is mounted there any more.
    const state = await inspect(dir, image).catch(() => undefined);
    if (state === undefined || (!state.mounted && !state.imageExists)) return;
    const turn = await takeTurn(image);
    try {
      // Another sandbox (here, or on a server sharing the root) still has it open: the last one unmounts.
      const lock = await lockIfUnheld(image);
      if (lock.held) return;
      try {
        const how = await unmountImage(await realPaths(dir));
        if (how === 'lazy')
          logger.info(
            'workspace disk detached lazily: a process still has a file open in it; its loop device goes ' +
              'when it closes it',
            { workspace: basename(dir) },
          );
      } finally {
        await lock.release();
      }
      if (lock.gone) await turn.removeLockFile();
    } finally {
      await turn.release();
    }
  };
  return {
    limitBytes,
    release: () =>
      (released ??= release().catch((err: unknown) =>
        logger.warn('workspace disk left mounted: the next start-up on LOCAL_SANDBOX_ROOT releases it', {
          workspace: basename(dir),
          error: describeError(err),
        }),
      )),
    drop,
  };
}

/**
 * Takes the disk of the workspace in `dir` away, before its directory is deleted: lets go of `disk` (this
 * sandbox's hold), unmounts it whoever else holds it (lazily when a process still has a file open in it; its
 * loop device then goes when that file is closed) and deletes the image and its lock file. The files go with the
 * image; a workspace without one is left to the caller's rm.
 */
export async function removeWorkspaceDisk(dir: string, disk?: WorkspaceDisk): Promise<void> {
  await disk?.drop();
  const image = imageOf(dir);
  const state = await inspect(dir, image).catch(() => undefined);
  if (state === undefined || (!state.mounted && !state.imageExists)) {
    await rm(image, { force: true });
    return;
  }
  const turn = await takeTurn(image);
  try {
    const real = await realPaths(dir);
    await unmountImage(real);
    await rm(image, { force: true });
    await turn.removeLockFile();
  } finally {
    await turn.release();
  }
}
