/** The local backend: workspaces under LOCAL_SANDBOX_ROOT, isolated with bubblewrap where it works. */
import { randomBytes } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';

import { type Clock, SYSTEM_CLOCK } from '../../clock';
import { isLoopbackHost, type LocalSandboxConfig } from '../../config';
import { AppError, describeError } from '../../errors';
import type { Logger } from '../../log';
import type { BackendStatus, Sandbox, SandboxLimits, SandboxOwner, SandboxProvider } from '../types';
import { probeCgroups, type SandboxCgroups } from './cgroups';
import { releaseOrphanedDisks } from './disk-reclaim';
import { findHostTools, findRootLinks, probeBwrap } from './host-tools';
import {
  type BwrapHardening,
  DEFAULT_PROCESS_LIMITS,
  type HostTools,
  NO_HARDENING,
  type ProcessLimits,
} from './launch';
import { LocalSandbox } from './local-sandbox';
import { createPreviewSigner } from './preview-token';
import { heldLimits, limitSettings, logLimits, processLimitsFor } from './resource-limits';
import { workspaceSandboxId } from './sandbox-id';
import { PROBE_UID } from './sandbox-users';
import { seccompProgram } from './seccomp';
import { createTombstoneStore } from '../tombstones';
import { createWorkspaceJanitor } from './workspace-sweep';
import { createWorkspace, toWorkspaceName } from './workspace';
import { PROBING_DISKS, setUpWorkspaceDisks, type WorkspaceDisks } from './workspace-disk';

export interface LocalProviderOptions {
  config: LocalSandboxConfig;
  logger: Logger;
  /** Bytes kept per output stream. @default 65_536 */
  maxOutputBytes?: number;
  limits?: ProcessLimits;
  /** Dates the workspace's last-used marker. @default SYSTEM_CLOCK */
  clock?: Clock;
  /** bwrap, prlimit and setpriv. @default found on this host */
  tools?: HostTools;
  /**
   * A workspace unused for longer than this (the idle TTL plus the longest tool call) and not open here is
   * deleted (workspace-sweep.ts). @default never
   */
  staleAfterMs?: number;
  /**
   * Signs the access tokens of preview URLs (MCP_SESSION_SECRET).
   * @default random, for this provider
   */
  previewSecret?: string;
  /** How long such a preview URL (and the cookie it gives) stays valid (MCP_SESSION_MAX_AGE_S). @default 6 hours */
  previewTtlMs?: number;
}

export interface LocalSandboxProvider extends SandboxProvider {
  /** Resolves once the isolation probe finished; logs the outcome. */
  ready(): Promise<void>;
}

