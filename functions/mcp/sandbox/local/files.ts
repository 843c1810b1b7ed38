/**
 * File operations on a local workspace. The server may be root while the workspace belongs to the
 * sandbox's user, whose processes can swap a directory for a symlink at any moment: so every file is
 * opened first (`O_NOFOLLOW`), then checked through `/proc/self/fd` to lie inside the workspace, and only
 * that verified descriptor is read, written or chowned. Nothing is ever chowned by path.
 */
import { constants, existsSync } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir, realpath, unlink } from 'node:fs/promises';
import { basename, join, posix, relative, sep } from 'node:path';

import { AppError, toErrnoCode } from '../../errors';
import type { FileEntry, ListFilesRequest, ListFilesResult, ReadFileResult } from '../types';
import { resolveInWorkspace, type Workspace } from './workspace';

/** Translates a file-system error into a message the model can act on. */
export function toFileError(err: unknown, shownPath: string): AppError {
  if (err instanceof AppError) return err;
  const code = toErrnoCode(err) ?? '';
  switch (code) {
    case 'ENOENT':
      return new AppError('not_found', `No such file or directory: ${shownPath}`, { cause: err });
    case 'EISDIR':
      return new AppError('invalid_input', `${shownPath} is a directory; use list_files to see what it holds.`, { cause: err });
    case 'ENOTDIR':
      return new AppError('invalid_input', `A part of ${shownPath} is a file, not a directory.`, { cause: err });
    case 'ELOOP':
      return new AppError('invalid_input', `${shownPath} is a symbolic link; refusing to follow it.`, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new AppError('invalid_input', `Permission denied: ${shownPath}`, { cause: err });
    case 'ENOSPC':
    case 'EDQUOT':
      return new AppError('sandbox_error', 'The sandbox is out of disk space; delete files and retry.', { cause: err });
    default:
      return new AppError('sandbox_error', `File operation on ${shownPath} failed (${code || 'unknown error'}).`, { cause: err });
  }
}

/**
 * Linux names an open descriptor `/proc/self/fd/N`, a link that leads to the very file opened. Elsewhere
 * (macOS laptops) the host path stands in: racy, but there the server is not root and drops no privileges.
 */
const FD_LINKS = existsSync('/proc/self/fd');

/** A path that reaches what `handle` (opened at `hostPath`) refers to, or an entry `name` inside it. */
function viaDescriptor(handle: FileHandle, hostPath: string, name?: string): string {
  const base = FD_LINKS ? `/proc/self/fd/${handle.fd}` : hostPath;
  return name === undefined ? base : join(base, name);
}

/** True when `hostPath` is the workspace home or inside it. */
function isInside(ws: Workspace, hostPath: string): boolean {
  const rel = relative(ws.home, hostPath);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && rel !== '..');
}

/** Opens `hostPath` and proves the descriptor lies inside the workspace; closes it and throws otherwise. */
async function openInside(ws: Workspace, hostPath: string, flags: number, shown: string, mode?: number): Promise<FileHandle> {
  const handle = await open(hostPath, flags | constants.O_NOFOLLOW, mode);
  const real = await realpath(viaDescriptor(handle, hostPath)).catch(() => '');
  if (!isInside(ws, real)) {
    await handle.close();
    throw new AppError('invalid_input', `${shown} leads outside the sandbox's working directory; refusing to touch it.`);
  }
  return handle;
}

/** Reads a whole regular file of at most `maxBytes`. */
export async function readWorkspaceFile(ws: Workspace, path: string, maxBytes: number): Promise<ReadFileResult> {
  const resolved = await resolveInWorkspace(ws, path);
  const shown = resolved.sandboxPath;
  try {
    const handle = await openInside(ws, resolved.hostPath, constants.O_RDONLY | constants.O_NONBLOCK, shown);
    try {
      const info = await handle.stat();
      if (info.isDirectory()) throw new AppError('invalid_input', `${shown} is a directory; use list_files to see what it holds.`);
      if (!info.isFile()) throw new AppError('invalid_input', `${shown} is not a regular file.`);
      if (info.size > maxBytes) {
        throw new AppError(
          'invalid_input',
          `${shown} is ${info.size} bytes, over the ${maxBytes}-byte read limit; read it by lines (offset/limit) if it is text, or inspect it with run_command (head, tail, split).`,
        );
      }
      const bytes = await handle.readFile();
      return { path: shown, bytes, sizeBytes: bytes.length };
    } finally {
      await handle.close();
    }
  } catch (err: unknown) {
    throw toFileError(err, shown);
  }
}

