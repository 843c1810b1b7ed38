/**
 * Sandbox records: what outlives the instance that made a sandbox, in a directory every instance shares
 * (LOCAL_SANDBOX_ROOT, or E2B_STATE_DIR on E2B): whose the sandbox is, its name, its backend id, when it was made
 * and last used, whether it sleeps and what survived, and how long an id or handle can still reach it. The
 * sandbox table is a cache; these files, the workspaces and E2B's own records are the truth.
 *
 * Layout, under `<root>/.sandboxes/` (the server's own, mode 0700; no sandbox sees it):
 * - `<owner tag>/<sandbox tag>.json`: one record, written whole (aside, then renamed into place);
 * - `<owner tag>/names/<name tag>`: the sandbox tag that holds a name, claimed by `link` (one winner, also on NFS);
 * - `<owner tag>/bound/<session tag>.json`: the named sandbox a 2025 session works in (open_sandbox).
 * Tags are hashes (sandbox-name.ts): a listing of the directory reveals no key, name or credential. A record keeps
 * the key itself only for a named sandbox, whose handles must be signed again from it.
 *
 * Every file is read with a size limit and checked field by field: a damaged one reads as absent.
 */
import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

import { jsonObjectOf } from './bounded-lines';
import { ignoreMissing, linkNew, readSmall, writeWhole } from './record-files';
import { hashTag } from '../hash-tag';

/** A process a sandbox ran when it went to sleep (stopped then, on the local backend). */
export interface StoppedProcess {
  readonly id: string;
  readonly command: string;
}

/** What a sandbox's sleep kept. */
export interface SleepState {
  /** When it went to sleep, in ms since the epoch. */
  readonly sinceMs: number;
  /** Its memory was kept (E2B's pause with memory): processes and interpreter state survive. */
  readonly memory: boolean;
  /** Background processes that were stopped (without memory). */
  readonly stopped: readonly StoppedProcess[];
}

/** One sandbox, as every instance finds it. */
export interface SandboxRecord {
  /** The sandbox tag (toSandboxTag of its key). */
  readonly tag: string;
  /** The owner tag (toOwnerTag of its credential's principal). */
  readonly owner: string;
  /** Named sandboxes: the name, and the key their handles are signed for. */
  readonly name?: string;
  readonly key?: string;
  /** The backend's id of the sandbox (`local-…`, E2B's sandbox id). */
  readonly sandboxId?: string;
  /** E2B: the template it was made from. */
  readonly template?: string;
  /** E2B: the snapshot a fork was made from, deleted with it. */
  readonly snapshotId?: string;
  readonly createdMs: number;
  readonly lastUsedMs: number;
  /** Set while it sleeps. */
  readonly sleep?: SleepState;
  /**
   * An unnamed sandbox: when the last session id or handle that can name it expires (its issue time plus
   * MCP_SESSION_MAX_AGE_S), and a tag of the secret that signed it: an id signed with another secret can never reach
   * it.
   */
  readonly reachableUntilMs?: number;
  readonly secretTag?: string;
}

/** A 2025 session's choice of a named sandbox (open_sandbox), kept until the session's id expires. */
export interface SessionBinding {
  readonly key: string;
  readonly name: string;
  readonly untilMs: number;
}

/** The records under one root. */
export interface RecordStore {
  get(owner: string, tag: string): Promise<SandboxRecord | undefined>;
  /** Writes a record whole. */
  put(record: SandboxRecord): Promise<void>;
  /** Changes a record (read, changed, written); `undefined` when there is none. */
  update(
    owner: string,
    tag: string,
    change: (record: SandboxRecord) => SandboxRecord,
  ): Promise<SandboxRecord | undefined>;
  /** Deletes a record and lets go of its name. */
  remove(record: Pick<SandboxRecord, 'owner' | 'tag' | 'name'>): Promise<void>;
  /** The records of one owner (at most MAX_RECORDS_PER_OWNER, the most recently written first). */
  list(owner: string): Promise<SandboxRecord[]>;
  /** Every owner with records. */
  owners(): Promise<string[]>;
  /** The tags of every record, of every owner. */
  tags(): Promise<Set<string>>;
  /** Claims `name` for sandbox `tag`: the tag that holds it afterwards (another, when it was taken). */
  claimName(owner: string, name: string, tag: string): Promise<string>;
  /** The tag that holds `name`, if any. */
  nameHolder(owner: string, name: string): Promise<string | undefined>;
  /** Lets go of `name` if `tag` holds it. */
  releaseName(owner: string, name: string, tag: string): Promise<void>;
  bind(owner: string, sessionTag: string, binding: SessionBinding): Promise<void>;
  bound(owner: string, sessionTag: string, nowMs: number): Promise<SessionBinding | undefined>;
  unbind(owner: string, sessionTag: string): Promise<void>;
  /** Deletes bindings past their time, and those naming `key` (its sandbox was deleted). */
  sweepBindings(owner: string, nowMs: number, deletedKey?: string): Promise<void>;
}

