/**
 * The catalog over E2B's own listing, for an E2B service that lists sandboxes by metadata (E2B's cloud) when no
 * E2B_STATE_DIR is set: what a sandbox is and whose comes from the metadata it was created with (fixed from then
 * on), its state and times from the listing. What metadata cannot say is estimated: a running sandbox was last used
 * a lease before its lease end; a paused one when it paused. Names are claimed optimistically (two instances
 * creating one name at the same moment can make two; every instance then takes the oldest, and the sweep deletes
 * the other once it sleeps). A 2025 session's choice of a named sandbox is kept by this instance only.
 */
import { describeError } from '../../errors';
import type { Logger } from '../../log';
import type { MadeRoom, SandboxCatalog, SandboxSummary } from '../catalog';
import { deleteAtMs, type RetentionPolicy, toMakeRoom } from '../retention';
import { toOwnerTag } from '../sandbox-name';
import type { E2BApiOpts, E2BSdk, FoundSandbox } from './sdk';
import { E2B_METADATA } from './tags';

export interface ListingCatalogOptions {
  sdk: () => Promise<E2BSdk>;
  connection: E2BApiOpts;
  policy: RetentionPolicy;
  /** How long a renewal makes a lease: a running sandbox was last used this long before its lease end. */
  leaseLengthMs: number;
  now: () => number;
  /** The server's name in `mcp_server` metadata: the sweep looks only at this server's sandboxes. */
  serverName: string;
  /** True while this instance has the sandbox open: never deleted from here. */
  isOpenHere(sandboxId: string): boolean;
  logger: Logger;
}

/** The listing catalog, and the sweep that deletes what is past its time. */
export interface ListingCatalog extends SandboxCatalog {
  sweep(): Promise<number>;
}

/** Sessions whose choice of a named sandbox this instance remembers. */
const BINDINGS_KEPT = 10_000;

/** Creates the catalog. */
export function createListingCatalog(options: ListingCatalogOptions): ListingCatalog {
  const { connection, policy, now, logger } = options;
  const bindings = new Map<string, { key: string; name: string; untilMs: number }>();

  const find = async (metadata: Record<string, string>): Promise<FoundSandbox[]> =>
    (await options.sdk()).findByMetadata(metadata, { ...connection, retries: 0 });
  const summarize = (found: FoundSandbox): SandboxSummary => {
    const meta = found.metadata;
    const created = Number(meta[E2B_METADATA.created]);
    const createdMs = Number.isFinite(created) && created > 0 ? created : found.startedAt.getTime();
    const end = found.endAt.getTime();
    const lastUsedMs = Math.max(createdMs, found.state === 'paused' ? end : end - options.leaseLengthMs);
    const until = Number(meta[E2B_METADATA.until]);
    const name = meta[E2B_METADATA.name];
    const key = meta[E2B_METADATA.key];
    const template = meta[E2B_METADATA.template];
    const snapshotId = meta[E2B_METADATA.snapshot];
    return {
      tag: meta[E2B_METADATA.session] ?? found.sandboxId,
      ...(name !== undefined && key !== undefined && { name, key }),
      sandboxId: found.sandboxId,
      ...(template !== undefined && { template }),
      ...(snapshotId !== undefined && { snapshotId }),
      state: found.state === 'paused' ? 'sleeping' : 'running',
      createdMs,
      lastUsedMs,
      deleteAtMs: deleteAtMs(
        { lastUsedMs, ...(name === undefined && Number.isFinite(until) && until > 0 && { reachableUntilMs: until }) },
        policy.retentionMs,
      ),
    };
  };
  /** Kills a sandbox by id (a paused one is not resumed for it) and deletes the snapshot a fork was made from. */
  const destroy = async (sandboxId: string, snapshotId: string | undefined): Promise<void> => {
    const sdk = await options.sdk();
    await sdk.kill(sandboxId, connection);
    if (snapshotId !== undefined) await sdk.deleteSnapshot(snapshotId, connection).catch(() => undefined);
  };
  const list = async (principal: string): Promise<SandboxSummary[]> =>
    (await find({ [E2B_METADATA.owner]: toOwnerTag(principal) }))
      .map(summarize)
      .sort((a, b) => b.lastUsedMs - a.lastUsedMs);
  const findNamed = async (principal: string, name: string): Promise<SandboxSummary | undefined> => {
    const found = await find({ [E2B_METADATA.owner]: toOwnerTag(principal), [E2B_METADATA.name]: name });
    // Two made at one moment: every instance takes the oldest.
    const [oldest] = found.sort(
      (a, b) => a.startedAt.getTime() - b.startedAt.getTime() || (a.sandboxId < b.sandboxId ? -1 : 1),
    );
    return oldest === undefined ? undefined : summarize(oldest);
  };

  return {
    source: 'listing',
    list,
    findNamed,
    claimName: async (principal, name) => (await findNamed(principal, name)) === undefined,
    releaseName: async () => undefined,
    async delete(_principal, sandbox) {
      if (sandbox.sandboxId !== undefined) await destroy(sandbox.sandboxId, sandbox.snapshotId);
    },
    async makeRoom(principal, adding): Promise<MadeRoom | undefined> {
      const kept = await list(principal);
      const reserve = adding + kept.filter((s) => s.state === 'running').length;
      const { deleted, setting } = toMakeRoom(kept, policy, reserve);
      if (setting === undefined) return undefined;
      for (const sandbox of deleted)
        if (sandbox.sandboxId !== undefined) await destroy(sandbox.sandboxId, sandbox.snapshotId);
      logger.info('sleeping sandboxes deleted for room', { count: deleted.length, limit: setting });
      return { deleted, setting };
    },
    async bindSession(_principal, sessionKey, binding) {
      bindings.delete(sessionKey);
      bindings.set(sessionKey, binding);
      if (bindings.size > BINDINGS_KEPT) bindings.delete(bindings.keys().next().value as string);
    },
    async boundSession(_principal, sessionKey) {
      const binding = bindings.get(sessionKey);
      if (binding === undefined || binding.untilMs <= now()) return undefined;
      return { key: binding.key, name: binding.name };
    },
    unbindSession: async (_principal, sessionKey) => void bindings.delete(sessionKey),
    async sweep() {
      const nowMs = now();
      const all = await find({ [E2B_METADATA.server]: options.serverName });
      const oldestByName = new Map<string, FoundSandbox>();
      for (const found of [...all].sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime())) {
        const name = found.metadata[E2B_METADATA.name];
        const owner = found.metadata[E2B_METADATA.owner];
        if (name !== undefined && owner !== undefined && !oldestByName.has(`${owner}/${name}`))
          oldestByName.set(`${owner}/${name}`, found);
      }
      let deleted = 0;
      for (const found of all) {
        if (found.state !== 'paused' || options.isOpenHere(found.sandboxId)) continue;
        const name = found.metadata[E2B_METADATA.name];
        const owner = found.metadata[E2B_METADATA.owner];
        const duplicate = name !== undefined && oldestByName.get(`${owner}/${name}`) !== found;
        if (!duplicate && summarize(found).deleteAtMs > nowMs) continue;
        try {
          await destroy(found.sandboxId, found.metadata[E2B_METADATA.snapshot]);
          deleted += 1;
        } catch (err: unknown) {
          logger.warn('sandbox past its retention not deleted', { backend: 'e2b', error: describeError(err) });
        }
      }
      if (deleted > 0) logger.info('sandboxes past their retention deleted', { backend: 'e2b', count: deleted });
      return deleted;
    },
  };
}
