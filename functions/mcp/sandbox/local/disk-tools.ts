/**
 * The host programs the workspace disks need (mkfs.ext4, mount, umount, losetup, flock; cp and fsfreeze to copy an
 * image for a fork), each run by absolute path with a clean environment and a deadline, and the two changes to the
 * mount table that need care: an unmount that waits out a busy file system before it detaches it lazily, and
 * detaching loop devices safely.
 */
import { spawn } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import { basename } from 'node:path';

import { findProgram } from './find-program';
import { type LoopDevice, mountsAt, readLoopDevices, readMounts } from './host-mounts';

/** How long a host program (mkfs, mount, umount, losetup, a flock wait) may take. */
export const TOOL_TIMEOUT_MS = 60_000;
/** A busy unmount is tried again this many times, this far apart, before the mount is detached lazily. */
const BUSY_RETRIES = 10;
const BUSY_RETRY_MS = 50;

/** The programs disks need, by absolute path. */
export interface DiskTools {
  readonly mkfs: string;
  readonly mount: string;
  readonly umount: string;
  readonly losetup: string;
  readonly flock: string;
  /** Copies an image for a fork (workspace-copy.ts). */
  readonly cp: string;
  /** Freezes a mounted image while it is copied. */
  readonly fsfreeze: string;
}

/** The programs, or which of them are missing. */
export function findDiskTools(): DiskTools | string {
  const found = {
    mkfs: findProgram('mkfs.ext4'),
    mount: findProgram('mount'),
    umount: findProgram('umount'),
    losetup: findProgram('losetup'),
    flock: findProgram('flock'),
    cp: findProgram('cp'),
    fsfreeze: findProgram('fsfreeze'),
  };
  const missing = Object.entries({
    'mkfs.ext4 (e2fsprogs)': found.mkfs,
    'mount (util-linux)': found.mount,
    'umount (util-linux)': found.umount,
    'losetup (util-linux)': found.losetup,
    'flock (util-linux)': found.flock,
    'cp (coreutils)': found.cp,
    'fsfreeze (util-linux)': found.fsfreeze,
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
    const child = spawn(file, [...args], {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' },
      stdio: ['ignore', 'ignore', 'pipe', ...(fd === undefined ? [] : [fd])],
      timeout: TOOL_TIMEOUT_MS,
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 1000) stderr += chunk;
    });
    child.once('error', (err) => reject(new Error(`${basename(file)} failed: ${err.message}`)));
    child.once('close', (code, signal) =>
      resolve({ code, stderr: stderr.trim().slice(0, 300) || (signal ?? `exit ${code}`) }),
    );
  });
}

/** Runs a host program; rejects with its stderr unless it exits 0. */
export async function runTool(file: string, args: readonly string[], fd?: number): Promise<void> {
  const exit = await runToolExit(file, args, fd);
  if (exit.code !== 0) throw new Error(`${basename(file)} failed: ${exit.stderr}`);
}

/**
 * How an unmount went: `clean` (the file system let go, and its loop device with it) or `lazy` (detached; it goes with
 * its last user).
 */
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
