/**
 * What a local sandbox's calls report of its limits: a process of the call killed for want of memory (the
 * memory cgroup's count of OOM kills rose during a call that failed), a disk full after it.
 */
import type { DiskFull, OutOfMemory } from '../types';
import type { SandboxCgroup } from './cgroups';
import { diskFullAfterCall } from './disk-limit';
import { outOfMemoryIf } from './resource-limits';
import type { Workspace } from './workspace';

/** The OOM-kill count taken before a call. */
export interface MemoryWatch {
  /** What the call reports when it `failed` and the count rose since. */
  outOfMemory(failed: boolean): Promise<OutOfMemory | undefined>;
}

export class LimitReports {
  constructor(
    /** The sandbox's cgroups, where the host offers them. */
    private readonly cgroup: SandboxCgroup | undefined,
    /** The sandbox's memory limit, reported when the kernel kills a process of it for want of memory. */
    private readonly memoryLimitBytes: number,
    private readonly workspace: Pick<Workspace, 'dir' | 'diskLimitBytes'>,
  ) {}

  /** Takes the count before a call (none without a memory cgroup: nothing is reported then). */
  async watchMemory(): Promise<MemoryWatch> {
    const before = await this.oomKills();
    return {
      outOfMemory: async (failed) => {
        if (before === undefined || !failed) return undefined;
        const after = await this.oomKills();
        return outOfMemoryIf(after !== undefined && after > before, this.memoryLimitBytes);
      },
    };
  }

  /**
   * The disk-full report after a call. After every command, not only failed ones (`cmd; true` hides a write
   * that failed): one statfs, no process.
   */
  diskFull(): Promise<DiskFull | undefined> {
    return diskFullAfterCall(this.workspace.dir, this.workspace.diskLimitBytes);
  }

  /** The kernel's count of processes it killed in this sandbox for want of memory (none without a cgroup). */
  private oomKills(): Promise<number | undefined> {
    return this.cgroup?.oomKills() ?? Promise.resolve(undefined);
  }
}
