/**
 * The E2B backend's sandbox records, with E2B_STATE_DIR (sandbox/records.ts): made when a sandbox is created, dated
 * when its lease is renewed (so every instance can tell a running sandbox from one E2B paused), marked when it falls
 * asleep, gone when it is destroyed (a named sandbox's stays for the one made in its place). Without E2B_STATE_DIR
 * every write is a no-op and nothing is found.
 */
import type { RecordStore, SandboxRecord, SleepState } from '../records';
import { toOwnerTag, toSandboxTag } from '../sandbox-name';
import type { SandboxOwner } from '../types';

/** The records of one provider's sandboxes. */
export interface E2BRecords {
  get(owner: SandboxOwner): Promise<SandboxRecord | undefined>;
  /** Made (or made anew: another sandbox under the key), with what creation knows. */
  created(owner: SandboxOwner, sandboxId: string, made: { template?: string; snapshotId?: string }): Promise<void>;
  /** Used now (it woke, or its lease was renewed): no longer asleep. */
  used(owner: SandboxOwner, sandboxId: string): Promise<void>;
  asleep(owner: SandboxOwner, sandboxId: string, state: SleepState): Promise<void>;
  /** Destroyed: the record goes, unless the sandbox is named. */
  killed(owner: SandboxOwner): Promise<void>;
}

/** Creates the records over `store` (none: nothing kept). `secretTag` marks unnamed sandboxes' records. */
export function createE2BRecords(store: RecordStore | undefined, now: () => number, secretTag: string): E2BRecords {
  const fresh = (owner: SandboxOwner): SandboxRecord => ({
    tag: toSandboxTag(owner.sessionKey),
    owner: toOwnerTag(owner.principal),
    createdMs: now(),
    lastUsedMs: now(),
    ...(owner.name !== undefined
      ? { name: owner.name, key: owner.sessionKey }
      : { ...(owner.reachableUntilMs !== undefined && { reachableUntilMs: owner.reachableUntilMs }), secretTag }),
  });
  const get = async (owner: SandboxOwner): Promise<SandboxRecord | undefined> =>
    store?.get(toOwnerTag(owner.principal), toSandboxTag(owner.sessionKey));
  /** Writes `owner`'s record, changed from what is there (or a fresh one), awake unless `change` says otherwise. */
  const write = async (owner: SandboxOwner, sandboxId: string, change: (record: SandboxRecord) => SandboxRecord) => {
    if (store === undefined) return;
    const current = await get(owner);
    const { sleep: _asleep, ...awake } = current?.sandboxId === sandboxId ? current : fresh(owner);
    await store.put(change({ ...awake, sandboxId }));
  };
  return {
    get,
    created: (owner, sandboxId, made) =>
      write(owner, sandboxId, (record) => ({
        ...record,
        ...(made.template !== undefined && { template: made.template }),
        ...(made.snapshotId !== undefined && { snapshotId: made.snapshotId }),
      })),
    used: (owner, sandboxId) => write(owner, sandboxId, (record) => ({ ...record, lastUsedMs: now() })),
    asleep: (owner, sandboxId, state) => write(owner, sandboxId, (record) => ({ ...record, sleep: state })),
    async killed(owner) {
      if (store !== undefined && owner.name === undefined)
        await store.remove({ owner: toOwnerTag(owner.principal), tag: toSandboxTag(owner.sessionKey) });
    },
  };
}
