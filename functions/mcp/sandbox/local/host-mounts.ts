/**
 * The host's mount table and loop devices as the workspace disks (workspace-disk.ts) see them, and the host
 * programs that change them: mount, umount, losetup, mkfs.ext4, flock, each run by absolute path with a clean
 * environment and a deadline. Reading needs no program: /proc/self/mountinfo and /sys/block/loop*.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile, realpath } from 'node:fs/promises';
import { basename } from 'node:path';

import { toErrnoCode } from '../../errors';
import { findProgram } from './find-program';

/** How long a host program (mkfs, mount, umount, losetup, a flock wait) may take. */
export const TOOL_TIMEOUT_MS = 60_000;
/** A busy unmount is tried again this many times, this far apart, before the mount is detached lazily. */
const BUSY_RETRIES = 10;
const BUSY_RETRY_MS = 50;

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

/** The programs disks need, by absolute path. */
export interface DiskTools {
  readonly mkfs: string;
  readonly mount: string;
  readonly umount: string;
  readonly losetup: string;
  readonly flock: string;
}

/** The programs, or which of them are missing. */
export function findDiskTools(): DiskTools | string {
  const found = { mkfs: findProgram('mkfs.ext4'), mount: findProgram('mount'), umount: findProgram('umount'), losetup: findProgram('losetup'), flock: findProgram('flock') };
  const missing = Object.entries({
    'mkfs.ext4 (e2fsprogs)': found.mkfs,
    'mount (util-linux)': found.mount,
    'umount (util-linux)': found.umount,
    'losetup (util-linux)': found.losetup,
    'flock (util-linux)': found.flock,
  })
    .filter(([, path]) => path === undefined)
    .map(([name]) => name);
  if (missing.length > 0) return `not installed: ${missing.join(', ')}`;
  return found as DiskTools;
}

let tools: DiskTools | undefined;
/** The programs, found once; throws naming the missing ones. */
export function diskTools(): DiskTools {
  if (tools === undefined) {
    const found = findDiskTools();
    if (typeof found === 'string') throw new Error(`workspace disk images need programs that are ${found}`);
    tools = found;
  }
  return tools;
}

/** How a host program ended: its exit code (null when killed) and the start of its stderr. */
interface ToolExit {
  readonly code: number | null;
  readonly stderr: string;
}

/** Runs a host program and resolves however it exits; `fd` is handed to it as descriptor 3. */
export function runToolExit(file: string, args: readonly string[], fd?: number): Promise<ToolExit> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, [...args], { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' }, stdio: ['ignore', 'ignore', 'pipe', ...(fd === undefined ? [] : [fd])], timeout: TOOL_TIMEOUT_MS });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 1000) stderr += chunk;
    });
    child.once('error', (err) => reject(new Error(`${basename(file)} failed: ${err.message}`)));
    child.once('close', (code, signal) => resolve({ code, stderr: stderr.trim().slice(0, 300) || (signal ?? `exit ${code}`) }));
  });
}

/** Runs a host program; rejects with its stderr unless it exits 0. */
export async function runTool(file: string, args: readonly string[], fd?: number): Promise<void> {
  const exit = await runToolExit(file, args, fd);
  if (exit.code !== 0) throw new Error(`${basename(file)} failed: ${exit.stderr}`);
}

/** How an unmount went: `clean` (the file system let go, and its loop device with it) or `lazy` (detached; it goes with its last user). */
export type Unmounted = 'clean' | 'lazy';

/**
 * Unmounts the file system at `dir`. A busy one (a process of the sandbox just killed has not
 * exited yet) is tried again for up to half a second, then detached lazily: it leaves the mount table at once
 * and goes, with its loop device, once its last user lets go.
 */
export async function unmount(dir: string): Promise<Unmounted> {
  const real = await realpath(dir).catch(() => dir);
  for (let attempt = 0; ; attempt += 1) {
    const exit = await runToolExit(diskTools().umount, [dir]);
    if (exit.code === 0 || mountsAt(await readMounts(), real) === 0) return 'clean';
    if (attempt >= BUSY_RETRIES) break;
    await new Promise((resolve) => setTimeout(resolve, BUSY_RETRY_MS));
  }
  await runTool(diskTools().umount, ['-l', dir]);
  return 'lazy';
}

/**
 * Detaches the loop devices `isOurs` picks (by backing file, deleted since or not) that no visible mount uses. Safe
 * whatever else is going on: the kernel detaches a device nobody has open at once, and only marks one still in
 * use (a lazily detached file system, a mount in the making) to detach itself when its last user closes it.
 * Resolves with how many it asked to detach.
 */
export async function detachLoopDevices(isOurs: (device: LoopDevice) => boolean): Promise<number> {
  const [devices, mounts] = await Promise.all([readLoopDevices(), readMounts()]);
  const inUse = new Set(mounts.map((mount) => mount.source));
  let detached = 0;
  for (const device of devices.filter((d) => isOurs(d) && !inUse.has(d.device))) {
    // Gone meanwhile (it cleared itself) is as good.
    const exit = await runToolExit(diskTools().losetup, ['-d', device.device]);
    if (exit.code === 0) detached += 1;
  }
  return detached;
}