/** Writes a file, creating parent directories owned by the sandbox user. */
export async function writeWorkspaceFile(ws: Workspace, path: string, data: Buffer): Promise<{ path: string; created: boolean }> {
  const resolved = await resolveInWorkspace(ws, path);
  const shown = resolved.sandboxPath;
  if (resolved.hostPath === ws.home) throw new AppError('invalid_input', 'Give a file name, not the working directory itself.');
  try {
    const parent = await openParentDir(ws, resolved.hostPath, shown);
    try {
      // Through the verified directory's descriptor: no path component can be swapped under us.
      const target = viaDescriptor(parent.handle, parent.hostPath, basename(resolved.hostPath));
      let created = true;
      let handle: FileHandle;
      try {
        handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
      } catch (err: unknown) {
        if (toErrnoCode(err) !== 'EEXIST') throw err;
        created = false;
        handle = await open(target, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      }
      try {
        if (!(await handle.stat()).isFile()) throw new AppError('invalid_input', `${shown} is not a regular file.`);
        await handle.truncate(0);
        await handle.writeFile(data);
        if (created && ws.owner !== undefined) await handle.chown(ws.owner.uid, ws.owner.gid);
      } catch (err: unknown) {
        // A file this call created and could not fill (a full disk) is not left behind half written.
        if (created) await unlink(target).catch(() => undefined);
        throw err;
      } finally {
        await handle.close();
      }
      return { path: shown, created };
    } finally {
      await parent.handle.close();
    }
  } catch (err: unknown) {
    throw toFileError(err, shown);
  }
}

/**
 * Opens the directory that will hold `hostFile`, creating missing levels: each level is made and opened
 * through its parent's descriptor with O_NOFOLLOW, so the chain cannot be redirected by a symlink.
 */
async function openParentDir(ws: Workspace, hostFile: string, shown: string): Promise<{ handle: FileHandle; hostPath: string }> {
  const parts = relative(ws.home, hostFile).split(sep).slice(0, -1);
  let hostPath = ws.home;
  let dir = await openInside(ws, hostPath, constants.O_RDONLY | constants.O_DIRECTORY, shown);
  try {
    for (const part of parts) {
      const next = viaDescriptor(dir, hostPath, part);
      const made = await mkdir(next, { mode: 0o755 }).then(
        () => true,
        (err: unknown) => {
          if (toErrnoCode(err) === 'EEXIST') return false;
          throw err;
        },
      );
      const child = await open(next, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      await dir.close();
      dir = child;
      hostPath = join(hostPath, part);
      if (made && ws.owner !== undefined) await dir.chown(ws.owner.uid, ws.owner.gid);
    }
    return { handle: dir, hostPath };
  } catch (err: unknown) {
    await dir.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Lists a directory to `depth` levels, without following symbolic links. The walk goes by descriptor: each
 * directory is read through the descriptor it was opened as, its entries are looked at inside that very
 * directory, and a subdirectory is opened from it with O_NOFOLLOW, so a directory swapped for a symlink
 * mid-walk is never listed from its target.
 */
export async function listWorkspaceFiles(ws: Workspace, req: ListFilesRequest): Promise<ListFilesResult> {
  const resolved = await resolveInWorkspace(ws, req.path);
  const shown = resolved.sandboxPath;
  let top: FileHandle;
  try {
    top = await openInside(ws, resolved.hostPath, constants.O_RDONLY | constants.O_DIRECTORY, shown);
  } catch (err: unknown) {
    throw toFileError(toErrnoCode(err) === 'ENOTDIR' ? new AppError('invalid_input', `${shown} is not a directory; use read_file to read it.`) : err, shown);
  }
  const entries: FileEntry[] = [];
  let truncated = false;
  const walk = async (dir: FileHandle, hostDir: string, relDir: string, level: number): Promise<void> => {
    const names = await readdir(viaDescriptor(dir, hostDir)).catch(() => [] as string[]);
    names.sort();
    for (const name of names) {
      if (!req.includeHidden && name.startsWith('.')) continue;
      if (entries.length >= req.maxEntries) {
        truncated = true;
        return;
      }
      const info = await lstat(viaDescriptor(dir, hostDir, name)).catch(() => undefined);
      if (info === undefined) continue;
      const rel = relDir === '' ? name : posix.join(relDir, name);
      const type = info.isSymbolicLink() ? 'symlink' : info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other';
      entries.push({ path: type === 'directory' ? `${rel}/` : rel, type, size: info.size, mtime: info.mtime.toISOString() });
      if (type !== 'directory' || level >= req.depth) continue;
      // Swapped for a symlink (or a file) since: ELOOP or ENOTDIR, and it is not descended into.
      const child = await open(viaDescriptor(dir, hostDir, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(() => undefined);
      if (child === undefined) continue;
      try {
        await walk(child, join(hostDir, name), rel, level + 1);
      } finally {
        await child.close();
      }
      if (truncated) return;
    }
  };
  try {
    await walk(top, resolved.hostPath, '', 1);
  } finally {
    await top.close();
  }
  return { path: shown, entries, truncated };
}
