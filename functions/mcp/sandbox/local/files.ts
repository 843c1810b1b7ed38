/**
 * File operations on a local workspace. The server may be root while the workspace belongs to the
 * sandbox's user, whose processes can swap any name for a symlink at any moment: so paths are walked by
 * descriptor beneath the working directory (beneath.ts), the last name is opened from its directory's
 * descriptor with O_NOFOLLOW, and only that descriptor is read, written or chowned. Nothing is ever
 * resolved by the kernel past a name the sandbox controls, and nothing is chowned by path.
 */
import { constants } from 'node:fs';
import { type FileHandle, lstat, open, readdir, unlink } from 'node:fs/promises';
import { join, posix } from 'node:path';

import { AppError, toErrnoCode } from '../../errors';
import { tooLargeToRead } from '../read-limit';
import type { FileEntry, ListFilesRequest, ListFilesResult, ReadFileResult } from '../types';
import { inside, locate, type OpenDir } from './beneath';
import { toWorkspacePath, type Workspace } from './workspace';
import { diskFullLead } from './disk-limit';

/**
 * Translates a file-system error into a message the model can act on (`diskLimitBytes`: the workspace's disk limit, if
 * any).
 */
export function toFileError(err: unknown, shownPath: string, diskLimitBytes?: number): AppError {
  if (err instanceof AppError) return err;
  const code = toErrnoCode(err) ?? '';
  switch (code) {
    case 'ENOENT':
      return new AppError('not_found', `No such file or directory: ${shownPath}`, { cause: err });
    case 'EISDIR':
      return new AppError('invalid_input', `${shownPath} is a directory; use list_files to see what it holds.`, {
        cause: err,
      });
    case 'ENOTDIR':
      return new AppError('invalid_input', `A part of ${shownPath} is a file, not a directory.`, { cause: err });
    case 'ELOOP':
      return new AppError('invalid_input', `${shownPath} is a symbolic link; refusing to follow it.`, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new AppError('invalid_input', `Permission denied: ${shownPath}`, { cause: err });
    case 'ENOSPC':
    case 'EDQUOT':
      if (diskLimitBytes !== undefined) {
        return new AppError(
          'disk_full',
          `${diskFullLead(diskLimitBytes)}; delete files (in the working directory or /tmp) and retry.`,
          { cause: err },
        );
      }
      return new AppError('disk_full', 'The sandbox is out of disk space; delete files and retry.', { cause: err });
    default:
      return new AppError('sandbox_error', `File operation on ${shownPath} failed (${code || 'unknown error'}).`, {
        cause: err,
      });
  }
}

/** The error for a symlink whose target does not exist. */
export const dangling = (shown: string): AppError =>
  new AppError('invalid_input', `Path "${shown}" is a symbolic link that points nowhere; refusing to follow it.`);

/** Reads a whole regular file of at most `maxBytes`. */
export async function readWorkspaceFile(ws: Workspace, path: string, maxBytes: number): Promise<ReadFileResult> {
  const target = toWorkspacePath(ws, path);
  const shown = target.sandboxPath;
  try {
    const at = await locate(ws, target.parts, { shown: path });
    try {
      if (at.name === undefined)
        throw new AppError('invalid_input', `${shown} is a directory; use list_files to see what it holds.`);
      if (!at.exists && at.lastWasLink) throw dangling(path);
      // O_NONBLOCK: a FIFO put in its place does not hang the call (and is refused below).
      const handle = await open(
        inside(at.parent, at.name),
        constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW,
      );
      try {
        const info = await handle.stat();
        if (info.isDirectory())
          throw new AppError('invalid_input', `${shown} is a directory; use list_files to see what it holds.`);
        if (!info.isFile()) throw new AppError('invalid_input', `${shown} is not a regular file.`);
        if (info.size > maxBytes) throw tooLargeToRead(shown, `${info.size} bytes`, maxBytes);
        // The sandbox can grow the file after the check (ftruncate to 2 GiB, say): never read past the limit.
        const bytes = await readAtMost(handle, maxBytes + 1);
        if (bytes.length > maxBytes) throw tooLargeToRead(shown, `over ${maxBytes} bytes`, maxBytes);
        return { path: shown, bytes, sizeBytes: bytes.length };
      } finally {
        await handle.close();
      }
    } finally {
      await at.parent.handle.close();
    }
  } catch (err: unknown) {
    throw toFileError(err, shown, ws.diskLimitBytes);
  }
}

/** Reads from the start of `handle` until its end or `limit` bytes, whichever comes first. */
async function readAtMost(handle: FileHandle, limit: number): Promise<Buffer> {
  const buffer = Buffer.alloc(Math.min(limit, 64 * 1024));
  const parts: Buffer[] = [];
  let total = 0;
  while (total < limit) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, limit - total), total);
    if (bytesRead === 0) break;
    parts.push(Buffer.from(buffer.subarray(0, bytesRead)));
    total += bytesRead;
  }
  return Buffer.concat(parts, total);
}

