/**
 * The local backend: workspaces under LOCAL_SANDBOX_ROOT, isolated with bubblewrap where it works. Each workspace
 * has a sandbox record beside the others (sandbox/records.ts): idle, a sandbox sleeps (its processes stopped, its
 * files kept) and wakes on its next use, here or on any instance sharing the root, until its retention ends.
 */
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';

import { type Clock, SYSTEM_CLOCK } from '../../clock';
import { isLoopbackHost, type LocalSandboxConfig } from '../../config';
import { type EgressConfig, policyFor, secretsFor } from '../../egress/egress-config';
import { type EgressPolicy, NO_EGRESS } from '../../egress/policy';
import { createEgressProxy, type EgressProxy } from '../../egress/proxy';
import { createNameResolver } from '../../egress/resolver';
import type { SandboxSecret } from '../../egress/secrets';
import { AppError } from '../../errors';
import type { Logger } from '../../log';
import { SingleFlight } from '../../single-flight';
import { createRecordCatalog } from '../record-catalog';
import { createRecordStore, type SleepState } from '../records';
import type { RetentionPolicy } from '../retention';
import { toOwnerTag, toSandboxTag } from '../sandbox-name';
import { createTombstoneStore } from '../tombstones';
import type { BackendStatus, CreateOptions, Sandbox, SandboxOwner, SandboxProvider } from '../types';
import { type HostProfile, hostProbeInput, probeHostProfile, probingLimits } from './host-profile';
import { findHostTools } from './host-tools';
import { DEFAULT_PROCESS_LIMITS, type HostTools, type ProcessLimits } from './launch';
import { LocalSandbox, type PreviewSettings } from './local-sandbox';
import { createPreviewSigner } from './preview-token';
import { workspaceSandboxId } from './sandbox-id';
import { toDuplex } from './stream-duplex';
import type { SandboxEgress } from './sandbox-egress';
import { copyWorkspace } from './workspace-copy';
import { imageOf } from './workspace-disk';
import { createWorkspaceRecords, type WorkspaceRecords } from './workspace-records';
import { createWorkspaceJanitor, lastUsedMs, removeAbandonedWorkspace, type WorkspaceJanitor } from './workspace-sweep';
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
  /** How long sleeping sandboxes are kept, and how many per credential. @default DEFAULT_RETENTION */
  retention?: RetentionPolicy;
  /**
   * A tag of MCP_SESSION_SECRET, kept in the records of unnamed sandboxes: one signed with another secret can never be
   * reached. @default one of its own (no other process reaches this one's unnamed sandboxes)
   */
  secretTag?: string;
  /** What sandboxes may reach, by owner (MCP_SANDBOX_EGRESS and the rest). @default nothing */
  egress?: EgressConfig;
}

/** Retention when none is given (config.ts sets it from MCP_SANDBOX_RETENTION_S and the caps). */
export const DEFAULT_RETENTION: RetentionPolicy = { retentionMs: 7 * 24 * 3_600_000, maxSleeping: 10 };

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
  retention = DEFAULT_RETENTION,
  secretTag = randomBytes(8).toString('hex'),
  egress,
}: LocalProviderOptions): LocalSandboxProvider {
  const now = (): number => clock.now();
  const store = createRecordStore(config.root);
  const dirOf = (tag: string): string => join(config.root, `mcp-sandbox-${tag}`);
  // The janitor knows which workspaces are open here; the catalog asks it (it is made next, with the catalog).
  let janitor: WorkspaceJanitor | undefined;
  const isOpenHere = (tag: string): boolean => janitor?.isOpen(`mcp-sandbox-${tag}`) === true;
  const catalog = createRecordCatalog({
    store,
    policy: retention,
    now,
    secretTag,
    logger,
    isOpenHere,
    stateOf: async (record, nowMs) => {
      if (isOpenHere(record.tag)) return 'running';
      if (record.sleep !== undefined) return 'sleeping';
      // Running on another instance sharing the root, unless that one went away without putting it to sleep.
      const used = await lastUsedMs(dirOf(record.tag)).catch(() => undefined);
      return used !== undefined && nowMs - used <= (staleAfterMs ?? Infinity) ? 'running' : 'sleeping';
    },
    diskBytesOf: async (record) => {
      const image = await stat(imageOf(dirOf(record.tag))).catch(() => undefined);
      return image === undefined ? undefined : image.blocks * 512;
    },
    // A running workspace's record is written when it opens and when it sleeps; its calls date its marker.
    lastUsedOf: (record) => lastUsedMs(dirOf(record.tag)),
    destroy: (record) => removeAbandonedWorkspace(dirOf(record.tag)),
  });
  const workspaces = createWorkspaceJanitor({
    root: config.root,
    staleAfterMs: staleAfterMs ?? Infinity,
    now,
    logger,
    sweepRecords: () => catalog.sweep(),
    recordedTags: () => store.tags(),
  });
  janitor = workspaces;
  const tombstones = createTombstoneStore(config.root, { now });
  const host = hostProbeInput(config, tools, logger, limits);
  const beforeProbe = probingLimits(host);
  const shared: SharedSettings = {
    config,
    logger,
    preview: previewSettings(config, previewSecret, previewTtlMs),
    memoryLimitBytes: host.settings.memoryBytes,
    maxOutputBytes,
    clock,
    ...(egress === undefined
      ? {}
      : {
          egress: {
            config: egress,
            proxy: createEgressProxy({ resolver: createNameResolver(egress.resolvers), logger }),
          },
        }),
  };
  /** The host profile: probed once, on the first `ready()` (again on the next, if that probe failed). */
  const profile = new SingleFlight<HostProfile>();
  const probe = (): Promise<HostProfile> =>
    profile.get(async () => {
      const found = await probeHostProfile(host);
      // Leftovers of earlier processes that no session can come back for.
      workspaces.maybeSweep();
      return found;
    });
  /** Opens the sandbox of `owner` over its workspace (made when new, copied when `forked`). */
  const open = async (owner: SandboxOwner, how: OpenHow): Promise<Sandbox> => {
    const found = await probe();
    if (found.refusal !== undefined) throw new AppError('sandbox_error', found.refusal);
    const name = toWorkspaceName(owner.sessionKey);
    const hooks = createWorkspaceRecords({
      store,
      owner,
      now,
      secretTag,
      dir: dirOf(toSandboxTag(owner.sessionKey)),
      afterSleep: () => catalog.makeRoom(owner.principal, 0),
    });
    const make = () => openSandbox(found, shared, owner, { ...how, onSleep: hooks.onSleep, onKill: hooks.onKill });
    const sandbox = await workspaces.track(name, make);
    await (how.resumed ? hooks.reopened(sandbox.id) : hooks.created(sandbox.id));
    return sandbox;
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
    sleepMode: () => 'files',
    catalog,
    async create(owner: SandboxOwner, options: CreateOptions = {}) {
      if (options.template !== undefined) {
        throw new AppError(
          'invalid_input',
          `The local sandbox backend has no templates (template "${options.template}"): every sandbox runs the ` +
            `host's programs. Leave template out.`,
        );
      }
      workspaces.maybeSweep();
      const from = options.from;
      if (from !== undefined) await copyWorkspace(dirOf(from.tag), dirOf(toSandboxTag(owner.sessionKey)));
      return open(owner, { resumed: false, forked: from !== undefined });
    },
    async attach(owner: SandboxOwner) {
      const record = await store.get(toOwnerTag(owner.principal), toSandboxTag(owner.sessionKey));
      const there = await workspaceToAttach(config.root, owner.sessionKey, workspaces, record === undefined);
      if (!there) {
        // Its workspace went (deleted by hand, or with the root): the record goes too, but a name stays claimed.
        if (record !== undefined && record.name === undefined) await store.remove(record);
        return undefined;
      }
      return open(owner, { resumed: true, ...(record?.sleep !== undefined && { woke: record.sleep }) });
    },
    recordEnded: ({ sessionKey }, untilMs) => tombstones.record(toWorkspaceName(sessionKey), untilMs),
    hasEnded: ({ sessionKey }, nowMs) => tombstones.has(toWorkspaceName(sessionKey), nowMs),
  };
}

