/**
 * Per-sandbox memory, process-count and CPU limits through cgroups.
 *
 * The start-up probe finds what this host offers: cgroup v2 (a cgroup2 mount where a group can be made with
 * memory, pids and cpu enabled for its children) or v1 (writable memory, pids and cpu hierarchies), else
 * nothing. Beneath the server's own cgroup, one parent group per LOCAL_SANDBOX_ROOT (`mcp-sandboxes-<hash of
 * the root>`, so that servers with other roots never touch it) holds one child per sandbox, named like its
 * workspace. Every sandboxed process enters its sandbox's children before it runs anything (launch.ts's
 * wrapper writes its pid to their `cgroup.procs`); a child goes once its sandbox ended and nothing runs in it,
 * and the parent goes with its last child. Children left empty by an earlier server go at start-up.
 */
import { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, rmdir } from 'node:fs/promises';
import { join } from 'node:path';

import { describeError, toErrnoCode } from '../../errors';
import { hashTag } from '../../hash-tag';

export type CgroupController = 'memory' | 'pids' | 'cpu';
export type CgroupVersion = 1 | 2;

const CONTROLLERS: readonly CgroupController[] = ['memory', 'pids', 'cpu'];
/** CFS period for the CPU limit: a CPU share of 0.5 is 50 ms of CPU time per 100 ms. */
const CPU_PERIOD_US = 100_000;
/** The kernel refuses a CFS quota below 1 ms. */
const MIN_CPU_QUOTA_US = 1_000;
/** Tries (with growing pauses, about 5 s in all) to empty and remove a sandbox's groups. */
const REMOVE_ATTEMPTS = 14;
/** Names of the children a parent group may hold: sandboxes (workspace names) and the probe's. */
const CHILD_NAME = /^(mcp-sandbox-[0-9a-f]+|probe-\d+)$/;

/** What each sandbox's groups are set to. */
export interface CgroupLimits {
  readonly memoryBytes: number;
  readonly maxProcesses: number;
  /** A share of CPU time, in CPUs (0.5: half of one CPU). */
  readonly cpus: number;
}

/** The file-system calls that behave differently on cgroupfs (the unit tests pass a fake tree's). */
export interface CgroupFs {
  /** Makes one directory; on cgroupfs, a group with its control files. */
  mkdir(path: string): Promise<void>;
  /** Removes one directory; on cgroupfs it fails (EBUSY) while a process is in the group. */
  rmdir(path: string): Promise<void>;
  /** Writes a control file, never creating one (a missing file is ENOENT). */
  write(path: string, value: string): Promise<void>;
  /** SIGKILLs a process (one left in a group being removed). */
  kill(pid: number): void;
}

const HOST_FS: CgroupFs = {
  mkdir: async (path) => {
    await mkdir(path);
  },
  rmdir: (path) => rmdir(path),
  write: async (path, value) => {
    const handle = await open(path, constants.O_WRONLY | constants.O_TRUNC);
    try {
      await handle.writeFile(value);
    } finally {
      await handle.close();
    }
  },
  kill: (pid) => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  },
};

/** Where this host lets the server group sandboxes: a parent group and the controllers it holds. */
export interface CgroupPlacement {
  readonly version: CgroupVersion;
  /** The parent group (made on demand, removed with its last child). */
  readonly parent: string;
  readonly controllers: readonly CgroupController[];
}

/** One sandbox's groups. */
export interface SandboxCgroup {
  /**
   * Makes the sandbox's groups where missing and sets their limits; resolves with the `cgroup.procs` files a
   * process must enter (launch.ts's wrapper does, before anything of the sandbox runs).
   */
  enter(): Promise<string[]>;
  /** Processes the kernel killed so far in the sandbox's memory group for want of memory; `undefined` without one. */
  oomKills(): Promise<number | undefined>;
  /** Kills whatever still runs in the groups and removes them (and the parent, once empty); false if they stayed. */
  remove(): Promise<boolean>;
}

/** The cgroups this host offers the sandboxes. */
export class SandboxCgroups {
  constructor(
    readonly placements: readonly CgroupPlacement[],
    private readonly limits: CgroupLimits,
    private readonly fs: CgroupFs = HOST_FS,
  ) {}

  /** The cgroup version holding `controller`, if any does. */
  versionOf(controller: CgroupController): CgroupVersion | undefined {
    return this.placements.find((p) => p.controllers.includes(controller))?.version;
  }