/** Writes a file, creating parent directories owned by the sandbox user. */
export async function writeWorkspaceFile(
  ws: Workspace,
  path: string,
  data: Buffer,
): Promise<{ path: string; created: boolean }> {
  const target = toWorkspacePath(ws, path);
  const shown = target.sandboxPath;
  if (target.parts.length === 0)
    throw new AppError('invalid_input', 'Give a file name, not the working directory itself.');
  try {
    const at = await locate(ws, target.parts, { shown: path, createDirs: true });
    try {
      if (at.name === undefined) throw new AppError('invalid_input', `${shown} is a directory.`);
      if (!at.exists && at.lastWasLink) throw dangling(path);
      // Through the directory's descriptor: no name on the way can be swapped under us.
      const file = inside(at.parent, at.name);
      let created = true;
      let handle: FileHandle;
      try {
        handle = await open(
          file,
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o644,
        );
      } catch (err: unknown) {
        if (toErrnoCode(err) !== 'EEXIST') throw err;
        created = false;
        handle = await open(file, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      }
      try {
        const info = await handle.stat();
        if (!info.isFile()) throw new AppError('invalid_input', `${shown} is not a regular file.`);
        await replaceContent(handle, info.size, data);
        if (created && ws.owner !== undefined) await handle.chown(ws.owner.uid, ws.owner.gid);
      } catch (err: unknown) {
        // A file this call created and could not fill (a full disk) is not left behind half written.
        if (created) await unlink(file).catch(() => undefined);
        throw err;
      } finally {
        await handle.close();
      }
      return { path: shown, created };
    } finally {
      await at.parent.handle.close();
    }
  } catch (err: unknown) {
    throw toFileError(err, shown, ws.diskLimitBytes);
  }
}

/**
 * Makes a file of `oldSize` bytes hold `data`, so that a full disk leaves it as it was: the part past the old end
 * is written first (only it needs new blocks; on ENOSPC the file is cut back to its old size), then the old
 * part is overwritten in place, then the file is cut to its new length.
 */
async function replaceContent(handle: FileHandle, oldSize: number, data: Buffer): Promise<void> {
  if (data.length > oldSize) {
    try {
      await writeAt(handle, data.subarray(oldSize), oldSize);
    } catch (err: unknown) {
      await handle.truncate(oldSize).catch(() => undefined);
      throw err;
    }
  }
  await writeAt(handle, data.subarray(0, Math.min(oldSize, data.length)), 0);
  await handle.truncate(data.length);
}

async function writeAt(handle: FileHandle, data: Buffer, position: number): Promise<void> {
  for (let done = 0; done < data.length; ) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
    done += bytesWritten;
  }
}

/**
 * Lists a directory to `depth` levels, without following symbolic links. The walk goes by descriptor: each
 * directory is read through the descriptor it was opened as, its entries are looked at inside that very
 * directory, and a subdirectory is opened from it with O_NOFOLLOW, so a directory swapped for a symlink
 * mid-walk is never listed from its target.
 */
export async function listWorkspaceFiles(ws: Workspace, req: ListFilesRequest): Promise<ListFilesResult> {
  const target = toWorkspacePath(ws, req.path);
  const shown = target.sandboxPath;
  let top: OpenDir;
  try {
    const at = await locate(ws, target.parts, { shown: req.path });
    if (at.name === undefined) top = at.parent;
    else {
      try {
        if (!at.exists && at.lastWasLink) throw dangling(req.path);
        top = {
          handle: await open(
            inside(at.parent, at.name),
            constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
          ),
          hostPath: join(at.parent.hostPath, at.name),
        };
      } finally {
        await at.parent.handle.close();
      }
    }
  } catch (err: unknown) {
    throw toFileError(
      toErrnoCode(err) === 'ENOTDIR'
        ? new AppError('invalid_input', `${shown} is not a directory; use read_file to read it.`)
        : err,
      shown,
      ws.diskLimitBytes,
    );
  }
  const entries: FileEntry[] = [];
  let truncated = false;
  const walk = async (dir: OpenDir, relDir: string, level: number): Promise<void> => {
    const names = await readdir(inside(dir)).catch(() => [] as string[]);
    names.sort();
    for (const name of names) {
      if (!req.includeHidden && name.startsWith('.')) continue;
      if (entries.length >= req.maxEntries) {
        truncated = true;
        return;
      }
      const info = await lstat(inside(dir, name)).catch(() => undefined);
      if (info === undefined) continue;
      const rel = relDir === '' ? name : posix.join(relDir, name);
      const type = info.isSymbolicLink()
        ? 'symlink'
        : info.isDirectory()
          ? 'directory'
          : info.isFile()
            ? 'file'
            : 'other';
      entries.push({
        path: type === 'directory' ? `${rel}/` : rel,
        type,
        size: info.size,
        mtime: info.mtime.toISOString(),
      });
      if (type !== 'directory' || level >= req.depth) continue;
      // Swapped for a symlink (or a file) since: ELOOP or ENOTDIR, and it is not descended into.
      const handle = await open(
        inside(dir, name),
        constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
      ).catch(() => undefined);
      if (handle === undefined) continue;
      try {
        await walk({ handle, hostPath: join(dir.hostPath, name) }, rel, level + 1);
      } finally {
        await handle.close();
      }
      if (truncated) return;
    }
  };
  try {
    await walk(top, '', 1);
  } finally {
    await top.handle.close();
  }
  return { path: shown, entries, truncated };
}
