/**
 * Workspace disk images: the decision for each state a workspace can be found in, and (as root, where loop devices
 * work) the whole life of an image under createWorkspace, release and removeWorkspace, across holders that share
 * the root, and what a start-up releases of servers that are gone. No test leaves a mount or a loop device behind,
 * whatever order its teardown runs in. The mount table itself: host-mounts.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadConfig } from '../../../../functions/mcp/config';
import { SILENT_LOGGER } from '../../../../functions/mcp/log';
import { releaseOrphanedDisks } from '../../../../functions/mcp/sandbox/local/disk-reclaim';
import { findHostTools } from '../../../../functions/mcp/sandbox/local/host-tools';
import { createLocalSandboxProvider } from '../../../../functions/mcp/sandbox/local/provider';
import { createWorkspace, removeWorkspace, type Workspace } from '../../../../functions/mcp/sandbox/local/workspace';
import {
  describeDiskLimit,
  diskFullAfterCall,
  probeWorkspaceDisks,
} from '../../../../functions/mcp/sandbox/local/disk-limit';
import { decideDisk, type DiskState, imageOf } from '../../../../functions/mcp/sandbox/local/workspace-disk';
import { lastUsedMs, removeAbandonedWorkspace } from '../../../../functions/mcp/sandbox/local/workspace-sweep';
import {
  diskTestsUnavailable,
  loopDevicesSettledUnder,
  loopDevicesUnder,
  mountsUnder,
  removeRootWithDisks,
} from '../../../support/disks';
import { uidClaimsIn } from '../../../support/server';
import { needs } from '../../../support/needs';

describe('what a workspace gets', () => {
  const state = (over: Partial<DiskState>): DiskState => ({
    mounted: false,
    imageExists: false,
    dirEmpty: true,
    ...over,
  });
  it.each([
    ['a new workspace, with a limit', state({}), 64, 'format'],
    [
      'a new workspace, without one (LOCAL_SANDBOX_DISK_MB=0, or images do not work here)',
      state({}),
      undefined,
      'plain',
    ],
    [
      'its image, mounted already (another instance, or before a server restart)',
      state({ mounted: true, imageExists: true }),
      64,
      'mounted',
    ],
    [
      'its image, not mounted (after a host restart): mounted, never formatted again',
      state({ imageExists: true }),
      64,
      'mount',
    ],
    [
      'its image, not mounted, the limit since turned off: still mounted (the files are in it)',
      state({ imageExists: true }),
      undefined,
      'mount',
    ],
    [
      'a workspace from before disk images (files in the directory, no image): left as it is, unlimited',
      state({ dirEmpty: false }),
      64,
      'plain',
    ],
    [
      'its image, with leftovers under the mount point: the image holds the files',
      state({ imageExists: true, dirEmpty: false }),
      64,
      'mount',
    ],
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
  const local = (value?: string) =>
    loadConfig({ SANDBOX_BACKEND: 'local', ...(value === undefined ? {} : { LOCAL_SANDBOX_DISK_MB: value }) }).local;
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
      config: {
        root,
        isolation: 'none',
        allowNetwork: false,
        python: 'python3',
        hiddenPaths: [],
        exposed: false,
        diskBytes,
      },
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
    expect(on.status().limits?.disk).toEqual(
      reason === undefined
        ? { value: 32 * 2 ** 20, enforcedBy: 'ext4 image' }
        : { value: null, enforcedBy: expect.stringMatching(/^none \(.+\)$/) },
    );
  });
});

const withDisks = needs('disk images').describe;

withDisks('a workspace on its own disk image (root, loop devices)', () => {
  const MIB = 2 ** 20;
  let root: string;
  /** What the test started and the processes it made hold a file: the teardown awaits the one and kills the other
   * first. */
  const pending = new Set<Promise<unknown>>();
  const holders = new Set<number>();
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'ws-disk-'));
  });
  afterEach(async () => {
    // Whatever the test got to (a failed expectation, a timeout mid-way): nothing it started is still running,
    // no holder keeps a detached file system (and its loop device) alive, then the root goes with its mounts.
    await Promise.allSettled([...pending]);
    for (const pid of holders) killHolder(pid);
    holders.clear();
    removeRootWithDisks(root);
    expect(mountsUnder(root)).toEqual([]);
    expect(await loopDevicesSettledUnder(root)).toEqual([]);
  });

  const track = <T>(work: Promise<T>): Promise<T> => {
    pending.add(work);
    void work.then(
      () => pending.delete(work),
      () => pending.delete(work),
    );
    return work;
  };
  const open = (sessionKey: string, diskBytes: number | undefined): Promise<Workspace> =>
    track(createWorkspace({ root, sessionKey, virtualHome: true, sandboxUser: true, diskBytes }));
  const remove = (ws: Workspace): Promise<void> => track(removeWorkspace(ws));
  const letGo = (ws: Workspace): Promise<void> => track(ws.disk?.release() ?? Promise.resolve());
  /** A process that keeps `file` open (so the file system it is on is busy) until the teardown or `killHolder`. */
  const holdFile = (file: string): number => {
    const pid = Number(
      execFileSync('sh', ['-c', `sleep 60 < '${file}' > /dev/null 2>&1 & echo $!`], { encoding: 'utf8' }).trim(),
    );
    holders.add(pid);
    return pid;
  };
  const killHolder = (pid: number): void => {
    holders.delete(pid);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  };

  it(
    'is formatted and mounted at the workspace directory, which stays the server’s (0711); lost+found stays ' +
      'outside home',
    async () => {
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
      await remove(ws);
    },
  );

  it('is mounted once however many opens race (two instances share the root), and re-opened as it is', async () => {
    const opened = await Promise.all(Array.from({ length: 6 }, () => open('b', 32 * MIB)));
    expect(mountsUnder(root)).toHaveLength(1);
    expect(new Set(opened.map((ws) => ws.owner?.uid)).size).toBe(1);
    writeFileSync(join(opened[0]?.home ?? '', 'kept.txt'), 'kept');
    const again = await open('b', 32 * MIB);
    expect(readFileSync(join(again.home, 'kept.txt'), 'utf8')).toBe('kept');
    expect(mountsUnder(root)).toHaveLength(1);
    await Promise.all(opened.map(letGo));
    await remove(again);
  });

  it(
    'is unmounted by the last of its holders when let go, its loop device freed and its image kept; opened again, ' +
      'it has its files',
    async () => {
      // Two sandboxes have it open: here, or on two servers sharing the root (a hold is a lock on the image).
      const first = await open('h', 32 * MIB);
      const second = await open('h', 32 * MIB);
      writeFileSync(join(first.home, 'kept.txt'), 'kept');
      await letGo(first);
      expect(mountsUnder(root)).toEqual([first.dir]);
      expect(readFileSync(join(second.home, 'kept.txt'), 'utf8')).toBe('kept');
      await letGo(second);
      await letGo(second);
      expect(mountsUnder(root)).toEqual([]);
      expect(await loopDevicesSettledUnder(root)).toEqual([]);
      expect(statSync(imageOf(first.dir)).size).toBe(32 * MIB);
      expect(readdirSync(first.dir)).toEqual([]);
      const again = await open('h', undefined);
      expect(again.diskLimitBytes).toBe(32 * MIB);
      expect(readFileSync(join(again.home, 'kept.txt'), 'utf8')).toBe('kept');
      expect(again.owner).toEqual(first.owner);
      expect(mountsUnder(root)).toEqual([again.dir]);
      await remove(again);
    },
  );

  it(
    'let go while a process has a file open, is detached lazily; opened again, it is on the same loop device (one ' +
      'file system, never two), which goes with the holder',
    async () => {
      const ws = await open('i', 32 * MIB);
      writeFileSync(join(ws.home, 'kept.txt'), 'kept');
      const holder = holdFile(join(ws.home, 'kept.txt'));
      await letGo(ws);
      expect(mountsUnder(root)).toEqual([]);
      expect(loopDevicesUnder(root)).toHaveLength(1);
      const again = await open('i', undefined);
      writeFileSync(join(again.home, 'more.txt'), 'more');
      expect(readFileSync(join(again.home, 'kept.txt'), 'utf8')).toBe('kept');
      expect(loopDevicesUnder(root)).toHaveLength(1);
      killHolder(holder);
      await letGo(again);
      expect(mountsUnder(root)).toEqual([]);
      expect(await loopDevicesSettledUnder(root)).toEqual([]);
    },
  );

  it(
    'is mounted again, never formatted, ' + 'when found unmounted (after a host restart), whatever the limit is now',
    async () => {
      const ws = await open('c', 32 * MIB);
      writeFileSync(join(ws.home, 'kept.txt'), 'kept');
      execFileSync('umount', [ws.dir]);
      expect(readdirSync(ws.dir)).toEqual([]);
      await ws.disk?.drop();
      const again = await open('c', undefined);
      expect(again.diskLimitBytes).toBe(32 * MIB);
      expect(readFileSync(join(again.home, 'kept.txt'), 'utf8')).toBe('kept');
      expect(again.owner).toEqual(ws.owner);
      await remove(again);
    },
  );

  it('leaves a workspace made before disk images as it is: no image, unlimited, its files in place', async () => {
    const plain = await open('d', undefined);
    writeFileSync(join(plain.home, 'old.txt'), 'old');
    const again = await open('d', 32 * MIB);
    expect(again.diskLimitBytes).toBeUndefined();
    expect(again.disk).toBeUndefined();
    expect(mountsUnder(root)).toEqual([]);
    expect(readFileSync(join(again.home, 'old.txt'), 'utf8')).toBe('old');
    await remove(again);
    expect(readdirSync(root)).toEqual(['.uids']);
  });

  it(
    'is unmounted, its loop device freed and its image deleted when the workspace is removed, even while a process ' +
      'holds a file',
    async () => {
      const ws = await open('e', 32 * MIB);
      const quiet = await open('f', 32 * MIB);
      await remove(quiet);
      expect(mountsUnder(root)).toEqual([ws.dir]);
      expect(loopDevicesUnder(root)).toHaveLength(1);
      // A holder: umount is busy, the mount is detached lazily and goes with the holder.
      const holder = holdFile(join(ws.dir, 'uid'));
      await remove(ws);
      expect(mountsUnder(root)).toEqual([]);
      // Detached, not gone: the deleted image stays attached until the holder lets go.
      expect(loopDevicesUnder(root)).toEqual([expect.stringMatching(/\.img \(deleted\)$/)]);
      expect(readdirSync(root).sort()).toEqual(['.disks', '.uids']);
      expect(readdirSync(join(root, '.disks'))).toEqual([]);
      killHolder(holder);
      // The loop device goes once the holder is gone (the kernel frees it when the last user lets go).
      expect(await loopDevicesSettledUnder(root)).toEqual([]);
    },
  );

  it('fills up inside its limit: a write past it fails with ENOSPC, and the note says so', async () => {
    const ws = await open('g', 16 * MIB);
    expect(() =>
      execFileSync('sh', ['-c', `head -c ${32 * MIB} /dev/zero > ${join(ws.tmp, 'fill')}`], { stdio: 'pipe' }),
    ).toThrow(/No space left on device/);
    expect(statSync(imageOf(ws.dir)).blocks * 512).toBeLessThanOrEqual(16 * MIB);
    await expect(diskFullAfterCall(ws.dir, ws.diskLimitBytes)).resolves.toEqual({
      limitBytes: 16 * MIB,
      note: expect.stringMatching(
        /^The sandbox's disk is full \(limit 16 MiB, LOCAL_SANDBOX_DISK_MB\): \d+ KiB left\./,
      ),
    });
    await remove(ws);
  });

  it(
    'at start-up, unmounts the workspaces of servers that are gone (no hold on the image), never a live one’s, and ' +
      'frees the loop device of a deleted image',
    async () => {
      // A server killed with a workspace open: its hold went with it (the kernel drops a dead process's locks), its
      // mount stayed.
      const gone = await open('j', 32 * MIB);
      writeFileSync(join(gone.home, 'kept.txt'), 'kept');
      await gone.disk?.drop();
      // A live server's (this process holds it).
      const live = await open('k', 32 * MIB);
      // An image deleted while attached to a loop device: its space stays taken on the host while the device is.
      const stray = join(root, '.disks', 'stray.img');
      execFileSync('truncate', ['-s', '16M', stray]);
      execFileSync('losetup', ['-f', stray]);
      rmSync(stray);
      expect(loopDevicesUnder(root)).toHaveLength(3);
      expect(loopDevicesUnder(root)).toContainEqual(expect.stringMatching(/stray\.img \(deleted\)$/));

      await expect(releaseOrphanedDisks(root, SILENT_LOGGER)).resolves.toMatchObject({ unmounted: 1 });
      expect(mountsUnder(root)).toEqual([live.dir]);
      expect(await loopDevicesSettledUnder(root, 1)).toEqual([expect.stringContaining(imageOf(live.dir))]);
      expect(readFileSync(join(live.home, '..', 'uid'), 'utf8')).toMatch(/^\d+\n$/);
      // Nothing left to release: a second start-up runs no program at all.
      await expect(releaseOrphanedDisks(root, SILENT_LOGGER)).resolves.toEqual({ unmounted: 0, loopDevices: 0 });
      expect(mountsUnder(root)).toEqual([live.dir]);
      // The image stays, for its session to come back to.
      const back = await open('j', undefined);
      expect(readFileSync(join(back.home, 'kept.txt'), 'utf8')).toBe('kept');
      await remove(back);
      await remove(live);
    },
  );

  it('at start-up, thaws and unmounts the workspace a server killed in the middle of a fork left frozen', async () => {
    const frozen = await open('m', 32 * MIB);
    writeFileSync(join(frozen.home, 'kept.txt'), 'kept');
    await frozen.disk?.drop();
    execFileSync('fsfreeze', ['-f', frozen.dir]);
    await expect(releaseOrphanedDisks(root, SILENT_LOGGER)).resolves.toMatchObject({ unmounted: 1 });
    expect(mountsUnder(root)).toEqual([]);
    const back = await open('m', undefined);
    expect(readFileSync(join(back.home, 'kept.txt'), 'utf8')).toBe('kept');
    await remove(back);
  });

  it(
    'at start-up, after an rm -rf of its root while mounted (the images deleted under their mounts), unmounts them ' +
      'and frees their loop devices',
    async () => {
      const ws = await open('l', 32 * MIB);
      await ws.disk?.drop();
      // rm -rf goes into the mount, deletes the image beside it, and cannot remove the mount point.
      expect(spawnSync('rm', ['-rf', root]).status).not.toBe(0);
      expect(mountsUnder(root)).toEqual([ws.dir]);
      expect(loopDevicesUnder(root)).toEqual([expect.stringMatching(/\.img \(deleted\)$/)]);
      await expect(releaseOrphanedDisks(root, SILENT_LOGGER)).resolves.toMatchObject({ unmounted: 1 });
      expect(mountsUnder(root)).toEqual([]);
      expect(await loopDevicesSettledUnder(root)).toEqual([]);
      // Its lock file went with it (the image is gone for good).
      expect(readdirSync(join(root, '.disks'))).toEqual([]);
    },
  );

  it(
    'let go and unused since, is swept whole: its last use read from its image, its uid given back, nothing left ' +
      'mounted',
    async () => {
      const ws = await open('m', 32 * MIB);
      const uid = ws.owner?.uid;
      expect(uidClaimsIn(root)).toEqual([uid]);
      const letGoAtMs = Date.now();
      await letGo(ws);
      // Its marker is on the image now; the directory under it says nothing of its use.
      const longAgo = new Date(letGoAtMs - 86_400_000);
      utimesSync(ws.dir, longAgo, longAgo);
      expect(await lastUsedMs(ws.dir)).toBeGreaterThanOrEqual(letGoAtMs - 1000);

      await track(removeAbandonedWorkspace(ws.dir));
      expect(uidClaimsIn(root)).toEqual([]);
      expect(readdirSync(root).sort()).toEqual(['.disks', '.uids']);
      expect(readdirSync(join(root, '.disks'))).toEqual([]);
      expect(mountsUnder(root)).toEqual([]);
      expect(await loopDevicesSettledUnder(root)).toEqual([]);
    },
  );

  it(
    'probes the host once with a tiny image, leaves nothing behind, and clears what a dead server’s probe left ' +
      'mounted',
    async () => {
      // A server killed mid-probe (pid 4194305 is above any pid Linux gives): its image, still mounted.
      const disks = join(root, '.disks');
      mkdirSync(join(disks, 'probe-4194305-0a1b'), { recursive: true });
      execFileSync('truncate', ['-s', '16M', join(disks, 'probe-4194305-0a1b.img')]);
      execFileSync('mkfs.ext4', ['-q', '-F', join(disks, 'probe-4194305-0a1b.img')]);
      execFileSync('mount', ['-o', 'loop', join(disks, 'probe-4194305-0a1b.img'), join(disks, 'probe-4194305-0a1b')]);
      writeFileSync(join(disks, 'x.img.new-4194305-0a1b'), '');
      writeFileSync(join(disks, `x.img.new-${process.pid}-0a1b`), '');
      expect(loopDevicesUnder(root)).toHaveLength(1);
      await expect(track(probeWorkspaceDisks(root))).resolves.toEqual({ ok: true, sparse: true });
      expect(await loopDevicesSettledUnder(root)).toEqual([]);
      // A live process's image in the making is left alone.
      expect(readdirSync(disks)).toEqual([`x.img.new-${process.pid}-0a1b`]);
      expect(mountsUnder(root)).toEqual([]);
      expect(existsSync(join(disks, 'probe-4194305-0a1b'))).toBe(false);
    },
  );
});