/** Creates the local provider. The bubblewrap probe runs in the background, off the start-up path. */
export function createLocalSandboxProvider({
  config,
  logger,
  maxOutputBytes = 65_536,
  limits = { ...DEFAULT_PROCESS_LIMITS, maxProcesses: config.maxProcesses ?? DEFAULT_PROCESS_LIMITS.maxProcesses },
  clock = SYSTEM_CLOCK,
  tools = findHostTools(),
  staleAfterMs,
  previewSecret = randomBytes(32).toString('base64url'),
  previewTtlMs = 6 * 3_600_000,
}: LocalProviderOptions): LocalSandboxProvider {
  const janitor =
    staleAfterMs === undefined
      ? undefined
      : createWorkspaceJanitor({ root: config.root, staleAfterMs, now: () => clock.now(), logger });
  const tombstones = createTombstoneStore(config.root, { now: () => clock.now() });
  // As root, each sandbox runs as its own unprivileged user: rlimits then hold and sessions cannot reach each other.
  const dropPrivileges = process.getuid?.() === 0 && tools.setpriv !== undefined;
  let isolation: 'bwrap' | 'none' | undefined;
  let detail = 'probing';
  let probe: Promise<void> | undefined;
  let rootProblem: string | undefined;
  /** Why sandbox code is not run at all (bubblewrap missing on a server other hosts reach). */
  let refusal: string | undefined;
  let hiddenPaths = config.hiddenPaths;
  let rootLinks = new Map<string, string>();
  let hardening: BwrapHardening = NO_HARDENING;
  /** The disk limit of new workspaces (LOCAL_SANDBOX_DISK_MB), once the probe found that images work here. */
  let disks: WorkspaceDisks = PROBING_DISKS;
  // Memory, processes and CPU per sandbox: cgroups where this host lets the server make them (probed in ready()).
  const settings = limitSettings(config, limits);
  let cgroups: SandboxCgroups | undefined;
  let cgroupsProbed = false;
  const rlimits = { prlimit: tools.prlimit !== undefined, ownUsers: dropPrivileges };
  // Previews on loopback reach clients only when the server's own clients are on this host too. Elsewhere
  // (LOCAL_SANDBOX_PREVIEW_PUBLIC=on) anyone who reaches the address could connect. On both, every process of this
  // host can: their URLs carry a token.
  const previewHost = config.previewHost ?? '127.0.0.1';
  const preview = {
    host: previewHost,
    reachable: !isLoopbackHost(previewHost) || !config.exposed,
    signer: createPreviewSigner(previewSecret, previewTtlMs),
    ...(config.previewDomain === undefined ? {} : { domain: config.previewDomain }),
  };
  const findCgroups = async (): Promise<void> => {
    const probed = await probeCgroups({ root: config.root, limits: settings }).catch((err: unknown) => ({
      cgroups: undefined,
      problems: [describeError(err)],
    }));
    cgroups = probed.cgroups;
    cgroupsProbed = true;
    logLimits(logger, heldLimits(settings, cgroups, rlimits, true), cgroups, probed.problems);
  };

  const ready = (): Promise<void> => {
    probe ??= (async () => {
      // Side by side with the other probes: what servers that are gone left mounted under the root is released
      // (disk-reclaim.ts), then a tiny image is formatted, mounted and unmounted (~40 ms). Both before any workspace opens.
      const disksFound = releaseOrphanedDisks(config.root, logger).then(() =>
        setUpWorkspaceDisks(config.root, config.diskBytes, logger),
      );
      await findCgroups();
      if (config.isolation === 'none') {
        isolation = 'none';
        detail = 'isolation off (LOCAL_SANDBOX_ISOLATION=none)';
      } else {
        const probed = await probeHardening(tools, dropPrivileges ? PROBE_UID : undefined);
        isolation = probed.ok ? 'bwrap' : 'none';
        detail = probed.detail;
        hardening = probed.hardening;
      }
      if (isolation === 'none' && config.isolation === 'auto' && config.exposed) {
        refusal = `bubblewrap does not work here (${detail}) and other hosts can reach this server: sandbox code is not run without isolation. Install bubblewrap, or set LOCAL_SANDBOX_ISOLATION=none to run it unisolated on purpose.`;
        logger.error('local sandbox refused: no isolation on a server other hosts can reach', { reason: detail });
      } else if (isolation === 'none') {
        const level = config.isolation === 'bwrap' ? 'error' : 'warn';
        logger[level](
          'local sandbox runs plain processes: this is NOT a security boundary; install bubblewrap for isolation',
          {
            reason: detail,
            required: config.isolation === 'bwrap',
          },
        );
      } else {
        logger.info('local sandbox isolation: bubblewrap', {
          network: config.allowNetwork ? 'enabled' : 'disabled',
          nested_user_namespaces: hardening.disableUserns ? 'refused' : 'allowed',
          seccomp: hardening.seccomp === undefined ? 'off' : 'on',
        });
        if (!hardening.disableUserns || hardening.seccomp === undefined) {
          logger.warn('bubblewrap runs without part of its hardening here', { detail });
        }
      }
      if (tools.prlimit === undefined) logger.warn('prlimit not found: sandboxed processes run without rlimits');
      // A hidden path that is a symlink is masked where it leads (bubblewrap cannot mount over a symlink,
      // and would refuse to start every sandbox); the link then leads to the mask.
      hiddenPaths = await Promise.all(config.hiddenPaths.map((path) => realpath(path).catch(() => path)));
      // The host's top-level symlinks are symlinks inside too: no second view of a masked file (launch.ts).
      rootLinks = await findRootLinks();
      if (dropPrivileges) {
        // Mask only what a sandbox user could reach: bubblewrap cannot mount over a path it cannot see.
        const reachable = await Promise.all(
          hiddenPaths.map(async (path) => (await findUnsearchableDir(dirname(path))) === undefined),
        );
        hiddenPaths = hiddenPaths.filter((_, i) => reachable[i]);
        rootProblem = await findUnsearchableDir(config.root);
        if (rootProblem !== undefined) {
          logger.error('sandbox users cannot reach LOCAL_SANDBOX_ROOT', { path: rootProblem });
        }
      }
      disks = await disksFound;
      // Leftovers of earlier processes that no session can come back for.
      janitor?.maybeSweep();
    })();
    return probe;
  };

  /** What each sandbox runs under, by the mechanisms this host offers. */
  const sandboxLimits = (): SandboxLimits => {
    const none = { value: null, enforcedBy: 'none' };
    const held = heldLimits(settings, cgroups, rlimits, cgroupsProbed);
    return {
      memory: held.memory,
      processes: held.processes,
      cpu: held.cpu,
      disk: disks.limit,
    };
  };

  const open = async (sessionKey: string, resumed: boolean): Promise<Sandbox> => {
    await ready();
    if (config.isolation === 'bwrap' && isolation !== 'bwrap') {
      throw new AppError(
        'sandbox_error',
        `LOCAL_SANDBOX_ISOLATION=bwrap but bubblewrap does not work here (${detail}).`,
      );
    }
    if (refusal !== undefined) throw new AppError('sandbox_error', refusal);
    if (rootProblem !== undefined) {
      throw new AppError(
        'sandbox_error',
        `The sandbox users cannot enter ${rootProblem}: run chmod o+x on it (LOCAL_SANDBOX_ROOT and its parents must be searchable).`,
      );
    }
    const name = toWorkspaceName(sessionKey);
    return janitor === undefined ? make(sessionKey, resumed) : janitor.track(name, () => make(sessionKey, resumed));
  };

  const make = async (sessionKey: string, resumed: boolean): Promise<Sandbox> => {
    const mode = isolation === 'bwrap' ? 'bwrap' : 'none';
    const opened = async () => {
      const workspace = await createWorkspace({
        root: config.root,
        sessionKey,
        virtualHome: mode === 'bwrap',
        sandboxUser: dropPrivileges,
        diskBytes: disks.limitBytes,
        logger,
      });
      // A new workspace (a new session, or a reset) gets a new id; one opened again keeps its own.
      const id = await workspaceSandboxId(workspace.dir).catch(async (err: unknown) => {
        await workspace.disk?.release();
        throw err;
      });
      return { workspace, id };
    };
    const { workspace, id } = await opened().catch((err: unknown) => {
      throw new AppError(
        'sandbox_error',
        `Could not create the sandbox workspace under LOCAL_SANDBOX_ROOT (${config.root}).`,
        { cause: err },
      );
    });
    return new LocalSandbox({
      id,
      workspace,
      isolation: mode,
      tools,
      limits: processLimitsFor(limits, settings, cgroups),
      cgroup: cgroups?.forSandbox(toWorkspaceName(sessionKey)),
      memoryLimitBytes: settings.memoryBytes,
      preview,
      allowNetwork: config.allowNetwork,
      hiddenPaths,
      rootLinks,
      hardening,
      python: config.python,
      maxOutputBytes,
      resumed,
      clock,
    });
  };

  return {
    ready,
    status(): BackendStatus {
      const usable =
        isolation !== undefined &&
        refusal === undefined &&
        rootProblem === undefined &&
        !(config.isolation === 'bwrap' && isolation !== 'bwrap');
      return {
        backend: 'local',
        ready: usable,
        isolation: isolation ?? 'probing',
        detail: refusal ?? detail,
        limits: sandboxLimits(),
      };
    },
    create: ({ sessionKey }: SandboxOwner) => {
      janitor?.maybeSweep();
      return open(sessionKey, false);
    },
    async attach({ sessionKey }: SandboxOwner): Promise<Sandbox | undefined> {
      janitor?.maybeSweep();
      // Unused past the idle TTL, its session has ended everywhere: a session that comes back starts afresh.
      if ((await janitor?.removeIfStale(toWorkspaceName(sessionKey))) === true) return undefined;
      const exists = await stat(join(config.root, toWorkspaceName(sessionKey))).then(
        (info) => info.isDirectory(),
        () => false,
      );
      return exists ? open(sessionKey, true) : undefined;
    },
    recordEnded: ({ sessionKey }, untilMs) => tombstones.record(toWorkspaceName(sessionKey), untilMs),
    hasEnded: ({ sessionKey }, nowMs) => tombstones.has(toWorkspaceName(sessionKey), nowMs),
  };
}

/**
 * Probes bubblewrap with as much hardening as this host allows: no nested user namespaces and the seccomp
 * filter, else the filter alone, else none. The detail says which.
 */
async function probeHardening(
  tools: HostTools,
  uid: number | undefined,
): Promise<{ ok: boolean; detail: string; hardening: BwrapHardening }> {
  const seccomp = seccompProgram();
  const candidates: BwrapHardening[] = [
    { disableUserns: true, seccomp },
    { disableUserns: false, seccomp },
    NO_HARDENING,
  ];
  let last = { ok: false, detail: 'bwrap is not installed' };
  for (const hardening of candidates) {
    if (hardening !== NO_HARDENING && hardening.seccomp === undefined && !hardening.disableUserns) continue;
    last = await probeBwrap(tools, uid, hardening);
    if (last.ok) {
      const parts = [
        hardening.disableUserns ? 'nested user namespaces refused' : 'nested user namespaces allowed',
        hardening.seccomp === undefined ? `no seccomp filter (${process.arch})` : 'seccomp filter on',
      ];
      return { ok: true, detail: `${last.detail}; ${parts.join('; ')}`, hardening };
    }
    if (tools.bwrap === undefined) break;
  }
  return { ...last, hardening: NO_HARDENING };
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
