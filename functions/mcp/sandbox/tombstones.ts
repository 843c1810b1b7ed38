/**
 * Tombstones of ended sessions (DELETEd, or expired and destroyed): `<dir>/.ended/<name>` (the name: the
 * session's key hashed), holding the time until which the session's id stays refused (its id's max age).
 * Every instance that shares the directory sees them (LOCAL_SANDBOX_ROOT for the local backend,
 * E2B_STATE_DIR for E2B), and they outlive restarts, so no instance revives an ended session.
 */
import { mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const tombstonesDir = (root: string): string => join(root, '.ended');

/** Records that the session named `name` ended; its id is refused until `untilMs`. */
export async function writeTombstone(root: string, name: string, untilMs: number): Promise<void> {
  await mkdir(tombstonesDir(root), { recursive: true, mode: 0o700 });
  await writeFile(join(tombstonesDir(root), name), `${Math.ceil(untilMs)}\n`, { mode: 0o600 });
}

/** True when the session named `name` ended and its tombstone still holds at `nowMs`. */
export async function hasTombstone(root: string, name: string, nowMs: number): Promise<boolean> {
  const text = await readFile(join(tombstonesDir(root), name), 'utf8').catch(() => undefined);
  if (text === undefined) return false;
  // An unreadable one holds: refusing a session too long is safe, reviving one is not.
  const until = Number(text.trim());
  return !Number.isFinite(until) || until > nowMs;
}

/** Deletes tombstones that no longer hold (their ids expired anyway); returns how many went. */
export async function sweepTombstones(root: string, nowMs: number): Promise<number> {
  const names = await readdir(tombstonesDir(root)).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    const path = join(tombstonesDir(root), name);
    const until = await readUntil(path);
    // An unreadable one is kept: refusing a session too long is safe, reviving one is not.
    if (until !== undefined && until <= nowMs) {
      await unlink(path).catch(() => undefined);
      removed += 1;
    }
  }
  return removed;
}

async function readUntil(path: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => undefined);
  const until = Number(text?.trim());
  return text !== undefined && Number.isFinite(until) ? until : undefined;
}
