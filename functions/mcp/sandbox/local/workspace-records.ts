/**
 * A local sandbox's record (sandbox/records.ts), beside its workspace under LOCAL_SANDBOX_ROOT: written when the
 * sandbox is made, when its workspace is opened again (it wakes), and when it falls asleep (with what its sleep
 * stopped, and its last use, which only its `last-used` marker followed meanwhile); gone when it is destroyed, except
 * a named sandbox's, which stays for the sandbox made in its place (a reset).
 */
import type { RecordStore, SandboxRecord, SleepState } from '../records';
import { toOwnerTag, toSandboxTag } from '../sandbox-name';
import type { SandboxOwner } from '../types';
import { lastUsedMs } from './workspace-sweep';

/** The hooks a sandbox's life calls. */
export interface WorkspaceRecords {
  created(sandboxId: string): Promise<void>;
  reopened(sandboxId: string): Promise<void>;
  /** It fell asleep; `lastUsedMs`: its last use here, if it had one. */
  onSleep(state: SleepState, lastUsedMs: number | undefined): Promise<void>;
  onKill(): Promise<void>;
}

export interface WorkspaceRecordsOptions {
  store: RecordStore;
  owner: SandboxOwner;
  now: () => number;
  /** A tag of MCP_SESSION_SECRET, kept in an unnamed sandbox's record. */
  secretTag: string;
  /** The workspace directory (its `last-used` marker dates the last use). */
  dir: string;
  /** Runs once it sleeps: the owner's caps on sleeping sandboxes. */
  afterSleep: () => Promise<unknown>;
}

/** The record hooks of `owner`'s sandbox. */
export function createWorkspaceRecords({
  store,
  owner,
  now,
  secretTag,
  dir,
  afterSleep,
}: WorkspaceRecordsOptions): WorkspaceRecords {
  const ownerTag = toOwnerTag(owner.principal);
  const tag = toSandboxTag(owner.sessionKey);
  const write = (change: (record: SandboxRecord | undefined) => SandboxRecord): Promise<void> =>
    store.get(ownerTag, tag).then((record) => store.put(change(record)));
  const fresh = (sandboxId: string, record: SandboxRecord | undefined): SandboxRecord => {
    const nowMs = now();
    return {
      tag,
      owner: ownerTag,
      sandboxId,
      // A workspace opened again under another id (made anew by a reset) is a new sandbox.
      createdMs: record?.createdMs !== undefined && record.sandboxId === sandboxId ? record.createdMs : nowMs,
      lastUsedMs: nowMs,
      ...(owner.name !== undefined
        ? { name: owner.name, key: owner.sessionKey }
        : { ...(owner.reachableUntilMs !== undefined && { reachableUntilMs: owner.reachableUntilMs }), secretTag }),
    };
  };
  return {
    created: (sandboxId) => write((record) => fresh(sandboxId, record)),
    // A workspace of an earlier version gets its record when it is first opened again.
    reopened: (sandboxId) =>
      write((record) => {
        const { sleep: _slept, ...awake } = record ?? fresh(sandboxId, undefined);
        return { ...awake, sandboxId, lastUsedMs: now() };
      }),
    async onSleep(state, usedHereMs) {
      // Its last use is what every call touches (this instance's own last touch, else its `last-used` marker, or its
      // image's time once unmounted): the record did not follow it.
      const marker = usedHereMs === undefined ? await lastUsedMs(dir).catch(() => undefined) : undefined;
      const used = Math.min(usedHereMs ?? marker ?? 0, state.sinceMs);
      await write((record) => {
        const current = record ?? fresh('unknown', undefined);
        return { ...current, lastUsedMs: Math.max(current.lastUsedMs, used), sleep: state };
      });
      // What sleeps counts against its owner's caps: past them, its least recently used sleeping sandboxes go.
      await afterSleep().catch(() => undefined);
    },
    async onKill() {
      if (owner.name === undefined) await store.remove({ owner: ownerTag, tag });
    },
  };
}
