/**
 * Workspace disk images seen from the host, for the disk-limit tests: what is mounted under a root, which loop
 * devices hold images under it, and a clean-up that leaves neither behind even when a test failed half-way.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';

import { parseMountinfo } from '../../functions/mcp/sandbox/local/workspace-disk';

/**
 * Why the disk tests cannot run here, or `undefined` when they can (root, loop devices, mkfs.ext4): in CI
 * (root) they run; elsewhere they say plainly that they were skipped.
 */
export function diskTestsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `${process.platform} has no loop devices`;
  if (process.getuid?.() !== 0) return 'not root: disk images cannot be mounted';
  if (!existsSync('/dev/loop-control')) return 'no /dev/loop-control';
  for (const program of ['mkfs.ext4', 'mount', 'umount', 'flock']) {
    try {
      execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'pipe' });
    } catch {
      return `${program} is not installed`;
    }
  }
  return undefined;
}

/** Mount points at or under `root` (deepest first), once per mount. */
export function mountsUnder(root: string): string[] {
  return parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'))
    .map((mount) => mount.mountPoint)
    .filter((point) => point === root || point.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length);
}

/** Loop devices whose backing file lies under `root` (what `losetup -a` would list for it). */
export function loopDevicesUnder(root: string): string[] {
  const found: string[] = [];
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

/** Unmounts everything under `root` (lazily, so a stray holder cannot stop it) and deletes `root`. */
export function removeRootWithDisks(root: string): void {
  for (const point of mountsUnder(root)) {
    try {
      execFileSync('umount', ['-l', point], { stdio: 'pipe' });
    } catch {
      // gone meanwhile
    }
  }
  rmSync(root, { recursive: true, force: true });
}