  /** The groups of the sandbox whose workspace is named `name`. */
  forSandbox(name: string): SandboxCgroup {
    if (!CHILD_NAME.test(name)) throw new Error(`not a sandbox group name: ${name}`);
    return new Groups(this.placements, name, this.limits, this.fs);
  }
}

/** The parent group's name for a LOCAL_SANDBOX_ROOT: servers with other roots (jest workers) never share one. */
export function parentGroupName(root: string): string {
  return `mcp-sandboxes-${hashTag(root, 12)}`;
}

export interface ProbeCgroupsOptions {
  /** LOCAL_SANDBOX_ROOT: names the parent group. */
  readonly root: string;
  readonly limits: CgroupLimits;
  /** The text of /proc/self/mountinfo. @default read here */
  readonly mountinfo?: string;
  /** The text of /proc/self/cgroup. @default read here */
  readonly selfCgroup?: string;
  readonly fs?: CgroupFs;
}

export interface CgroupProbe {
  /** `undefined` when no controller could be used. */
  readonly cgroups: SandboxCgroups | undefined;
  /** Why a controller is not used (one line each; empty when all are). */
  readonly problems: readonly string[];
}

/**
 * Finds the cgroups this host lets the server use: v2 first, v1 for the controllers v2 does not offer. A
 * controller counts only once a group was made under it and its limit written (then removed again). Removes
 * the empty children an earlier server left.
 */
export async function probeCgroups(options: ProbeCgroupsOptions): Promise<CgroupProbe> {
  const fs = options.fs ?? HOST_FS;
  const [mountinfo, selfCgroup] = await Promise.all([
    options.mountinfo ?? readFile('/proc/self/mountinfo', 'utf8').catch(() => ''),
    options.selfCgroup ?? readFile('/proc/self/cgroup', 'utf8').catch(() => ''),
  ]);
  const mounts = parseMountinfo(mountinfo);
  const own = parseSelfCgroup(selfCgroup);
  const name = parentGroupName(options.root);
  const problems: string[] = [];
  const placements: CgroupPlacement[] = [];

  const v2 = mounts.find((m) => m.fsType === 'cgroup2');
  if (v2 !== undefined) {
    const found = await placeV2(v2, own.get('') ?? '/', name, options.limits, fs);
    if (typeof found === 'string') problems.push(`cgroup v2 (${v2.mountPoint}): ${found}`);
    else placements.push(found);
  }
  for (const controller of CONTROLLERS) {
    if (placements.some((p) => p.controllers.includes(controller))) continue;
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
    if (mount === undefined) {
      const why = v2 === undefined ? ' and no cgroup2 mount' : ' and not offered by cgroup v2';
      problems.push(`${controller}: no cgroup v1 hierarchy${why}`);
      continue;
    }
    const found = await placeV1(mount, own.get(controller) ?? '/', controller, name, options.limits, fs);
    if (typeof found === 'string') problems.push(`cgroup v1 ${controller} (${mount.mountPoint}): ${found}`);
    else {
      const shared = placements.findIndex((p) => p.version === 1 && p.parent === found.parent);
      if (shared === -1) placements.push(found);
      else placements[shared] = { ...found, controllers: [...(placements[shared]?.controllers ?? []), controller] };
    }
  }
  for (const placement of placements) await removeStaleChildren(placement.parent, fs);
  return {
    cgroups: placements.length === 0 ? undefined : new SandboxCgroups(placements, options.limits, fs),
    problems,
  };
}

interface Mount {
  readonly root: string;
  readonly mountPoint: string;
  readonly readOnly: boolean;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

/**
 * The mounts of /proc/self/mountinfo (`id parent dev root mountpoint options [optional…] - fstype source
 * superoptions`).
 */
function parseMountinfo(text: string): Mount[] {
  const unescaped = (field: string): string =>
    field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-', 6);
    if (dash === -1 || fields.length < dash + 3) continue;
    mounts.push({
      root: unescaped(fields[3] ?? '/'),
      mountPoint: unescaped(fields[4] ?? ''),
      readOnly: (fields[5] ?? '').split(',').includes('ro'),
      fsType: fields[dash + 1] ?? '',
      superOptions: (fields[dash + 3] ?? '').split(','),
    });
  }
  return mounts;
}

/** /proc/self/cgroup as controller → path (`''` for the v2 line `0::/path`). */
function parseSelfCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [, controllers, ...rest] = line.split(':');
    if (controllers === undefined || rest.length === 0) continue;
    for (const controller of controllers.split(',')) paths.set(controller, rest.join(':'));
  }
  return paths;
}