/** The directory of the records under a root. */
export const RECORDS_DIR = '.sandboxes';
/** The most of one file read: a record is well under 2 KiB. */
const MAX_FILE_BYTES = 16 * 1024;
/** The most records one owner's listing reads. */
export const MAX_RECORDS_PER_OWNER = 1000;
/** A name claim whose record never appeared is taken over after this (a create that died half-way). */
const STALE_CLAIM_MS = 10 * 60_000;
const TAG = /^[0-9a-f]{24,32}$/;
const NAME_TAG_CHARS = 32;

/** Creates the store of `root`; nothing is read or written until asked. */
export function createRecordStore(root: string): RecordStore {
  const base = join(root, RECORDS_DIR);
  const ownerDir = (owner: string): string => join(base, checkedTag(owner));
  const recordPath = (owner: string, tag: string): string => join(ownerDir(owner), `${checkedTag(tag)}.json`);
  const namePath = (owner: string, name: string): string =>
    join(ownerDir(owner), 'names', hashTag(`mcp-sandbox-name:${name}`, NAME_TAG_CHARS));
  const boundPath = (owner: string, sessionTag: string): string =>
    join(ownerDir(owner), 'bound', `${checkedTag(sessionTag)}.json`);

  const get = async (owner: string, tag: string): Promise<SandboxRecord | undefined> =>
    toRecord(await readSmall(recordPath(owner, tag), MAX_FILE_BYTES), owner, tag);
  const put = async (record: SandboxRecord): Promise<void> => {
    await writeWhole(recordPath(record.owner, record.tag), JSON.stringify(bounded(record)));
  };
  const nameHolder = async (owner: string, name: string): Promise<string | undefined> => {
    const text = (await readSmall(namePath(owner, name), MAX_FILE_BYTES))?.trim();
    return text !== undefined && TAG.test(text) ? text : undefined;
  };

  return {
    get,
    put,
    async update(owner, tag, change) {
      const record = await get(owner, tag);
      if (record === undefined) return undefined;
      const changed = change(record);
      await put(changed);
      return changed;
    },
    async remove({ owner, tag, name }) {
      await unlink(recordPath(owner, tag)).catch(ignoreMissing);
      if (name !== undefined && (await nameHolder(owner, name)) === tag)
        await unlink(namePath(owner, name)).catch(ignoreMissing);
    },
    async list(owner) {
      const dir = ownerDir(owner);
      const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => /^[0-9a-f]{32}\.json$/.test(n));
      const records: SandboxRecord[] = [];
      for (const file of names.slice(0, MAX_RECORDS_PER_OWNER)) {
        const record = await get(owner, file.slice(0, -'.json'.length));
        if (record !== undefined) records.push(record);
      }
      return records.sort((a, b) => b.lastUsedMs - a.lastUsedMs);
    },
    async owners() {
      return (await readdir(base).catch(() => [] as string[])).filter((name) => TAG.test(name));
    },
    async tags() {
      const tags = new Set<string>();
      for (const owner of (await readdir(base).catch(() => [] as string[])).filter((name) => TAG.test(name))) {
        for (const file of await readdir(join(base, owner)).catch(() => [] as string[]))
          if (/^[0-9a-f]{32}\.json$/.test(file)) tags.add(file.slice(0, 32));
      }
      return tags;
    },
    async claimName(owner, name, tag) {
      const path = namePath(owner, name);
      await mkdir(join(ownerDir(owner), 'names'), { recursive: true, mode: 0o700 });
      for (let attempt = 0; attempt < 2; attempt += 1) {
        if (await linkNew(path, `${checkedTag(tag)}\n`)) return tag;
        const holder = await nameHolder(owner, name);
        if (holder !== undefined && (holder === tag || (await get(owner, holder)) !== undefined)) return holder;
        // A claim whose record is missing: a create still under way (its record comes soon), or one that died.
        const since = (await stat(path).catch(() => undefined))?.mtimeMs;
        if (holder !== undefined && since !== undefined && Date.now() - since < STALE_CLAIM_MS) return holder;
        await unlink(path).catch(ignoreMissing);
      }
      throw new Error(`the name claim ${path} could not be taken`);
    },
    nameHolder,
    async releaseName(owner, name, tag) {
      if ((await nameHolder(owner, name)) === tag) await unlink(namePath(owner, name)).catch(ignoreMissing);
    },
    async bind(owner, sessionTag, binding) {
      await writeWhole(boundPath(owner, sessionTag), JSON.stringify(binding));
    },
    async bound(owner, sessionTag, nowMs) {
      const binding = toBinding(await readSmall(boundPath(owner, sessionTag), MAX_FILE_BYTES));
      return binding !== undefined && binding.untilMs > nowMs ? binding : undefined;
    },
    async unbind(owner, sessionTag) {
      await unlink(boundPath(owner, sessionTag)).catch(ignoreMissing);
    },
    async sweepBindings(owner, nowMs, deletedKey) {
      const dir = join(ownerDir(owner), 'bound');
      for (const file of await readdir(dir).catch(() => [] as string[])) {
        const binding = toBinding(await readSmall(join(dir, file), MAX_FILE_BYTES));
        if (binding === undefined || binding.untilMs <= nowMs || binding.key === deletedKey)
          await unlink(join(dir, file)).catch(ignoreMissing);
      }
    },
  };
}

