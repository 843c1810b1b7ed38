/**
 * The disk limit of new workspaces: whether images work under LOCAL_SANDBOX_ROOT (the start-up probe, with a tiny
 * image of its own), what the backend reports of it, and what a full disk says.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, realpath, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { describeError, toErrnoCode } from '../../errors';
import type { Logger } from '../../log';
import type { DiskFull, ResourceLimit } from '../types';
import { findDiskTools, unmount } from './disk-tools';
import { mountsAt, readMounts } from './host-mounts';
import { DISKS_DIR, formatImage, mountImage } from './workspace-disk';

/** The size of the start-up probe's image. */
const PROBE_BYTES = 16 * 1024 * 1024;

/** A probe's image and mount point, or an image being formatted, and the server process it is of. */
const LEFTOVER = /^(?:probe-(\d+)-[0-9a-f]+(?:\.img)?|.+\.img\.new-(\d+)-[0-9a-f]+)$/;

/**
 * Removes what a server process that died mid-probe or mid-format left in `disks` (a probe killed while its
 * image was mounted would otherwise keep a loop device for good). Another live process's are left alone.
 */
async function removeLeftovers(disks: string): Promise<void> {
  for (const name of await readdir(disks)) {
    const match = LEFTOVER.exec(name);
    const pid = Number(match?.[1] ?? match?.[2]);
    if (!Number.isInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    const path = join(disks, name);
    if (
      !name.endsWith('.img') &&
      !name.includes('.img.new-') &&
      mountsAt(await readMounts(), await realpath(path).catch(() => path)) > 0
    )
      await unmount(path).catch(() => undefined);
    await rm(path, { recursive: true, force: true }).catch(() => undefined);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err: unknown) {
    return toErrnoCode(err) !== 'ESRCH';
  }
}

/** What the start-up probe found: images work here (and whether LOCAL_SANDBOX_ROOT keeps them sparse), or why not. */
export type DiskProbe =
  | { readonly ok: true; readonly sparse: boolean }
  | { readonly ok: false; readonly reason: string };

/**
 * Finds out once, with a tiny image under `root`, whether workspaces can have disks here: root, the programs,
 * loop devices, and a format, mount, write and unmount that work. Leaves nothing behind but `.disks`.
 */
export async function probeWorkspaceDisks(root: string): Promise<DiskProbe> {
  if (process.platform !== 'linux') return { ok: false, reason: `${process.platform} has no loop-mounted ext4 images` };
  if (process.getuid?.() !== 0) return { ok: false, reason: 'the server is not root: it cannot mount disk images' };
  const found = findDiskTools();
  if (typeof found === 'string') return { ok: false, reason: found };
  if (!existsSync('/dev/loop-control'))
    return { ok: false, reason: 'no loop devices here (/dev/loop-control is missing)' };
  const disks = join(root, DISKS_DIR);
  const name = `probe-${process.pid}-${randomBytes(4).toString('hex')}`;
  const dir = join(disks, name);
  const image = join(disks, `${name}.img`);
  let mounted = false;
  try {
    await mkdir(root, { recursive: true, mode: 0o711 });
    await mkdir(disks, { mode: 0o700 }).catch((err: unknown) => {
      if (toErrnoCode(err) !== 'EEXIST') throw err;
    });
    await removeLeftovers(disks);
    await mkdir(dir, { mode: 0o700 });
    await formatImage(image, PROBE_BYTES);
    const info = await stat(image);
    await mountImage(image, dir);
    mounted = true;
    await writeFile(join(dir, 'probe'), 'ok');
    await unmount(dir);
    mounted = false;
    // A file system that does not keep holes has the whole size allocated, or near it, right away.
    return { ok: true, sparse: info.blocks * 512 < PROBE_BYTES / 2 };
  } catch (err: unknown) {
    return { ok: false, reason: describeError(err) };
  } finally {
    if (mounted) await unmount(dir).catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    await rm(image, { force: true }).catch(() => undefined);
  }
}

/** The limit as a person says it: `64 MiB`, `1 GiB`, `1.5 GiB`. */
export function describeDiskLimit(bytes: number): string {
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${Number(gib.toFixed(1))} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}

/** The first words of every message about a full disk with a limit. */
export function diskFullLead(limitBytes: number): string {
  return `The sandbox's disk is full (limit ${describeDiskLimit(limitBytes)}, LOCAL_SANDBOX_DISK_MB)`;
}

/**
 * What a call reports when the workspace's disk is full after it (or nearly: under 1 MiB or 1 % of the limit
 * left, or no inode left), `undefined` otherwise or without a limit: one statfs(2), no process.
 */
export async function diskFullAfterCall(dir: string, limitBytes: number | undefined): Promise<DiskFull | undefined> {
  if (limitBytes === undefined) return undefined;
  const info = await statfs(dir).catch(() => undefined);
  if (info === undefined) return undefined;
  const free = info.bavail * info.bsize;
  if (free >= Math.max(2 ** 20, limitBytes / 100) && info.ffree > 0) return undefined;
  const left =
    info.ffree === 0
      ? 'no file can be created'
      : `${free < 2 ** 20 ? `${Math.floor(free / 1024)} KiB` : describeDiskLimit(free)} left`;
  return {
    limitBytes,
    note:
      `${diskFullLead(limitBytes)}: ${left}. Writes in the working directory and /tmp fail with "No space ` +
      'left on device" until files are deleted.',
  };
}

/** The disk limit the local backend reports, and the size new workspaces get (`undefined`: no limit). */
export interface WorkspaceDisks {
  readonly limitBytes: number | undefined;
  readonly limit: ResourceLimit;
}

/** Before the probe finished. */
export const PROBING_DISKS: WorkspaceDisks = Object.freeze({
  limitBytes: undefined,
  limit: Object.freeze({ value: null, enforcedBy: 'none (probing)' }),
});

/**
 * The disks of this server's workspaces: `configured` bytes (LOCAL_SANDBOX_DISK_MB; 0 or absent: none, on
 * purpose) when the probe finds that images work under `root`; else none, with a warning that says why.
 */
export async function setUpWorkspaceDisks(
  root: string,
  configured: number | undefined,
  logger: Logger,
): Promise<WorkspaceDisks> {
  if (configured === undefined || configured === 0) {
    logger.info('no disk limit per sandbox (LOCAL_SANDBOX_DISK_MB=0)');
    return { limitBytes: undefined, limit: { value: null, enforcedBy: 'none (LOCAL_SANDBOX_DISK_MB=0)' } };
  }
  const probed = await probeWorkspaceDisks(root).catch(
    (err: unknown): DiskProbe => ({ ok: false, reason: describeError(err) }),
  );
  if (!probed.ok) {
    logger.warn('no disk limit per sandbox: a sandbox can fill the disk that holds LOCAL_SANDBOX_ROOT', {
      reason: probed.reason,
      disk_mb: configured / 2 ** 20,
    });
    return { limitBytes: undefined, limit: { value: null, enforcedBy: `none (${probed.reason})` } };
  }
  if (!probed.sparse) {
    logger.warn(
      'LOCAL_SANDBOX_ROOT does not keep sparse files: each new workspace takes its whole ' +
        'LOCAL_SANDBOX_DISK_MB of the host at once',
      { root },
    );
  }
  logger.info('sandbox disk limit: an ext4 image per workspace', { disk_mb: configured / 2 ** 20 });
  return { limitBytes: configured, limit: { value: configured, enforcedBy: 'ext4 image' } };
}
