/**
 * The host's mount table and loop devices as the workspace disks (workspace-disk.ts) see them, read without any
 * program: /proc/self/mountinfo and /sys/block/loop*. The programs that change them are disk-tools.ts.
 */
import { readdir, readFile } from 'node:fs/promises';

import { toErrnoCode } from '../../errors';

/** One line of /proc/self/mountinfo, the parts used here. */
export interface MountEntry {
  readonly mountPoint: string;
  readonly fsType: string;
  readonly source: string;
}

/** The kernel writes a space, tab, newline or backslash in a mountinfo path as an octal escape (`\040`). */
export function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * Parses /proc/self/mountinfo: `id parent major:minor root mount-point options [optional fields…] - type source
 * super-options` per line (proc(5)). Lines that do not have that shape are passed over.
 */
export function parseMountinfo(text: string): MountEntry[] {
  const mounts: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const separator = fields.indexOf('-', 6);
    const mountPoint = fields[4];
    const fsType = fields[separator + 1];
    const source = fields[separator + 2];
    if (separator === -1 || mountPoint === undefined || fsType === undefined || source === undefined) continue;
    mounts.push({ mountPoint: unescapeMountField(mountPoint), fsType, source: unescapeMountField(source) });
  }
  return mounts;
}

/** How many file systems are mounted at `path` (a real path: no symlinks), stacked or not. */
export function mountsAt(mounts: readonly MountEntry[], path: string): number {
  return mounts.filter((mount) => mount.mountPoint === path).length;
}

/** The mounts this process sees; none where there is no /proc (macOS). */
export async function readMounts(): Promise<MountEntry[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch((err: unknown) => {
    if (toErrnoCode(err) === 'ENOENT') return '';
    throw err;
  });
  return parseMountinfo(text);
}

/** An attached loop device and the file behind it. */
export interface LoopDevice {
  /** `/dev/loopN`, as a mount's source names it. */
  readonly device: string;
  /** The backing file's path when it was attached (its real path). */
  readonly backingFile: string;
  /** The backing file was deleted since (the kernel adds ` (deleted)`): its space stays taken while the device is. */
  readonly deleted: boolean;
}

const DELETED_SUFFIX = ' (deleted)';

/** Reads one device's `/sys/block/loopN/loop/backing_file` line (absent: not attached). */
export function toLoopDevice(name: string, backingFileLine: string): LoopDevice {
  const line = backingFileLine.replace(/\n$/, '');
  const deleted = line.endsWith(DELETED_SUFFIX);
  return { device: `/dev/${name}`, backingFile: deleted ? line.slice(0, -DELETED_SUFFIX.length) : line, deleted };
}

/** The attached loop devices (what `losetup -a` lists), from sysfs; none where there is no /sys/block. */
export async function readLoopDevices(): Promise<LoopDevice[]> {
  const names = (await readdir('/sys/block').catch(() => [] as string[])).filter((name) => /^loop\d+$/.test(name));
  const found = await Promise.all(
    names.map(async (name) => {
      const line = await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8').catch(() => undefined);
      return line === undefined ? undefined : toLoopDevice(name, line);
    }),
  );
  return found.filter((device): device is LoopDevice => device !== undefined);
}
