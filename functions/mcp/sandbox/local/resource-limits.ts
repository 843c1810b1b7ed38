/**
 * The local backend's per-sandbox resource limits: what the settings ask for, and what holds each on this
 * host: a cgroup (cgroups.ts), else an rlimit where one fits (processes with a sandbox user of its own; memory
 * per process through RLIMIT_DATA), else nothing.
 */
import { LOCAL_LIMIT_DEFAULTS, type LocalSandboxConfig } from '../../config';
import type { Logger } from '../../log';
import type { OutOfMemory, ResourceLimit } from '../types';
import type { CgroupController, CgroupLimits, SandboxCgroups } from './cgroups';
import type { ProcessLimits } from './launch';

/** The setting a model is pointed at when its sandbox ran out of memory. */
export const MEMORY_SETTING = 'LOCAL_SANDBOX_MEMORY_MB';

/** The limits the configuration asks for (`maxProcesses` is the process limits' own). */
export function limitSettings(config: LocalSandboxConfig, limits: ProcessLimits): CgroupLimits {
  return {
    memoryBytes: (config.memoryMb ?? LOCAL_LIMIT_DEFAULTS.memoryMb) * 2 ** 20,
    maxProcesses: limits.maxProcesses,
    cpus: config.cpus ?? LOCAL_LIMIT_DEFAULTS.cpus,
  };
}

/** The mechanisms this host offers besides cgroups. */
export interface Rlimits {
  /** prlimit is installed. */
  readonly prlimit: boolean;
  /** Each sandbox runs as a user of its own (RLIMIT_NPROC then counts only its processes). */
  readonly ownUsers: boolean;
}

/** What holds memory, processes and CPU for each sandbox. */
export interface HeldLimits {
  readonly memory: ResourceLimit;
  readonly processes: ResourceLimit;
  readonly cpu: ResourceLimit;
}

/** The limits each sandbox runs under here, and what enforces each; `probing` until the cgroup probe is done. */
export function heldLimits(
  settings: CgroupLimits,
  cgroups: SandboxCgroups | undefined,
  rlimits: Rlimits,
  probed: boolean,
): HeldLimits {
  const none = { value: null, enforcedBy: probed ? 'none' : 'probing' };
  const cgroup = (controller: CgroupController): string | undefined => {
    const version = cgroups?.versionOf(controller);
    return version === undefined ? undefined : `cgroup v${version}`;
  };
  const held = (value: number, by: string | undefined): ResourceLimit =>
    by === undefined ? none : { value, enforcedBy: by };
  const rlimit = (holds: boolean): string | undefined => (holds ? 'rlimit' : undefined);
  return {
    memory: held(settings.memoryBytes, cgroup('memory') ?? rlimit(probed && rlimits.prlimit)),
    processes: held(settings.maxProcesses, cgroup('pids') ?? rlimit(rlimits.prlimit && rlimits.ownUsers)),
    cpu: held(settings.cpus, cgroup('cpu')),
  };
}

/** Each sandboxed process's rlimits: RLIMIT_DATA stands in for a memory cgroup where there is none. */
export function processLimitsFor(
  limits: ProcessLimits,
  settings: CgroupLimits,
  cgroups: SandboxCgroups | undefined,
): ProcessLimits {
  return cgroups?.versionOf('memory') === undefined ? { ...limits, maxDataBytes: settings.memoryBytes } : limits;
}

/** What a call reports when the sandbox's memory group killed a process during it (`undefined` otherwise). */
export function outOfMemoryIf(killed: boolean, limitBytes: number): OutOfMemory | undefined {
  return killed ? { limitBytes, setting: MEMORY_SETTING } : undefined;
}

/** The start-up line saying what holds each limit; a warning for any that nothing holds. */
export function logLimits(
  logger: Logger,
  held: HeldLimits,
  cgroups: SandboxCgroups | undefined,
  problems: readonly string[],
): void {
  const show = (limit: ResourceLimit, format: (value: number) => string): string =>
    limit.value === null ? 'unlimited' : `${format(limit.value)} (${limit.enforcedBy})`;
  const perProcess = held.memory.enforcedBy === 'rlimit' ? ' per process (RLIMIT_DATA)' : '';
  logger.info('sandbox limits', {
    memory: `${show(held.memory, formatBytes)}${perProcess}`,
    processes: show(held.processes, String),
    cpu: show(held.cpu, (cpus) => `${cpus} CPU`),
    cgroups: cgroups?.placements.map((p) => p.parent).join(' ') ?? 'none',
  });
  const unlimited = (['memory', 'processes', 'cpu'] as const).filter((name) => held[name].value === null);
  if (unlimited.length > 0 || held.memory.enforcedBy === 'rlimit') {
    logger.warn('sandboxes run without part of their resource limits: no writable cgroup holds them here', {
      unlimited: unlimited.join(' ') || 'none',
      memory_per_process_only: held.memory.enforcedBy === 'rlimit',
      reason: problems.join('; ') || 'no cgroup found',
    });
  }
}

/** 1 GiB, 128 MiB. */
export function formatBytes(bytes: number): string {
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${Number(gib.toFixed(1))} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}
