/** File operations on a local workspace; every path goes through `resolveInWorkspace` first. */
import { constants } from 'node:fs';
import { chown, lstat, mkdir, open, readdir, stat } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

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

/** Reads a whole regular file of at most `maxBytes`. */
export async function readWorkspaceFile(ws: Workspace, path: string, maxBytes: number): Promise<ReadFileResult> {
  const resolved = await resolveInWorkspace(ws, path);
  try {
    const handle = await open(resolved.hostPath, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const info = await handle.stat();
      if (info.isDirectory()) throw new AppError('invalid_input', `${resolved.sandboxPath} is a directory; use list_files to see what it holds.`);
      if (!info.isFile()) throw new AppError('invalid_input', `${resolved.sandboxPath} is not a regular file.`);
      if (info.size > maxBytes) {
        throw new AppError(
          'invalid_input',
          `${resolved.sandboxPath} is ${info.size} bytes, over the ${maxBytes}-byte read limit; read it by lines (offset/limit) if it is text, or inspect it with run_command (head, tail, split).`,
        );
      }
      const bytes = await handle.readFile();
      return { path: resolved.sandboxPath, bytes, sizeBytes: bytes.length };
    } finally {
      await handle.close();
    }
  } catch (err: unknown) {
    throw toFileError(err, resolved.sandboxPath);
  }
}

/** Writes a file, creating parent directories owned by the sandbox user. */
export async function writeWorkspaceFile(ws: Workspace, path: string, data: Buffer): Promise<{ path: string; created: boolean }> {
  const resolved = await resolveInWorkspace(ws, path);
  if (resolved.hostPath === ws.home) throw new AppError('invalid_input', 'Give a file name, not the working directory itself.');
  try {
    await makeParents(ws, dirname(resolved.hostPath));
    const existed = await lstat(resolved.hostPath).then(
      () => true,
      () => false,
    );
    const handle = await open(resolved.hostPath, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
    try {
      await handle.writeFile(data);
      if (ws.owner !== undefined) await handle.chown(ws.owner.uid, ws.owner.gid);
    } finally {
      await handle.close();
    }
    return { path: resolved.sandboxPath, created: !existed };
  } catch (err: unknown) {
    throw toFileError(err, resolved.sandboxPath);
  }
}

async function makeParents(ws: Workspace, hostDir: string): Promise<void> {
  const first = await mkdir(hostDir, { recursive: true, mode: 0o755 });
  if (first === undefined || ws.owner === undefined) return;
  // chown every directory mkdir created, from the first new one down.
  let dir = hostDir;
  const created: string[] = [];
  while (dir.length >= first.length) {
    created.push(dir);
    dir = dirname(dir);
  }
  for (const path of created) await chown(path, ws.owner.uid, ws.owner.gid);
}

/** Lists a directory to `depth` levels, without following symbolic links. */
export async function listWorkspaceFiles(ws: Workspace, req: ListFilesRequest): Promise<ListFilesResult> {
  const resolved = await resolveInWorkspace(ws, req.path);
  try {
    const top = await stat(resolved.hostPath);
    if (!top.isDirectory()) throw new AppError('invalid_input', `${resolved.sandboxPath} is not a directory; use read_file to read it.`);
  } catch (err: unknown) {
    throw toFileError(err, resolved.sandboxPath);
  }
  const entries: FileEntry[] = [];
  let truncated = false;
  const walk = async (hostDir: string, relDir: string, level: number): Promise<void> => {
    const names = await readdir(hostDir).catch(() => [] as string[]);
    names.sort();
    for (const name of names) {
      if (!req.includeHidden && name.startsWith('.')) continue;
      if (entries.length >= req.maxEntries) {
        truncated = true;
        return;
      }
      const hostPath = join(hostDir, name);
      const info = await lstat(hostPath).catch(() => undefined);
      if (info === undefined) continue;
      const rel = relDir === '' ? name : posix.join(relDir, name);
      const type = info.isSymbolicLink() ? 'symlink' : info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other';
      entries.push({ path: type === 'directory' ? `${rel}/` : rel, type, size: info.size, mtime: info.mtime.toISOString() });
      if (type === 'directory' && level < req.depth) await walk(hostPath, rel, level + 1);
    }
  };
  await walk(resolved.hostPath, '', 1);
  return { path: resolved.sandboxPath, entries, truncated };
}
