/**
 * What this host offers the local backend, found once by the start-up probes and frozen: the isolation and how
 * hardened it is, the cgroups, the disks, the paths masked in every sandbox, and whether sandbox code runs here
 * at all. The provider reads it; nothing changes it.
 */
import { realpath, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

import type { LocalSandboxConfig } from '../../config';
import { describeError } from '../../errors';
import type { Logger } from '../../log';
import type { SandboxLimits } from '../types';
import { probeCgroups } from './cgroup-probe';
import type { CgroupLimits, SandboxCgroups } from './cgroups';
import { PROBING_DISKS, setUpWorkspaceDisks, type WorkspaceDisks } from './disk-limit';
import { releaseOrphanedDisks } from './disk-reclaim';
import { findRootLinks, type HardeningProbe, probeHardening } from './host-tools';
import { type HostTools, NO_HARDENING, type ProcessLimits, type SandboxLaunch } from './launch';
import { heldLimits, limitSettings, logLimits, processLimitsFor, type Rlimits } from './resource-limits';
import { PROBE_UID } from './sandbox-users';

/** What the probes start from: the settings and what is known of the host without probing. */
export interface HostProbeInput {
  readonly config: LocalSandboxConfig;
  readonly tools: HostTools;
  readonly logger: Logger;
  /** The rlimits every sandboxed process gets (before RLIMIT_DATA stands in for a memory cgroup). */
  readonly limits: ProcessLimits;
  /** The memory, processes and CPU each sandbox is to be held to. */
  readonly settings: CgroupLimits;
  /** Each sandbox runs as a user of its own: the server is root and setpriv is here. */
  readonly sandboxUsers: boolean;
}

/** The host as the probes found it. Frozen. */
export interface HostProfile {
  /** What every sandbox's supervisor is launched with here. */
  readonly launch: SandboxLaunch;
  /** Each sandbox runs as a user of its own. */
  readonly sandboxUsers: boolean;
  /** The groups that hold memory, processes and CPU per sandbox, where this host lets the server make them. */
  readonly cgroups: SandboxCgroups | undefined;
  /** The disk of new workspaces (LOCAL_SANDBOX_DISK_MB), where images work here. */
  readonly disks: WorkspaceDisks;
  /** What each sandbox runs under, and what holds each limit. */
  readonly limits: SandboxLimits;
  /** What the status says of the isolation: the probe's finding, or why sandbox code is not run. */
  readonly detail: string;
  /** Why no sandbox opens here (the error of every create and attach), if so. */
  readonly refusal: string | undefined;
}

/** What is known before probing. */
export function hostProbeInput(
  config: LocalSandboxConfig,
  tools: HostTools,
  logger: Logger,
  limits: ProcessLimits,
): HostProbeInput {
  return Object.freeze({
    config,
    tools,
    logger,
    limits,
    // Memory, processes and CPU per sandbox: cgroups where this host lets the server make them.
    settings: limitSettings(config, limits),
    // As root, each sandbox runs as its own unprivileged user: rlimits then hold and sessions cannot reach each
    // other.
    sandboxUsers: process.getuid?.() === 0 && tools.setpriv !== undefined,
  });
}

/** The limits reported while the probes run. */
export function probingLimits({ settings, tools, sandboxUsers }: HostProbeInput): SandboxLimits {
  return { ...heldLimits(settings, undefined, rlimitsOf(tools, sandboxUsers), false), disk: PROBING_DISKS.limit };
}

/** Runs the start-up probes, logs what they found, and returns the profile. */
export async function probeHostProfile(input: HostProbeInput): Promise<HostProfile> {
  const { config, tools, logger } = input;
  // Side by side with the other probes: what servers that are gone left mounted under the root is released
  // (disk-reclaim.ts), then a tiny image is formatted, mounted and unmounted (~40 ms). Both before any workspace
  // opens.
  const disksFound = releaseOrphanedDisks(config.root, logger).then(() =>
    setUpWorkspaceDisks(config.root, config.diskBytes, logger),
  );
  const cgroups = await findCgroups(input);
  const isolation = await probeIsolation(input);
  const unisolated = isolation.ok ? undefined : refusalWithoutIsolation(config, isolation.detail);
  logIsolation(logger, config, isolation, unisolated !== undefined);
  if (tools.prlimit === undefined) logger.warn('prlimit not found: sandboxed processes run without rlimits');
  const masks = await findMasks(input);
  const disks = await disksFound;
  const launch: SandboxLaunch = Object.freeze({
    isolation: isolation.ok ? 'bwrap' : 'none',
    tools: Object.freeze({ ...tools }),
    limits: Object.freeze(processLimitsFor(input.limits, input.settings, cgroups)),
    allowNetwork: config.allowNetwork,
    hiddenPaths: Object.freeze(masks.hiddenPaths),
    rootLinks: masks.rootLinks,
    hardening: isolation.hardening,
    python: config.python,
  });
  const held = heldLimits(input.settings, cgroups, rlimitsOf(tools, input.sandboxUsers), true);
  return Object.freeze({
    launch,
    sandboxUsers: input.sandboxUsers,
    cgroups,
    disks,
    limits: Object.freeze({ ...held, disk: disks.limit }),
    detail: unisolated ?? isolation.detail,
    refusal: requiredIsolation(config, isolation) ?? unisolated ?? unreachableRoot(masks.rootProblem),
  });
}

function rlimitsOf(tools: HostTools, sandboxUsers: boolean): Rlimits {
  return { prlimit: tools.prlimit !== undefined, ownUsers: sandboxUsers };
}

/** The sandboxes' cgroups, where this host lets the server make them; the start-up line says what holds what. */
async function findCgroups({ config, tools, logger, settings, sandboxUsers }: HostProbeInput) {
  const probed = await probeCgroups({ root: config.root, limits: settings }).catch((err: unknown) => ({
    cgroups: undefined,
    problems: [describeError(err)],
  }));
  const held = heldLimits(settings, probed.cgroups, rlimitsOf(tools, sandboxUsers), true);
  logLimits(logger, held, probed.cgroups, probed.problems);
  return probed.cgroups;
}

/** Whether bubblewrap works here and with what hardening; off when LOCAL_SANDBOX_ISOLATION=none says so. */
function probeIsolation({ config, tools, sandboxUsers }: HostProbeInput): Promise<HardeningProbe> {
  if (config.isolation === 'none') {
    const off = { ok: false, detail: 'isolation off (LOCAL_SANDBOX_ISOLATION=none)', hardening: NO_HARDENING };
    return Promise.resolve(off);
  }
  return probeHardening(tools, sandboxUsers ? PROBE_UID : undefined);
}

/** Why sandbox code is not run without isolation: bubblewrap missing on a server other hosts reach. */
function refusalWithoutIsolation(config: LocalSandboxConfig, detail: string): string | undefined {
  if (config.isolation !== 'auto' || !config.exposed) return undefined;
  return (
    `bubblewrap does not work here (${detail}) and other hosts can reach this server: sandbox code is not run ` +
    'without isolation. Install bubblewrap, or set LOCAL_SANDBOX_ISOLATION=none to run it unisolated on purpose.'
  );
}

/** LOCAL_SANDBOX_ISOLATION=bwrap where bubblewrap does not work. */
function requiredIsolation(config: LocalSandboxConfig, isolation: HardeningProbe): string | undefined {
  if (config.isolation !== 'bwrap' || isolation.ok) return undefined;
  return `LOCAL_SANDBOX_ISOLATION=bwrap but bubblewrap does not work here (${isolation.detail}).`;
}

/** A directory on the way to LOCAL_SANDBOX_ROOT that the sandbox users cannot enter. */
function unreachableRoot(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  return (
    `The sandbox users cannot enter ${dir}: run chmod o+x on it ` +
    '(LOCAL_SANDBOX_ROOT and its parents must be searchable).'
  );
}

/** The start-up lines about the isolation: a refusal, plain processes, or bubblewrap and its hardening. */
function logIsolation(logger: Logger, config: LocalSandboxConfig, found: HardeningProbe, refused: boolean): void {
  if (refused) {
    logger.error('local sandbox refused: no isolation on a server other hosts can reach', { reason: found.detail });
  } else if (!found.ok) {
    const level = config.isolation === 'bwrap' ? 'error' : 'warn';
    logger[level](
      'local sandbox runs plain processes: this is NOT a security boundary; install bubblewrap for isolation',
      { reason: found.detail, required: config.isolation === 'bwrap' },
    );
  } else {
    const { hardening } = found;
    logger.info('local sandbox isolation: bubblewrap', {
      network: config.allowNetwork ? 'enabled' : 'disabled',
      nested_user_namespaces: hardening.disableUserns ? 'refused' : 'allowed',
      seccomp: hardening.seccomp === undefined ? 'off' : 'on',
    });
    if (!hardening.disableUserns || hardening.seccomp === undefined) {
      logger.warn('bubblewrap runs without part of its hardening here', { detail: found.detail });
    }
  }
}

/** What is masked in every sandbox, the host's top-level symlinks, and a root the sandbox users cannot reach. */
async function findMasks({ config, logger, sandboxUsers }: HostProbeInput) {
  // A hidden path that is a symlink is masked where it leads (bubblewrap cannot mount over a symlink,
  // and would refuse to start every sandbox); the link then leads to the mask.
  const hiddenPaths = await Promise.all(config.hiddenPaths.map((path) => realpath(path).catch(() => path)));
  // The host's top-level symlinks are symlinks inside too: no second view of a masked file (launch.ts).
  const rootLinks: ReadonlyMap<string, string> = await findRootLinks();
  if (!sandboxUsers) return { hiddenPaths, rootLinks, rootProblem: undefined };
  // Mask only what a sandbox user could reach: bubblewrap cannot mount over a path it cannot see.
  const reachable = await Promise.all(
    hiddenPaths.map(async (path) => (await findUnsearchableDir(dirname(path))) === undefined),
  );
  const rootProblem = await findUnsearchableDir(config.root);
  if (rootProblem !== undefined) logger.error('sandbox users cannot reach LOCAL_SANDBOX_ROOT', { path: rootProblem });
  return { hiddenPaths: hiddenPaths.filter((_, i) => reachable[i]), rootLinks, rootProblem };
}

/** The first directory from `/` down to `path` that other users cannot search (o+x), if any. */
async function findUnsearchableDir(path: string): Promise<string | undefined> {
  const chain: string[] = [];
  for (let dir = path; ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    const info = await stat(dir).catch(() => undefined);
    if (info === undefined) return undefined; // created later by mkdir, with searchable modes
    if ((info.mode & 0o001) === 0) return dir;
  }
  return undefined;
}