/** The server's own group in `mount` (where it is visible there), then the mount's top: where a parent may go. */
function candidateBases(mount: Mount, ownPath: string): string[] {
  let below = '';
  if (!ownPath.split('/').includes('..')) {
    if (mount.root === '/') below = ownPath;
    else if (ownPath === mount.root || ownPath.startsWith(`${mount.root}/`)) below = ownPath.slice(mount.root.length);
  }
  const own = join(mount.mountPoint, below);
  return own === mount.mountPoint ? [own] : [own, mount.mountPoint];
}

async function placeV2(
  mount: Mount,
  ownPath: string,
  name: string,
  limits: CgroupLimits,
  fs: CgroupFs,
): Promise<CgroupPlacement | string> {
  if (mount.readOnly) return 'mounted read-only';
  let problem = 'no usable group';
  for (const base of candidateBases(mount, ownPath)) {
    const offered = words(await readFile(join(base, 'cgroup.controllers'), 'utf8').catch(() => ''));
    const controllers = CONTROLLERS.filter((c) => offered.includes(c));
    if (controllers.length === 0) {
      problem = `offers none of memory, pids, cpu (it has: ${offered.join(' ') || 'nothing'})`;
      continue;
    }
    try {
      const enabled = words(await readFile(join(base, 'cgroup.subtree_control'), 'utf8'));
      const missing = controllers.filter((c) => !enabled.includes(c));
      // A group with processes of its own cannot hand controllers down (EBUSY): then the next base is tried.
      if (missing.length > 0)
        await fs.write(join(base, 'cgroup.subtree_control'), missing.map((c) => `+${c}`).join(' '));
      const placement: CgroupPlacement = { version: 2, parent: join(base, name), controllers };
      await probePlacement(placement, limits, fs);
      return placement;
    } catch (err: unknown) {
      problem = `cannot make a limited group under ${base} (${toErrnoCode(err) ?? describeError(err)})`;
    }
  }
  return problem;
}

async function placeV1(
  mount: Mount,
  ownPath: string,
  controller: CgroupController,
  name: string,
  limits: CgroupLimits,
  fs: CgroupFs,
): Promise<CgroupPlacement | string> {
  if (mount.readOnly) return 'mounted read-only';
  let problem = 'no usable group';
  for (const base of candidateBases(mount, ownPath)) {
    const placement: CgroupPlacement = { version: 1, parent: join(base, name), controllers: [controller] };
    try {
      await probePlacement(placement, limits, fs);
      return placement;
    } catch (err: unknown) {
      problem = `cannot make a limited group under ${base} (${toErrnoCode(err) ?? describeError(err)})`;
    }
  }
  return problem;
}

/** Makes the parent and a child in it, sets the child's limits, and removes the child again. */
async function probePlacement(placement: CgroupPlacement, limits: CgroupLimits, fs: CgroupFs): Promise<void> {
  await makeParent(placement, fs);
  const probe = join(placement.parent, `probe-${process.pid}`);
  await fs.mkdir(probe).catch((err: unknown) => {
    if (toErrnoCode(err) !== 'EEXIST') throw err;
  });
  try {
    await configure(placement, probe, limits, fs);
  } finally {
    await fs.rmdir(probe).catch(() => undefined);
  }
}

/** Makes the parent group if missing; under v2, hands its children the controllers. */
async function makeParent(placement: CgroupPlacement, fs: CgroupFs): Promise<void> {
  await fs.mkdir(placement.parent).catch((err: unknown) => {
    if (toErrnoCode(err) !== 'EEXIST') throw err;
  });
  if (placement.version === 2)
    await fs.write(
      join(placement.parent, 'cgroup.subtree_control'),
      placement.controllers.map((c) => `+${c}`).join(' '),
    );
}

/** Sets the limits of the group `dir` for the placement's controllers. */
async function configure(placement: CgroupPlacement, dir: string, limits: CgroupLimits, fs: CgroupFs): Promise<void> {
  const file = (name: string): string => join(dir, name);
  const quota = Math.max(MIN_CPU_QUOTA_US, Math.round(limits.cpus * CPU_PERIOD_US));
  for (const controller of placement.controllers) {
    if (controller === 'memory' && placement.version === 1) {
      // memsw (memory + swap) must never be below the memory limit: the order depends on which way they move.
      const memory = String(limits.memoryBytes);
      try {
        await fs.write(file('memory.limit_in_bytes'), memory);
        await writeOptionalControl(fs, file('memory.memsw.limit_in_bytes'), memory);
      } catch {
        await writeOptionalControl(fs, file('memory.memsw.limit_in_bytes'), memory);
        await fs.write(file('memory.limit_in_bytes'), memory);
      }
    } else if (controller === 'memory') {
      await fs.write(file('memory.max'), String(limits.memoryBytes));
      // Swap is no way past the limit.
      await writeOptionalControl(fs, file('memory.swap.max'), '0');
    } else if (controller === 'pids') {
      await fs.write(file('pids.max'), String(limits.maxProcesses));
    } else if (placement.version === 1) {
      await fs.write(file('cpu.cfs_period_us'), String(CPU_PERIOD_US));
      await fs.write(file('cpu.cfs_quota_us'), String(quota));
    } else {
      await fs.write(file('cpu.max'), `${quota} ${CPU_PERIOD_US}`);
    }
  }
}

