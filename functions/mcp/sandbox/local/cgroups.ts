/**
 * Per-sandbox memory, process-count and CPU limits through cgroups.
 *
 * The start-up probe (cgroup-probe.ts) finds what this host offers: cgroup v2 (a cgroup2 mount where a group can
 * be made with memory, pids and cpu enabled for its children) or v1 (writable memory, pids and cpu hierarchies),
 * else nothing. Beneath the server's own cgroup, one parent group per LOCAL_SANDBOX_ROOT (`mcp-sandboxes-<hash of
 * the root>`, so that servers with other roots never touch it) holds one child per sandbox, named like its
 * workspace. Every sandboxed process enters its sandbox's children before it runs anything (launch.ts's
 * wrapper writes its pid to their `cgroup.procs`); a child goes once its sandbox ended and nothing runs in it,
 * and the parent goes with its last child. Children left empty by an earlier server go at start-up.
 */
import { constants } from 'node:fs';
import { mkdir, open, readFile, rmdir } from 'node:fs/promises';
import { join } from 'node:path';

import { toErrnoCode } from '../../errors';
import { hashTag } from '../../hash-tag';

export type CgroupController = 'memory' | 'pids' | 'cpu';
export type CgroupVersion = 1 | 2;

export const CONTROLLERS: readonly CgroupController[] = ['memory', 'pids', 'cpu'];
/** CFS period for the CPU limit: a CPU share of 0.5 is 50 ms of CPU time per 100 ms. */
const CPU_PERIOD_US = 100_000;
/** The kernel refuses a CFS quota below 1 ms. */
const MIN_CPU_QUOTA_US = 1_000;
/** Tries (with growing pauses, about 5 s in all) to empty and remove a sandbox's groups. */
const REMOVE_ATTEMPTS = 14;
/** Names of the children a parent group may hold: sandboxes (workspace names) and the probe's. */
export const CHILD_NAME = /^(mcp-sandbox-[0-9a-f]+|probe-\d+)$/;

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

export const HOST_FS: CgroupFs = {
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

/** Makes the parent group if missing; under v2, hands its children the controllers. */
export async function makeParent(placement: CgroupPlacement, fs: CgroupFs): Promise<void> {
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
export async function configure(
  placement: CgroupPlacement,
  dir: string,
  limits: CgroupLimits,
  fs: CgroupFs,
): Promise<void> {
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

/** The words of a control file. */
export function words(text: string): string[] {
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
