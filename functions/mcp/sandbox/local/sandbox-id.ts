/**
 * A local sandbox's id: drawn at random when its workspace is made and recorded in the workspace's
 * server-owned directory. So a session that comes back (another instance, a restart) reports the same id,
 * and a reset, which deletes the workspace and makes a new one for the same session, reports a new one.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

import { toErrnoCode } from '../../errors';

const ID = /^local-[0-9a-f]{16}$/;

async function readRecord(record: string): Promise<string | undefined> {
  const text = (await readFile(record, 'utf8').catch(() => undefined))?.trim();
  return text !== undefined && ID.test(text) ? text : undefined;
}

/**
 * The id of the sandbox whose workspace is `dir` (server-owned): the one recorded there, or a fresh one,
 * recorded. The record appears whole (written aside, then linked into place), and when two instances open a
 * new workspace at once, the first link wins.
 */
export async function workspaceSandboxId(dir: string): Promise<string> {
  const record = join(dir, 'sandbox-id');
  const known = await readRecord(record);
  if (known !== undefined) return known;
  const id = `local-${randomBytes(8).toString('hex')}`;
  const aside = `${record}.${randomBytes(6).toString('hex')}`;
  const handle = await open(
    aside,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await handle.writeFile(`${id}\n`);
  } finally {
    await handle.close();
  }
  try {
    await link(aside, record);
    return id;
  } catch (err: unknown) {
    if (toErrnoCode(err) !== 'EEXIST') throw err;
    const winner = await readRecord(record);
    if (winner === undefined) throw new Error(`the workspace's sandbox id record ${record} is unreadable`);
    return winner;
  } finally {
    await unlink(aside).catch(() => undefined);
  }
}
