/**
 * Workspace disk images seen from the host, for the disk-limit tests: what is mounted under a root, which loop
 * devices hold images under it, and a clean-up that leaves neither behind even when a test failed half-way.
 * Everything is counted under one test root, never globally: another copy of the suite may run beside this one.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';

import { parseMountinfo } from '../../functions/mcp/sandbox/local/host-mounts';
import { pollUntil, SETTLE_MS } from './processes';
import { missing } from './requirements';

/** Why the disk tests cannot run here, or `undefined` when they can (root, loop devices, mkfs.ext4;
 * requirements.js). */
export const diskTestsUnavailable = (): string | undefined => missing('disk images');

/** Mount points at or under `root` (deepest first), once per mount; none where there is no /proc. */
export function mountsUnder(root: string): string[] {
  if (!existsSync('/proc/self/mountinfo')) return [];
  return parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'))
    .map((mount) => mount.mountPoint)
    .filter((point) => point === root || point.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length);
}

/** Loop devices whose backing file lies under `root` (what `losetup -a` would list for it). */
export function loopDevicesUnder(root: string): string[] {
  const found: string[] = [];
  if (!existsSync('/sys/block')) return found;
  for (const name of readdirSync('/sys/block').filter((n) => n.startsWith('loop'))) {
    let backing: string;
    try {
      backing = readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
    } catch {
      continue; // not attached
    }
    if (backing.startsWith(`${root}/`)) found.push(`/dev/${name} ${backing}`);
  }
  return found;
}

/**
 * The loop devices behind files under `root` once no more than `atMost` are left, or after SETTLE_MS (a bound on
 * a hang, not a speed check): the kernel frees one when the last user of its file system lets go, which a process
 * that was just killed may not have done yet.
 */
export function loopDevicesSettledUnder(root: string, atMost = 0): Promise<string[]> {
  return pollUntil(
    () => loopDevicesUnder(root),
    (devices) => devices.length <= atMost,
    SETTLE_MS,
  );
}

/**
 * Unmounts everything under `root` (lazily, so a stray holder cannot stop it), detaches every loop device behind
 * a file under it (one a holder still uses is told to go with it: `losetup -d` never takes a device from a user),
 * and deletes `root`. Whatever a test left, in whatever order its teardown runs: a mount that came in meanwhile
 * (rm -rf cannot remove a mount point) is taken on the next pass, and an image deleted while attached still loses
 * its device. Kill a test's own holders first, or their devices stay until they exit.
 */
export function removeRootWithDisks(root: string): void {
  for (let pass = 0; pass < 3; pass += 1) {
    for (const point of mountsUnder(root)) {
      try {
        execFileSync('umount', ['-l', point], { stdio: 'pipe' });
      } catch {
        // gone meanwhile
      }
    }
    for (const line of loopDevicesUnder(root)) {
      try {
        execFileSync('losetup', ['-d', line.split(' ')[0] ?? ''], { stdio: 'pipe' });
      } catch {
        // cleared itself meanwhile
      }
    }
    try {
      rmSync(root, { recursive: true, force: true });
    } catch {
      // EBUSY: something was mounted under it meanwhile
    }
    if (!existsSync(root) && loopDevicesUnder(root).length === 0) return;
  }
}
