/**
 * The catalog over sandbox records (records.ts) that both backends use when they keep records: the local backend
 * under LOCAL_SANDBOX_ROOT, the E2B backend under E2B_STATE_DIR. What differs between them comes in as functions:
 * how a record's sandbox is seen now (running or asleep, its disk) and how it is destroyed.
 */
import { describeError } from '../errors';
import type { Logger } from '../log';
import type { MadeRoom, SandboxCatalog, SandboxSummary } from './catalog';
import type { RecordStore, SandboxRecord } from './records';
import { deleteAtMs, isPastRetention, type RetentionPolicy, toMakeRoom } from './retention';
import { toOwnerTag, toSandboxTag } from './sandbox-name';

export interface RecordCatalogOptions {
  store: RecordStore;
  policy: RetentionPolicy;
  /** Milliseconds since the epoch on the server's clock. */
  now: () => number;
  /** A tag of MCP_SESSION_SECRET: an unnamed sandbox signed with another can never be reached. */
  secretTag: string;
  /** Whether the record's sandbox runs now (here or on another instance) or sleeps. */
  stateOf(record: SandboxRecord, nowMs: number): Promise<'running' | 'sleeping'>;
  /** Bytes its files take, where known. */
  diskBytesOf?(record: SandboxRecord): Promise<number | undefined>;
  /** When a running sandbox was last used, where its record is not kept up to date while it runs. */
  lastUsedOf?(record: SandboxRecord): Promise<number | undefined>;
  /** Destroys the record's sandbox (asleep, or running on another instance); the catalog then forgets it. */
  destroy(record: SandboxRecord): Promise<void>;
  /** True while this instance has the sandbox of `tag` open: never deleted from here. */
  isOpenHere(tag: string): boolean;
  logger: Logger;
}

/** The record catalog, and the sweep that deletes what is past its time. */
export interface RecordCatalog extends SandboxCatalog {
  /** Deletes every owner's sleeping sandboxes past their retention (or that nothing can name any more). */
  sweep(): Promise<number>;
  /** The summary of one record, as list shows it. */
  summarize(record: SandboxRecord): Promise<SandboxSummary>;
}

/** Creates the catalog. */
export function createRecordCatalog(options: RecordCatalogOptions): RecordCatalog {
  const { store, policy, now, logger } = options;

  /** An unnamed sandbox another secret signed can be reached by no id this server can verify. */
  const reachableUntil = (record: SandboxRecord): number | undefined =>
    record.name === undefined && record.secretTag !== undefined && record.secretTag !== options.secretTag
      ? record.lastUsedMs
      : record.reachableUntilMs;
  const summarize = async (record: SandboxRecord): Promise<SandboxSummary> => {
    const [state, diskBytes] = await Promise.all([
      options.stateOf(record, now()),
      options.diskBytesOf?.(record).catch(() => undefined),
    ]);
    const until = reachableUntil(record);
    const usedWhileRunning =
      state === 'running' ? await options.lastUsedOf?.(record).catch(() => undefined) : undefined;
    const lastUsedMs = Math.max(record.lastUsedMs, usedWhileRunning ?? -Infinity);
    return {
      tag: record.tag,
      ...(record.name !== undefined && record.key !== undefined && { name: record.name, key: record.key }),
      ...(record.sandboxId !== undefined && { sandboxId: record.sandboxId }),
      ...(record.template !== undefined && { template: record.template }),
      ...(record.snapshotId !== undefined && { snapshotId: record.snapshotId }),
      state,
      createdMs: record.createdMs,
      lastUsedMs,
      ...(diskBytes !== undefined && { diskBytes }),
      deleteAtMs: deleteAtMs(
        { lastUsedMs, ...(until !== undefined && { reachableUntilMs: until }) },
        policy.retentionMs,
      ),
    };
  };
  const destroy = async (record: SandboxRecord): Promise<void> => {
    await options.destroy(record);
    await store.remove(record);
  };
  const list = async (principal: string): Promise<SandboxSummary[]> =>
    Promise.all((await store.list(toOwnerTag(principal))).map(summarize));

  return {
    source: 'records',
    summarize,
    list,
    async findNamed(principal, name) {
      const owner = toOwnerTag(principal);
      const tag = await store.nameHolder(owner, name);
      const record = tag === undefined ? undefined : await store.get(owner, tag);
      return record?.name === name ? summarize(record) : undefined;
    },
    async claimName(principal, name, key) {
      const owner = toOwnerTag(principal);
      const tag = toSandboxTag(key);
      if ((await store.claimName(owner, name, tag)) !== tag) return false;
      // Found by name at once, while its sandbox is being made: a second opener waits for that one, not a new one.
      if ((await store.get(owner, tag)) === undefined)
        await store.put({ tag, owner, name, key, createdMs: now(), lastUsedMs: now() });
      return true;
    },
    async releaseName(principal, name, key) {
      const owner = toOwnerTag(principal);
      const tag = toSandboxTag(key);
      const record = await store.get(owner, tag);
      // A claim whose sandbox was never made leaves nothing: its record was only the claim's.
      if (record !== undefined && record.sandboxId === undefined) await store.remove(record);
      else await store.releaseName(owner, name, tag);
    },
    async delete(principal, sandbox) {
      const owner = toOwnerTag(principal);
      const record = await store.get(owner, sandbox.tag);
      if (record !== undefined) await destroy(record);
      if (sandbox.key !== undefined) await store.sweepBindings(owner, now(), sandbox.key);
    },
    async makeRoom(principal, adding): Promise<MadeRoom | undefined> {
      const owner = toOwnerTag(principal);
      const records = new Map((await store.list(owner)).map((r) => [r.tag, r]));
      const kept = await list(principal);
      // What runs now will sleep too.
      const reserve = adding + kept.filter((s) => s.state === 'running').length;
      const { deleted, setting } = toMakeRoom(kept, policy, reserve);
      if (setting === undefined) return undefined;
      for (const sandbox of deleted) {
        const record = records.get(sandbox.tag);
        if (record !== undefined) await destroy(record);
      }
      logger.info('sleeping sandboxes deleted for room', { count: deleted.length, limit: setting });
      return { deleted, setting };
    },
    bindSession: (principal, sessionKey, binding) =>
      store.bind(toOwnerTag(principal), toSandboxTag(sessionKey), binding),
    async boundSession(principal, sessionKey) {
      const binding = await store.bound(toOwnerTag(principal), toSandboxTag(sessionKey), now());
      return binding === undefined ? undefined : { key: binding.key, name: binding.name };
    },
    unbindSession: (principal, sessionKey) => store.unbind(toOwnerTag(principal), toSandboxTag(sessionKey)),
    async sweep() {
      let deleted = 0;
      const nowMs = now();
      for (const owner of await store.owners()) {
        for (const record of await store.list(owner)) {
          if (options.isOpenHere(record.tag)) continue;
          const until = reachableUntil(record);
          const timing = { lastUsedMs: record.lastUsedMs, ...(until !== undefined && { reachableUntilMs: until }) };
          if (!isPastRetention(timing, policy.retentionMs, nowMs)) continue;
          if ((await options.stateOf(record, nowMs)) !== 'sleeping') continue;
          try {
            await destroy(record);
            deleted += 1;
          } catch (err: unknown) {
            logger.warn('sandbox past its retention not deleted', { error: describeError(err) });
          }
        }
        await store.sweepBindings(owner, nowMs).catch(() => undefined);
      }
      if (deleted > 0) logger.info('sandboxes past their retention deleted', { count: deleted });
      return deleted;
    },
  };
}
