/**
 * The snapshots of the local E2B service (`POST /sandboxes/{id}/snapshots`, `GET /snapshots`,
 * `DELETE /templates/{id}`): on E2B a snapshot is a template of the team's, built from a sandbox, that
 * `Sandbox.create(snapshotId)` starts new sandboxes from. Here a snapshot is a copy of the sandbox's files
 * (`home/user` and `tmp`) under `<root>/snapshots/`; a sandbox made from it starts with a copy of that copy, so it
 * does not depend on the snapshot afterwards. Memory is not modelled for snapshots: a sandbox made from one
 * boots fresh on those files (E2B restores its memory too).
 *
 * Ids are E2B's: without a name, `<templateID>:default` and no names; with `name` (`alias`, `alias:tag`,
 * `<team>/alias[:tag]`), `<team>/<alias>:<tag>` and the name `<team>/<alias>`, and a name that exists already
 * gets the new build (the same template, that tag replaced). The team's namespace is `local`.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** The team's namespace in snapshot names. */
export const TEAM_SLUG = 'local';
const DEFAULT_TAG = 'default';
const ALIAS = /^[a-z0-9][a-z0-9_-]*$/;
const TAG = /^[a-zA-Z0-9][a-zA-Z0-9._-]*$/;

export interface SnapshotRecord {
  /** The snapshot's template (E2B: 20 lower-case letters and digits). */
  readonly templateId: string;
  /** Its alias when it was given a name. */
  readonly alias: string | undefined;
  readonly tag: string;
  /** The sandbox it was taken from. */
  readonly sandboxId: string;
  /** The template that sandbox ran (whether a sandbox made from the snapshot has the interpreter). */
  readonly baseTemplateId: string;
  readonly createdAt: Date;
  /** Its order of creation (newer, greater). */
  readonly seq: number;
  /** Holds `home/user` and `tmp`. */
  readonly dir: string;
}

/** A name or reference the API refuses (400). */
export class SnapshotNameError extends Error {}

function randomId(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(length)].map((b) => alphabet[b % alphabet.length]).join('');
}

/** `identifier[:tag]`, the tag after the last `/`. */
function splitTag(ref: string): { identifier: string; tag: string | undefined } {
  const colon = ref.lastIndexOf(':');
  if (colon <= ref.lastIndexOf('/')) return { identifier: ref, tag: undefined };
  return { identifier: ref.slice(0, colon), tag: ref.slice(colon + 1) };
}

/** The alias a reference names (`alias` or `<team>/alias`), if it names one in the team's namespace. */
function aliasOf(identifier: string): string | undefined {
  const slash = identifier.indexOf('/');
  if (slash < 0) return identifier;
  return identifier.slice(0, slash) === TEAM_SLUG ? identifier.slice(slash + 1) : undefined;
}

export function snapshotIdOf(record: SnapshotRecord): string {
  return `${record.alias === undefined ? record.templateId : `${TEAM_SLUG}/${record.alias}`}:${record.tag}`;
}

export function namesOf(record: SnapshotRecord): string[] {
  return record.alias === undefined ? [] : [`${TEAM_SLUG}/${record.alias}`];
}

/** Copies `from`'s `home/user` and `tmp` into `to` (modes, links, times and special files kept, as `cp -a`). */
export async function copySandboxFiles(from: string, to: string): Promise<void> {
  for (const part of [join('home', 'user'), 'tmp']) {
    await mkdir(join(to, part), { recursive: true });
    await new Promise<void>((resolve, reject) =>
      execFile('cp', ['-a', '--', `${join(from, part)}/.`, join(to, part)], (err, _stdout, stderr) =>
        err === null ? resolve() : reject(new Error(`copying ${part}: ${stderr.trim() || err.message}`)),
      ),
    );
  }
}

export class SnapshotStore {
  private readonly records: SnapshotRecord[] = [];
  /** Templates deleted: creating a sandbox from one answers 404, as for any template that is gone. */
  private readonly deleted = new Set<string>();
  private nextSeq = 0;
  readonly dir: string;

  constructor(root: string) {
    this.dir = join(root, 'snapshots');
  }

