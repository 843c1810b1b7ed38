/** read_file, write_file and list_files on E2B, at paths already resolved in the sandbox (e2b-sandbox.ts). */
import { posix } from 'node:path';

import type { EntryInfo } from 'e2b';

import { AppError } from '../../errors';
import { tooLargeToRead } from '../read-limit';
import type { FileEntry, ListFilesRequest, ListFilesResult, ReadFileResult } from '../types';
import type { E2BSandboxApi } from './sdk';

/** Reads the regular file `target` of at most `maxBytes`. */
export async function readE2BFile(api: E2BSandboxApi, target: string, maxBytes: number): Promise<ReadFileResult> {
  const info = await api.getInfo(target);
  if (info.type === 'dir')
    throw new AppError('invalid_input', `${target} is a directory; use list_files to see what it holds.`);
  if (info.size > maxBytes) throw tooLargeToRead(target, `${info.size} bytes`, maxBytes);
  // The sandbox can grow the file after the check: never more than the limit is read.
  const bytes = Buffer.from(await api.readFile(target, maxBytes));
  if (bytes.length > maxBytes) throw tooLargeToRead(target, `over ${maxBytes} bytes`, maxBytes);
  return { path: target, bytes, sizeBytes: bytes.length };
}

/** Writes `data` to `target`, saying whether the file is new. */
export async function writeE2BFile(
  api: E2BSandboxApi,
  target: string,
  data: Buffer,
): Promise<{ path: string; created: boolean }> {
  const existed = await api.exists(target);
  await api.writeFile(target, toArrayBuffer(data));
  return { path: target, created: !existed };
}

/** Lists the directory `target` to `req.depth` levels, sorted, hidden names only when asked. */
export async function listE2BFiles(
  api: E2BSandboxApi,
  target: string,
  req: ListFilesRequest,
): Promise<ListFilesResult> {
  const info = await api.getInfo(target);
  if (info.type !== 'dir')
    throw new AppError('invalid_input', `${target} is not a directory; use read_file to read it.`);
  const found = await api.listFiles(target, req.depth);
  const entries: FileEntry[] = [];
  for (const entry of found) {
    const rel = posix.relative(target, entry.path);
    if (rel === '' || rel.startsWith('..')) continue;
    if (!req.includeHidden && rel.split('/').some((part) => part.startsWith('.'))) continue;
    const type = toEntryType(entry.type);
    entries.push({
      path: type === 'directory' ? `${rel}/` : rel,
      type,
      size: entry.size,
      mtime: entry.modifiedTime?.toISOString() ?? '',
    });
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { path: target, entries: entries.slice(0, req.maxEntries), truncated: entries.length > req.maxEntries };
}

/** The SDK's entry type as list_files reports it. */
function toEntryType(type: EntryInfo['type']): FileEntry['type'] {
  if (type === 'dir') return 'directory';
  if (type === 'symlink') return 'symlink';
  return type === 'file' ? 'file' : 'other';
}

/** A copy of `data` as the SDK's file writes take it. */
export function toArrayBuffer(data: Buffer): ArrayBuffer {
  const copy = new ArrayBuffer(data.byteLength);
  new Uint8Array(copy).set(data);
  return copy;
}
