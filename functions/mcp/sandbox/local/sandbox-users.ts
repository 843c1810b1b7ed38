/**
 * The user each sandbox runs as when the server is root: allocated, not derived. A uid is drawn at random from
 * a range no host account uses, claimed under `<root>/.uids/<uid>` with O_EXCL (so two sandboxes never share
 * one, on any instance that shares the root), and recorded in the workspace's server-owned directory (so a
 * recovered session finds its own). A sandbox's uid tells nothing about its session.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { constants } from 'node:fs';
import { link, mkdir, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

import { toErrnoCode } from '../../errors';

/**
 * Sandbox uids lie in [UID_BASE, UID_BASE + UID_SPAN): above any ordinary account, below the 2^31 that some tools
 * mishandle.
 */
export const UID_BASE = 100_000;
const UID_SPAN = 1 << 24;
/** The uid the start-up probe runs bubblewrap as: below the range, never a sandbox's. */
export const PROBE_UID = UID_BASE - 1;
/** Draws this often before giving up (the range is 16 M wide: a clash is rare, ten in a row impossible in practice). */
const MAX_DRAWS = 10;

const claimsDir = (root: string): string => join(root, '.uids');

/** Claims a fresh uid under `root`. */
async function claimUid(root: string): Promise<number> {
  await mkdir(claimsDir(root), { recursive: true, mode: 0o700 });
  for (let draw = 0; draw < MAX_DRAWS; draw += 1) {
    const uid = UID_BASE + randomInt(UID_SPAN);
    try {
      await (
        await open(join(claimsDir(root), String(uid)), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600)
      ).close();
      return uid;
    } catch (err: unknown) {
      if (toErrnoCode(err) !== 'EEXIST') throw err;
    }
  }
  throw new Error('no free sandbox uid');
}

/** Gives a uid back (its workspace is gone). */
export async function releaseUid(root: string, uid: number): Promise<void> {
  await unlink(join(claimsDir(root), String(uid))).catch(() => undefined);
}

/** A recorded uid, if the record is there and sound. */
async function readRecord(record: string): Promise<number | undefined> {
  const text = await readFile(record, 'utf8').catch(() => undefined);
  const uid = Number(text?.trim());
  return Number.isInteger(uid) && uid >= UID_BASE && uid < UID_BASE + UID_SPAN ? uid : undefined;
}

/** The uid recorded in the workspace in `dir`, if any. */
export function recordedUid(dir: string): Promise<number | undefined> {
  return readRecord(join(dir, 'uid'));
}

/**
 * The uid of the workspace in `dir` (server-owned): the one recorded there, or a fresh one, claimed and
 * recorded. The record appears whole (written aside, then linked into place): when two instances make the same
 * workspace at once, the first link wins, the other reads it, and its claim is given back.
 */
export async function workspaceUid(root: string, dir: string): Promise<number> {
  const record = join(dir, 'uid');
  const known = await readRecord(record);
  if (known !== undefined) return known;
  const uid = await claimUid(root);
  const aside = `${record}.${randomBytes(6).toString('hex')}`;
  try {
    const handle = await open(
      aside,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      await handle.writeFile(`${uid}\n`);
    } finally {
      await handle.close();
    }
    await link(aside, record);
    return uid;
  } catch (err: unknown) {
    await releaseUid(root, uid);
    if (toErrnoCode(err) !== 'EEXIST') throw err;
    const winner = await readRecord(record);
    if (winner === undefined) throw new Error(`the workspace's uid record ${record} is unreadable`);
    return winner;
  } finally {
    await unlink(aside).catch(() => undefined);
  }
}