/** Writes a control file that not every kernel has (memsw needs swap accounting; swap.max, swap). */
async function writeOptionalControl(fs: CgroupFs, path: string, value: string): Promise<void> {
  await fs.write(path, value).catch((err: unknown) => {
    if (toErrnoCode(err) !== 'ENOENT') throw err;
  });
}

/** Removes the empty children of `parent` (an earlier server's, or a probe's), then `parent` if it emptied. */
async function removeStaleChildren(parent: string, fs: CgroupFs): Promise<void> {
  const names = await readdir(parent, { withFileTypes: true }).catch(() => []);
  // A child that still has processes stays (EBUSY): they belong to a sandbox that may yet be re-attached.
  await Promise.all(
    names
      .filter((e) => e.isDirectory() && CHILD_NAME.test(e.name))
      .map((e) => fs.rmdir(join(parent, e.name)).catch(() => undefined)),
  );
  await fs.rmdir(parent).catch(() => undefined);
}

function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w !== '');
}

class Groups implements SandboxCgroup {
  private configured = false;
  private readonly dirs: string[];

  constructor(
    private readonly placements: readonly CgroupPlacement[],
    name: string,
    private readonly limits: CgroupLimits,
    private readonly fs: CgroupFs,
  ) {
    this.dirs = placements.map((p) => join(p.parent, name));
  }

  async enter(): Promise<string[]> {
    await Promise.all(
      this.placements.map(async (placement, i) => {
        const dir = this.dirs[i] ?? '';
        // A group made just now (or by another instance sharing the root, or re-made after a stale sweep)
        // gets its limits; one this sandbox already set is left alone.
        const made = await this.make(placement, dir);
        if (made || !this.configured) {
          if (placement.version === 2) await makeParent(placement, this.fs);
          await configure(placement, dir, this.limits, this.fs);
        }
      }),
    );
    this.configured = true;
    return this.dirs.map((dir) => join(dir, 'cgroup.procs'));
  }

  /** Makes the group `dir` (and its parent when that went with its last child); true when it was made. */
  private async make(placement: CgroupPlacement, dir: string): Promise<boolean> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.fs.mkdir(dir);
        return true;
      } catch (err: unknown) {
        const code = toErrnoCode(err);
        if (code === 'EEXIST') return false;
        if (code !== 'ENOENT' || attempt >= 3) throw err;
        await makeParent(placement, this.fs);
      }
    }
  }

  async oomKills(): Promise<number | undefined> {
    const i = this.placements.findIndex((p) => p.controllers.includes('memory'));
    const placement = this.placements[i];
    if (placement === undefined) return undefined;
    const file = join(this.dirs[i] ?? '', placement.version === 1 ? 'memory.oom_control' : 'memory.events');
    const text = await readFile(file, 'utf8').catch(() => '');
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  async remove(): Promise<boolean> {
    for (let attempt = 0; attempt < REMOVE_ATTEMPTS; attempt += 1) {
      const pids = new Set<number>();
      for (const dir of this.dirs) {
        for (const pid of words(await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '')))
          pids.add(Number(pid));
      }
      for (const pid of pids) if (Number.isInteger(pid) && pid > 1) this.fs.kill(pid);
      const left = await Promise.all(
        this.dirs.map((dir) =>
          this.fs.rmdir(dir).then(
            () => false,
            (err: unknown) => toErrnoCode(err) !== 'ENOENT',
          ),
        ),
      );
      if (!left.includes(true)) {
        // The parent goes with its last child (another sandbox's child keeps it: ENOTEMPTY or EBUSY).
        await Promise.all(this.placements.map((p) => this.fs.rmdir(p.parent).catch(() => undefined)));
        return true;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(25 * 2 ** attempt, 500)));
    }
    return false;
  }
}