/** The most stopped processes a record names, and the most of each command it keeps. */
const MAX_STOPPED = 20;
const MAX_COMMAND_CHARS = 200;

/** A record within the size a reader accepts: a sandbox's commands can be long. */
function bounded(record: SandboxRecord): SandboxRecord {
  if (record.sleep === undefined) return record;
  const stopped = record.sleep.stopped
    .slice(0, MAX_STOPPED)
    .map(({ id, command }) => ({ id: id.slice(0, 32), command: command.slice(0, MAX_COMMAND_CHARS) }));
  return { ...record, sleep: { ...record.sleep, stopped } };
}

/** A tag from a caller: hex only, so that it can never lead out of the store's directory. */
function checkedTag(tag: string): string {
  if (!TAG.test(tag)) throw new Error(`not a sandbox or owner tag: ${JSON.stringify(tag.slice(0, 40))}`);
  return tag;
}

const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
const optionalString = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;

/** A record read from its file, checked field by field (the file must be the owner's and the tag's). */
function toRecord(text: string | undefined, owner: string, tag: string): SandboxRecord | undefined {
  const value = text === undefined ? undefined : jsonObjectOf(text);
  if (value === undefined || value.tag !== tag || value.owner !== owner) return undefined;
  if (!isTime(value.createdMs) || !isTime(value.lastUsedMs)) return undefined;
  const name = optionalString(value.name, 63);
  const key = optionalString(value.key, 64);
  if ((name === undefined) !== (key === undefined)) return undefined;
  return {
    tag,
    owner,
    ...(name !== undefined && key !== undefined && { name, key }),
    ...withString('sandboxId', optionalString(value.sandboxId, 128)),
    ...withString('template', optionalString(value.template, 256)),
    ...withString('snapshotId', optionalString(value.snapshotId, 256)),
    ...withString('secretTag', optionalString(value.secretTag, 64)),
    createdMs: value.createdMs,
    lastUsedMs: value.lastUsedMs,
    ...(isTime(value.reachableUntilMs) && { reachableUntilMs: value.reachableUntilMs }),
    ...withSleep(toSleep(value.sleep)),
  };
}

function withString<K extends string>(field: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [field]: value }) as { [P in K]?: string };
}

function withSleep(sleep: SleepState | undefined): { sleep?: SleepState } {
  return sleep === undefined ? {} : { sleep };
}

function toSleep(value: unknown): SleepState | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { sinceMs, memory, stopped } = value as Record<string, unknown>;
  if (!isTime(sinceMs) || typeof memory !== 'boolean' || !Array.isArray(stopped)) return undefined;
  const processes = stopped.flatMap((item: unknown): StoppedProcess[] => {
    if (typeof item !== 'object' || item === null) return [];
    const { id, command } = item as Record<string, unknown>;
    return typeof id === 'string' && typeof command === 'string' ? [{ id, command }] : [];
  });
  return { sinceMs, memory, stopped: processes };
}

function toBinding(text: string | undefined): SessionBinding | undefined {
  const value = text === undefined ? undefined : jsonObjectOf(text);
  if (value === undefined) return undefined;
  const key = optionalString(value.key, 64);
  const name = optionalString(value.name, 63);
  return key !== undefined && name !== undefined && isTime(value.untilMs)
    ? { key, name, untilMs: value.untilMs }
    : undefined;
}
