/**
 * The file primitives of the sandbox records (records.ts): a small file read with a size limit (a larger one, or one
 * behind a symlink, reads as absent), a file written whole (aside, then renamed over), and a file put in place only if
 * none is there (`link`, which is atomic on NFS too: two instances claiming one name get one winner).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, mkdir, open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

import { toErrnoCode } from '../errors';

/** For unlink: a file that is gone is as good. */
export function ignoreMissing(err: unknown): void {
  if (toErrnoCode(err) !== 'ENOENT') throw err;
}

/** A file's text, read up to `maxBytes` (a larger one reads as absent), or `undefined` when there is none. */
export async function readSmall(path: string, maxBytes: number): Promise<string | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err: unknown) {
    // ELOOP: a symlink where the file should be, which nothing of ours makes.
    if (['ENOENT', 'ENOTDIR', 'ELOOP'].includes(toErrnoCode(err) ?? '')) return undefined;
    throw err;
  }
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return bytesRead > maxBytes ? undefined : buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** Writes `text` to `path` whole: aside first, then renamed over it (readers see the old or the new file). */
export async function writeWhole(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const aside = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  await writeNew(aside, text);
  try {
    await rename(aside, path);
  } catch (err: unknown) {
    await unlink(aside).catch(() => undefined);
    throw err;
  }
}

async function writeNew(path: string, text: string): Promise<void> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await open(path, flags, 0o600);
  try {
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
}

/** Puts a file with `text` at `path` unless one is there: false when one was. */
export async function linkNew(path: string, text: string): Promise<boolean> {
  const aside = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  await writeNew(aside, text);
  try {
    await link(aside, path);
    return true;
  } catch (err: unknown) {
    if (toErrnoCode(err) === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(aside).catch(() => undefined);
  }
}