/** How a workspace is opened: made or re-opened (`resumed`), and for a fork made from a copy. */
interface OpenHow {
  readonly resumed: boolean;
  readonly forked?: boolean;
  /** What its sleep kept, when it was asleep. */
  readonly woke?: SleepState;
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
async function workspaceToAttach(root: string, sessionKey: string, janitor: WorkspaceJanitor, legacy: boolean) {
  janitor.maybeSweep();
  // A workspace of an earlier version (no record) unused past the idle TTL: its session has ended everywhere, and
  // a session that comes back starts afresh. One with a record sleeps until its retention ends.
  if (legacy && (await janitor.removeIfStale(toWorkspaceName(sessionKey)))) return false;
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
  /** The egress settings and the proxy every sandbox's outbound connections go through. */
  readonly egress?: { readonly config: EgressConfig; readonly proxy: EgressProxy };
}

/** Opens the workspace of `sessionKey` (made when new) and the sandbox over it. */
async function openSandbox(
  found: HostProfile,
  shared: SharedSettings,
  owner: SandboxOwner,
  { resumed, forked, woke, onSleep, onKill }: OpenHow & Pick<WorkspaceRecords, 'onSleep' | 'onKill'>,
): Promise<Sandbox> {
  const { config, logger } = shared;
  const { sessionKey } = owner;
  const policy = shared.egress === undefined ? NO_EGRESS : policyFor(shared.egress.config, owner.principal);
  if (policy.mode !== 'none' && (found.launch.isolation !== 'bwrap' || found.launch.allowNetwork)) {
    throw new AppError(
      'sandbox_error',
      'MCP_SANDBOX_EGRESS needs sandboxes with a network of their own (bubblewrap, LOCAL_SANDBOX_NETWORK off), and ' +
        `this host runs them with isolation ${found.launch.isolation}: nothing was started.`,
    );
  }
  const opened = async () => {
    const workspace = await createWorkspace({
      root: config.root,
      sessionKey,
      virtualHome: found.launch.isolation === 'bwrap',
      sandboxUser: found.sandboxUsers,
      diskBytes: found.disks.limitBytes,
      logger,
      forked,
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
    ...(woke !== undefined && { woke }),
    ...(policy.mode !== 'none' &&
      shared.egress !== undefined && {
        egress: toEgress(shared.egress.proxy, policy, secretsFor(shared.egress.config, owner.principal), owner),
      }),
    onSleep,
    onKill,
  });
}

/** A sandbox's egress: its policy and secrets, and its connections to the proxy with who they come from. */
function toEgress(proxy: EgressProxy, policy: EgressPolicy, secrets: readonly SandboxSecret[], owner: SandboxOwner) {
  return (sandboxId: string): SandboxEgress => ({
    policy,
    secrets,
    serve: (stream, authority) =>
      proxy.serve(toDuplex(stream), {
        policy,
        principal: owner.principal,
        sandboxId,
        secrets,
        ...(authority === undefined ? {} : { authority }),
      }),
  });
}
