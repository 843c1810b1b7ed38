/**
 * What servers that are gone left of their workspace disks under LOCAL_SANDBOX_ROOT: a server killed (SIGKILL),
 * crashed, or stopped before its unmounts finished leaves each image it had open mounted at its workspace, each
 * on a loop device (a host has a few hundred), and an image deleted while attached keeps its space on the host.
 * A start-up releases them before it opens any workspace: the image of a workspace mounted under the root that no
 * live process holds (disk-locks.ts: a live sibling sharing the root holds every image it has open, so its
 * workspaces are left as they are), thawed first should a fork's copy have left it frozen, and the loop devices
 * behind files under `<root>/.disks` that no mount uses. The images stay: a session that comes back mounts its image
 * again.
 */
import { realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

import { describeError } from '../../errors';
import type { Logger } from '../../log';
import { lockIfUnheld, takeTurn } from './disk-locks';
import { detachLoopDevices, diskTools, runToolExit } from './disk-tools';
import { type LoopDevice, readLoopDevices, readMounts } from './host-mounts';
import { DISKS_DIR, imageOf, realPaths, unmountImage } from './workspace-disk';

/** A workspace directory's name (workspace.ts `toWorkspaceName`). */
const WORKSPACE_NAME = /^mcp-sandbox-[0-9a-f]{32}$/;

/** What a start-up released. */
export interface ReleasedDisks {
  /** Workspaces unmounted (no live process held their image). */
  readonly unmounted: number;
  /** Loop devices detached (or, still in use by a lazily detached mount, told to go with their last user). */
  readonly loopDevices: number;
}

/**
 * Releases what servers that are gone left under `root`, and logs it; never rejects (what it could not release,
 * the next start-up tries again). Needs root; elsewhere nothing of ours can be mounted.
 */
export async function releaseOrphanedDisks(root: string, logger: Logger): Promise<ReleasedDisks> {
  try {
    const released = await release(root);
    if (released.unmounted + released.loopDevices > 0) {
      logger.info('released the workspace disks of servers that are gone', {
        unmounted: released.unmounted,
        loop_devices: released.loopDevices,
      });
    }
    return released;
  } catch (err: unknown) {
    logger.warn('could not release the workspace disks of servers that are gone', { error: describeError(err) });
    return { unmounted: 0, loopDevices: 0 };
  }
}

async function release(root: string): Promise<ReleasedDisks> {
  const none = { unmounted: 0, loopDevices: 0 };
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return none;
  const realRoot = await realpath(root).catch(() => undefined);
  if (realRoot === undefined) return none;
  const disks = join(realRoot, DISKS_DIR);
  const underDisks = (device: LoopDevice): boolean => device.backingFile.startsWith(`${disks}/`);
  const [mounts, devices] = await Promise.all([readMounts(), readLoopDevices()]);
  const ours = new Set(devices.filter(underDisks).map((device) => device.device));
  // Every workspace's mount is on a loop device behind its image: none of those, nothing to do (no program run).
  if (ours.size === 0) return none;
  const points = new Set(
    mounts
      .filter(
        (m) => ours.has(m.source) && dirname(m.mountPoint) === realRoot && WORKSPACE_NAME.test(basename(m.mountPoint)),
      )
      .map((m) => m.mountPoint),
  );
  let unmounted = 0;
  for (const point of points) {
    const image = imageOf(point);
    const turn = await takeTurn(image);
    try {
      const lock = await lockIfUnheld(image);
      if (lock.held) continue;
      try {
        const real = await realPaths(point);
        // A server killed while it copied the image for a fork (workspace-copy.ts) left it frozen: thawed first, or
        // the unmount would wait on it. One that is not frozen refuses, which is as good.
        await runToolExit(diskTools().fsfreeze, ['-u', real.dir]);
        await unmountImage(real);
        unmounted += 1;
      } finally {
        await lock.release();
      }
      if (lock.gone) await turn.removeLockFile();
    } finally {
      await turn.release();
    }
  }
  return { unmounted, loopDevices: await detachLoopDevices(underDisks) };
}
