/**
 * Workspace disk images: reading /proc/self/mountinfo, the decision for each state a workspace can be found in,
 * and (as root, where loop devices work) the whole life of an image under createWorkspace and removeWorkspace.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadConfig } from '../../../../functions/mcp/config';
import { SILENT_LOGGER } from '../../../../functions/mcp/log';
import { findHostTools } from '../../../../functions/mcp/sandbox/local/host-tools';
import { createLocalSandboxProvider } from '../../../../functions/mcp/sandbox/local/provider';
import { createWorkspace, removeWorkspace } from '../../../../functions/mcp/sandbox/local/workspace';
import {
  decideDisk,
  describeDiskLimit,
  diskFullAfterCall,
  type DiskState,
  imageOf,
  mountsAt,
  parseMountinfo,
  probeWorkspaceDisks,
  unescapeMountField,
} from '../../../../functions/mcp/sandbox/local/workspace-disk';
import { diskTestsUnavailable, loopDevicesUnder, mountsUnder, removeRootWithDisks } from '../../../support/disks';

const MOUNTINFO = [
  '27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard',
  '30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683656k',
  // No optional fields, and a mount point with a space, a tab and a backslash in it.
  '101 27 7:3 / /srv/sandbox\\040root/mcp-sandbox-ab\\011c\\134d rw,nosuid,nodev,relatime - ext4 /dev/loop3 rw',
  // Two optional fields.
  '102 27 7:4 / /srv/root/mcp-sandbox-x rw,nosuid shared:7 master:2 - ext4 /dev/loop4 rw,discard',
  '103 27 7:5 / /srv/root/mcp-sandbox-x rw,nosuid - ext4 /dev/loop5 rw',
  'garbage',
  '',
].join('\n');

describe('mountinfo', () => {
  it('reads mount points, types and sources, with the kernel’s octal escapes undone and optional fields skipped', () => {
    const mounts = parseMountinfo(MOUNTINFO);
    expect(mounts).toEqual([
      { mountPoint: '/', fsType: 'ext4', source: '/dev/vda' },
      { mountPoint: '/dev/shm', fsType: 'tmpfs', source: 'tmpfs' },
      { mountPoint: '/srv/sandbox root/mcp-sandbox-ab\tc\\d', fsType: 'ext4', source: '/dev/loop3' },
      { mountPoint: '/srv/root/mcp-sandbox-x', fsType: 'ext4', source: '/dev/loop4' },
      { mountPoint: '/srv/root/mcp-sandbox-x', fsType: 'ext4', source: '/dev/loop5' },
    ]);
    expect(unescapeMountField('a\\012b')).toBe('a\nb');
  });

  it('counts the mounts at a path exactly (stacked ones each), not at its prefixes or its children', () => {
    const mounts = parseMountinfo(MOUNTINFO);
    expect(mountsAt(mounts, '/srv/root/mcp-sandbox-x')).toBe(2);
    expect(mountsAt(mounts, '/srv/sandbox root/mcp-sandbox-ab\tc\\d')).toBe(1);
    expect(mountsAt(mounts, '/srv/root')).toBe(0);
    expect(mountsAt(mounts, '/srv/root/mcp-sandbox-x/home')).toBe(0);
  });
});

describe('what a workspace gets', () => {
  const state = (over: Partial<DiskState>): DiskState => ({ mounted: false, imageExists: false, dirEmpty: true, ...over });
  it.each([
    ['a new workspace, with a limit', state({}), 64, 'format'],
    ['a new workspace, without one (LOCAL_SANDBOX_DISK_MB=0, or images do not work here)', state({}), undefined, 'plain'],
    ['its image, mounted already (another instance, or before a server restart)', state({ mounted: true, imageExists: true }), 64, 'mounted'],
    ['its image, not mounted (after a host restart): mounted, never formatted again', state({ imageExists: true }), 64, 'mount'],
    ['its image, not mounted, the limit since turned off: still mounted (the files are in it)', state({ imageExists: true }), undefined, 'mount'],
    ['a workspace from before disk images (files in the directory, no image): left as it is, unlimited', state({ dirEmpty: false }), 64, 'plain'],
    ['its image, with leftovers under the mount point: the image holds the files', state({ imageExists: true, dirEmpty: false }), 64, 'mount'],
  ] as const)('%s', (_name, found, limit, action) => {
    expect(decideDisk(found, limit)).toBe(action);
  });

  it('names the limit as a person would', () => {
    expect(describeDiskLimit(2 ** 30)).toBe('1 GiB');
    expect(describeDiskLimit(64 * 2 ** 20)).toBe('64 MiB');
    expect(describeDiskLimit(1536 * 2 ** 20)).toBe('1.5 GiB');
  });

  it('adds no note about the disk when the workspace has no limit, or has room', async () => {
    await expect(diskFullAfterCall(tmpdir(), undefined)).resolves.toBeUndefined();
    // The host's temp dir has more than 1 % of 1 MiB free.
    await expect(diskFullAfterCall(tmpdir(), 2 ** 20)).resolves.toBeUndefined();
  });
});

describe('LOCAL_SANDBOX_DISK_MB', () => {
  const local = (value?: string) => loadConfig({ SANDBOX_BACKEND: 'local', ...(value === undefined ? {} : { LOCAL_SANDBOX_DISK_MB: value }) }).local;
  it('is 1 GiB by default, any size from 16 MiB up, and 0 for no disk limit on purpose', () => {
    expect(local().diskBytes).toBe(2 ** 30);
    expect(local('64').diskBytes).toBe(64 * 2 ** 20);
    expect(local('0').diskBytes).toBe(0);
  });
  it.each(['8', '-1', '1.5', 'lots', '2000000'])('refuses %s, saying what it takes', (value) => {
    expect(() => local(value)).toThrow(/LOCAL_SANDBOX_DISK_MB must be/);
  });
});

describe('the disk limit the local backend reports', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'disk-provider-'));
  });
  afterEach(() => removeRootWithDisks(root));
  const provider = (diskBytes: number) =>
    createLocalSandboxProvider({
      config: { root, isolation: 'none', allowNetwork: false, python: 'python3', hiddenPaths: [], exposed: false, diskBytes },
      logger: SILENT_LOGGER,
      tools: { ...findHostTools(), bwrap: undefined },
    });

  it('says none, on purpose, for LOCAL_SANDBOX_DISK_MB=0, and probing before the probe finished', async () => {
    const off = provider(0);
    expect(off.status().limits?.disk).toEqual({ value: null, enforcedBy: 'none (probing)' });
    await off.ready();
    expect(off.status().limits?.disk).toEqual({ value: null, enforcedBy: 'none (LOCAL_SANDBOX_DISK_MB=0)' });
  });

  it('says what enforces it, or why nothing does', async () => {
    const on = provider(32 * 2 ** 20);
    await on.ready();
    const reason = diskTestsUnavailable();
    expect(on.status().limits?.disk).toEqual(reason === undefined ? { value: 32 * 2 ** 20, enforcedBy: 'ext4 image' } : { value: null, enforcedBy: expect.stringMatching(/^none \(.+\)$/) });
  });
});

const unavailable = diskTestsUnavailable();
const withDisks = unavailable === undefined ? describe : describe.skip;
if (unavailable !== undefined) console.log(`SKIPPED: the workspace disk image tests (${unavailable})`);

withDisks('a workspace on its own disk image (root, loop devices)', () => {
  const MIB = 2 ** 20;
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'ws-disk-'));
  });
  afterEach(() => {
    removeRootWithDisks(root);
    expect(loopDevicesUnder(root)).toEqual([]);
  });

  const open = (sessionKey: string, diskBytes: number | undefined) => createWorkspace({ root, sessionKey, virtualHome: true, sandboxUser: true, diskBytes });

  it('is formatted and mounted at the workspace directory, which stays the server’s (0711); lost+found stays outside home', async () => {
    const ws = await open('a', 32 * MIB);
    expect(ws.diskLimitBytes).toBe(32 * MIB);
    expect(mountsUnder(root)).toEqual([ws.dir]);
    const dir = statSync(ws.dir);
    expect([dir.uid, dir.mode & 0o7777]).toEqual([0, 0o711]);
    expect(readdirSync(ws.dir).sort()).toEqual(['home', 'lost+found', 'tmp', 'uid']);
    expect(readdirSync(ws.home)).toEqual([]);
    const image = statSync(imageOf(ws.dir));
    expect([image.uid, image.mode & 0o777, image.size]).toEqual([0, 0o600, 32 * MIB]);
    expect(statSync(join(root, '.disks')).mode & 0o777).toBe(0o700);
    // Sparse: only what mkfs wrote is on the host.
    expect(image.blocks * 512).toBeLessThan(4 * MIB);
    await removeWorkspace(ws);
  });

  it('is mounted once however many opens race (two instances share the root), and re-opened as it is', async () => {
    const opened = await Promise.all(Array.from({ length: 6 }, () => open('b', 32 * MIB)));
    expect(mountsUnder(root)).toHaveLength(1);
    expect(new Set(opened.map((ws) => ws.owner?.uid)).size).toBe(1);
    writeFileSync(join(opened[0]?.home ?? '', 'kept.txt'), 'kept');
    const again = await open('b', 32 * MIB);
    expect(readFileSync(join(again.home, 'kept.txt'), 'utf8')).toBe('kept');
    expect(mountsUnder(root)).toHaveLength(1);
    await removeWorkspace(again);
  });

  it('is mounted again, never formatted, when found unmounted (after a host restart), whatever the limit is now', async () => {
    const ws = await open('c', 32 * MIB);
    writeFileSync(join(ws.home, 'kept.txt'), 'kept');
    execFileSync('umount', [ws.dir]);
    expect(readdirSync(ws.dir)).toEqual([]);
    const again = await open('c', undefined);
    expect(again.diskLimitBytes).toBe(32 * MIB);
    expect(readFileSync(join(again.home, 'kept.txt'), 'utf8')).toBe('kept');
    expect(again.owner).toEqual(ws.owner);
    await removeWorkspace(again);
  });

  it('leaves a workspace made before disk images as it is: no image, unlimited, its files in place', async () => {
    const plain = await open('d', undefined);
    writeFileSync(join(plain.home, 'old.txt'), 'old');
    const again = await open('d', 32 * MIB);
    expect(again.diskLimitBytes).toBeUndefined();
    expect(mountsUnder(root)).toEqual([]);
    expect(readFileSync(join(again.home, 'old.txt'), 'utf8')).toBe('old');
    await removeWorkspace(again);
  });

  it('is unmounted, its loop device freed and its image deleted when the workspace is removed, even while a process holds a file', async () => {
    const ws = await open('e', 32 * MIB);
    const quiet = await open('f', 32 * MIB);
    await removeWorkspace(quiet);
    expect(mountsUnder(root)).toEqual([ws.dir]);
    expect(loopDevicesUnder(root)).toHaveLength(1);
    // A holder: umount is busy, the mount is detached lazily and goes with the holder.
    const holder = execFileSync('sh', ['-c', `sleep 30 < ${join(ws.home, '..', 'uid')} > /dev/null 2>&1 & echo $!`], { encoding: 'utf8' }).trim();
    try {
      await removeWorkspace(ws);
      expect(mountsUnder(root)).toEqual([]);
      // Detached, not gone: the deleted image stays attached until the holder lets go.
      expect(loopDevicesUnder(root)).toEqual([expect.stringMatching(/\.img \(deleted\)$/)]);
      expect(readdirSync(root).sort()).toEqual(['.disks', '.uids']);
      expect(readdirSync(join(root, '.disks'))).toEqual([]);
    } finally {
      process.kill(Number(holder), 'SIGKILL');
    }
    // The loop device goes once the holder is gone (polled: the kernel frees it asynchronously).
    for (let i = 0; i < 200 && loopDevicesUnder(root).length > 0; i += 1) await new Promise((r) => setTimeout(r, 50));
    expect(loopDevicesUnder(root)).toEqual([]);
  });

  it('fills up inside its limit: a write past it fails with ENOSPC, and the note says so', async () => {
    const ws = await open('g', 16 * MIB);
    expect(() => execFileSync('sh', ['-c', `head -c ${32 * MIB} /dev/zero > ${join(ws.tmp, 'fill')}`], { stdio: 'pipe' })).toThrow(/No space left on device/);
    expect(statSync(imageOf(ws.dir)).blocks * 512).toBeLessThanOrEqual(16 * MIB);
    await expect(diskFullAfterCall(ws.dir, ws.diskLimitBytes)).resolves.toEqual({ limitBytes: 16 * MIB, note: expect.stringMatching(/^The sandbox's disk is full \(limit 16 MiB, LOCAL_SANDBOX_DISK_MB\): \d+ KiB left\./) });
    await removeWorkspace(ws);
  });

  it('probes the host once with a tiny image, leaves nothing behind, and clears what a dead server’s probe left mounted', async () => {
    // A server killed mid-probe (pid 4194305 is above any pid Linux gives): its image, still mounted.
    const disks = join(root, '.disks');
    mkdirSync(join(disks, 'probe-4194305-0a1b'), { recursive: true });
    execFileSync('truncate', ['-s', '16M', join(disks, 'probe-4194305-0a1b.img')]);
    execFileSync('mkfs.ext4', ['-q', '-F', join(disks, 'probe-4194305-0a1b.img')]);
    execFileSync('mount', ['-o', 'loop', join(disks, 'probe-4194305-0a1b.img'), join(disks, 'probe-4194305-0a1b')]);
    writeFileSync(join(disks, 'x.img.new-4194305-0a1b'), '');
    writeFileSync(join(disks, `x.img.new-${process.pid}-0a1b`), '');
    expect(loopDevicesUnder(root)).toHaveLength(1);
    await expect(probeWorkspaceDisks(root)).resolves.toEqual({ ok: true, sparse: true });
    expect(loopDevicesUnder(root)).toEqual([]);
    // A live process's image in the making is left alone.
    expect(readdirSync(disks)).toEqual([`x.img.new-${process.pid}-0a1b`]);
    expect(mountsUnder(root)).toEqual([]);
  });
});
