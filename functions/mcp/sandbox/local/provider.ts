/** The local backend: workspaces under LOCAL_SANDBOX_ROOT, isolated with bubblewrap where it works. */
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';

import { type Clock, SYSTEM_CLOCK } from '../../clock';
import { isLoopbackHost, type LocalSandboxConfig } from '../../config';
import { AppError } from '../../errors';
import type { Logger } from '../../log';
import { SingleFlight } from '../../single-flight';
import { createTombstoneStore } from '../tombstones';
import type { BackendStatus, Sandbox, SandboxOwner, SandboxProvider } from '../types';
import { type HostProfile, hostProbeInput, probeHostProfile, probingLimits } from './host-profile';
import { findHostTools } from './host-tools';
import { DEFAULT_PROCESS_LIMITS, type HostTools, type ProcessLimits } from './launch';
import { LocalSandbox, type PreviewSettings } from './local-sandbox';
import { createPreviewSigner } from './preview-token';
import { workspaceSandboxId } from './sandbox-id';
import { createWorkspaceJanitor, type WorkspaceJanitor } from './workspace-sweep';
import { createWorkspace, toWorkspaceName } from './workspace';

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

/** Creates the local provider. The start-up probes run in the background, off the start-up path. */
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
  const host = hostProbeInput(config, tools, logger, limits);
  const beforeProbe = probingLimits(host);
  const shared: SharedSettings = {
    config,
    logger,
    preview: previewSettings(config, previewSecret, previewTtlMs),
    memoryLimitBytes: host.settings.memoryBytes,
    maxOutputBytes,
    clock,
  };
  /** The host profile: probed once, on the first `ready()` (again on the next, if that probe failed). */
  const profile = new SingleFlight<HostProfile>();
  const probe = (): Promise<HostProfile> =>
    profile.get(async () => {
      const found = await probeHostProfile(host);
      // Leftovers of earlier processes that no session can come back for.
      janitor?.maybeSweep();
      return found;
    });
  const open = async (sessionKey: string, resumed: boolean): Promise<Sandbox> => {
    const found = await probe();
    if (found.refusal !== undefined) throw new AppError('sandbox_error', found.refusal);
    const make = () => openSandbox(found, shared, sessionKey, resumed);
    return janitor === undefined ? make() : janitor.track(toWorkspaceName(sessionKey), make);
  };

  return {
    ready: () => probe().then(() => undefined),
    status(): BackendStatus {
      const found = profile.value;
      return {
        backend: 'local',
        ready: found !== undefined && found.refusal === undefined,
        isolation: found?.launch.isolation ?? 'probing',
        detail: found?.detail ?? 'probing',
        limits: found?.limits ?? beforeProbe,
      };
    },
    create: ({ sessionKey }: SandboxOwner) => {
      janitor?.maybeSweep();
      return open(sessionKey, false);
    },
    attach: async ({ sessionKey }: SandboxOwner) =>
      (await workspaceToAttach(config.root, sessionKey, janitor)) ? open(sessionKey, true) : undefined,
    recordEnded: ({ sessionKey }, untilMs) => tombstones.record(toWorkspaceName(sessionKey), untilMs),
    hasEnded: ({ sessionKey }, nowMs) => tombstones.has(toWorkspaceName(sessionKey), nowMs),
  };
}

/**
 * Where previews are served and how their URLs are signed. Previews on loopback reach clients only when the
 * server's own clients are on this host too. Elsewhere (LOCAL_SANDBOX_PREVIEW_PUBLIC=on) anyone who reaches the
 * address could connect. On both, every process of this host can: their URLs carry a token.
 */
function previewSettings(config: LocalSandboxConfig, secret: string, ttlMs: number): PreviewSettings {
  const host = config.previewHost ?? '127.0.0.1';
  return {
    host,
    reachable: !isLoopbackHost(host) || !config.exposed,
    signer: createPreviewSigner(secret, ttlMs),
    ...(config.previewDomain === undefined ? {} : { domain: config.previewDomain }),
  };
}

/** Whether the workspace of `sessionKey` is there to open again. */
async function workspaceToAttach(root: string, sessionKey: string, janitor: WorkspaceJanitor | undefined) {
  janitor?.maybeSweep();
  // Unused past the idle TTL, its session has ended everywhere: a session that comes back starts afresh.
  if ((await janitor?.removeIfStale(toWorkspaceName(sessionKey))) === true) return false;
  return stat(join(root, toWorkspaceName(sessionKey))).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

/** What every sandbox of the provider shares besides the host profile. */
interface SharedSettings {
  readonly config: LocalSandboxConfig;
  readonly logger: Logger;
  readonly preview: PreviewSettings;
  /** The sandbox's memory limit, reported when the kernel kills a process of it for want of memory. */
  readonly memoryLimitBytes: number;
  readonly maxOutputBytes: number;
  readonly clock: Clock;
}

/** Opens the workspace of `sessionKey` (made when new) and the sandbox over it. */
async function openSandbox(
  found: HostProfile,
  shared: SharedSettings,
  sessionKey: string,
  resumed: boolean,
): Promise<Sandbox> {
  const { config, logger } = shared;
  const opened = async () => {
    const workspace = await createWorkspace({
      root: config.root,
      sessionKey,
      virtualHome: found.launch.isolation === 'bwrap',
      sandboxUser: found.sandboxUsers,
      diskBytes: found.disks.limitBytes,
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
    const message = `Could not create the sandbox workspace under LOCAL_SANDBOX_ROOT (${config.root}).`;
    throw new AppError('sandbox_error', message, { cause: err });
  });
  return new LocalSandbox({
    id,
    workspace,
    launch: found.launch,
    cgroup: found.cgroups?.forSandbox(toWorkspaceName(sessionKey)),
    memoryLimitBytes: shared.memoryLimitBytes,
    preview: shared.preview,
    maxOutputBytes: shared.maxOutputBytes,
    resumed,
    clock: shared.clock,
  });
}