  /**
   * Takes a snapshot of sandbox `sandboxId`: `copy` fills the directory it is given. `name` as E2B takes it
   * (SnapshotNameError when it is not one).
   */
  async create(
    source: { sandboxId: string; baseTemplateId: string },
    name: string | undefined,
    copy: (dir: string) => Promise<void>,
  ): Promise<SnapshotRecord> {
    let alias: string | undefined;
    let tag = DEFAULT_TAG;
    if (name !== undefined) {
      const parsed = splitTag(name);
      const slash = parsed.identifier.indexOf('/');
      if (slash >= 0 && parsed.identifier.slice(0, slash) !== TEAM_SLUG)
        throw new SnapshotNameError(
          `namespace '${parsed.identifier.slice(0, slash)}' does not match the team's namespace '${TEAM_SLUG}'`,
        );
      alias = aliasOf(parsed.identifier);
      if (alias === undefined || !ALIAS.test(alias))
        throw new SnapshotNameError(`Invalid name: '${name}' (an alias is lower-case letters, digits, - and _)`);
      if (parsed.tag !== undefined) {
        if (!TAG.test(parsed.tag)) throw new SnapshotNameError(`Invalid name: '${name}' has an invalid tag`);
        tag = parsed.tag;
      }
    }
    const existing = alias === undefined ? undefined : this.records.find((r) => r.alias === alias);
    const templateId = existing?.templateId ?? randomId(20);
    const dir = join(this.dir, `${templateId}-${tag}-${randomId(6)}`);
    try {
      await copy(dir);
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    const record: SnapshotRecord = {
      templateId,
      alias,
      tag,
      sandboxId: source.sandboxId,
      baseTemplateId: source.baseTemplateId,
      createdAt: new Date(),
      seq: this.nextSeq++,
      dir,
    };
    const replaced = this.records.findIndex((r) => r.templateId === templateId && r.tag === tag);
    if (replaced >= 0) {
      const [old] = this.records.splice(replaced, 1);
      await rm(old!.dir, { recursive: true, force: true });
    }
    this.records.push(record);
    return record;
  }

  /** The records of the template `identifier` names (its id, alias or `<team>/alias`). */
  private templateRecords(identifier: string): SnapshotRecord[] {
    const alias = aliasOf(identifier);
    return this.records.filter((r) => r.templateId === identifier || (alias !== undefined && r.alias === alias));
  }

  /** The snapshot a template reference (`Sandbox.create`'s template) names: an id or a name, with or without tag. */
  resolve(ref: string): SnapshotRecord | undefined {
    const { identifier, tag } = splitTag(ref);
    return this.templateRecords(identifier).find((r) => r.tag === (tag ?? DEFAULT_TAG));
  }

  /** Whether `ref` can only name a snapshot (one in the team's namespace, or one deleted): a 404 when none. */
  isSnapshotRef(ref: string): boolean {
    const { identifier } = splitTag(ref);
    return identifier.startsWith(`${TEAM_SLUG}/`) || this.deleted.has(identifier);
  }

  /** Newest first; `name` as `GET /snapshots` takes it (an id or a name, a tag narrowing it to that tag). */
  list(filter: { sandboxId?: string | null; name?: string | null } = {}): SnapshotRecord[] {
    let found = [...this.records];
    if (filter.sandboxId) found = found.filter((r) => r.sandboxId === filter.sandboxId);
    if (filter.name) {
      const { identifier, tag } = splitTag(filter.name);
      const named = new Set(this.templateRecords(identifier));
      found = found.filter((r) => named.has(r) && (tag === undefined || r.tag === tag));
    }
    return found.sort((a, b) => b.seq - a.seq);
  }

  /** Deletes the template `ref` names, every tag of it (`DELETE /templates/{id}`); false when there is none. */
  async delete(ref: string): Promise<boolean> {
    const { identifier } = splitTag(ref);
    const doomed = this.templateRecords(identifier);
    if (doomed.length === 0) return false;
    for (const record of doomed) {
      this.records.splice(this.records.indexOf(record), 1);
      this.deleted.add(record.templateId);
    }
    await Promise.all(doomed.map((r) => rm(r.dir, { recursive: true, force: true, maxRetries: 3 })));
    return true;
  }

  all(): SnapshotRecord[] {
    return [...this.records];
  }

  /** Removes every snapshot and the directory. */
  async clear(): Promise<void> {
    this.records.splice(0);
    await rm(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
