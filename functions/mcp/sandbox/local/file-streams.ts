/**
 * Files moved as streams (the file URLs of http/file-route.ts), by descriptor beneath the working directory as
 * files.ts moves them: a download reads one descriptor opened with O_NOFOLLOW, and an upload is written to a new
 * file beside its target and renamed over it once whole, so that a body cut short, past its cap or past the disk
 * leaves the target as it was and no partial file behind.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, lstat, open, rename, unlink } from 'node:fs/promises';

import { AppError } from '../../errors';
import { shrankWhileSent, tooLargeToUpload } from '../read-limit';
import type { FileSource, ReceivedFile, ReceiveFileRequest } from '../types';
import { inside, type Located, locate } from './beneath';
import { dangling, toFileError } from './files';
import { toWorkspacePath, type Workspace } from './workspace';

/** Bytes read from the file per chunk of a download. */
const CHUNK_BYTES = 1024 * 1024;
/** Bytes of an upload gathered into one write. */
const WRITE_BATCH_BYTES = 1024 * 1024;
/** Chunks gathered into one write at most (a client sending tiny chunks makes many). */
const WRITE_BATCH_CHUNKS = 256;

/** Opens the regular file `path` to be read out. */
export async function openWorkspaceFile(ws: Workspace, path: string): Promise<FileSource> {
  const target = toWorkspacePath(ws, path);
  const shown = target.sandboxPath;
  try {
    const at = await locate(ws, target.parts, { shown: path });
    let handle: FileHandle;
    try {
      if (at.name === undefined) throw new AppError('invalid_input', `${shown} is a directory, not a file.`);
      if (!at.exists && at.lastWasLink) throw dangling(path);
      // O_NONBLOCK: a FIFO put in its place does not hang the request (and is refused below).
      handle = await open(inside(at.parent, at.name), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    } finally {
      await at.parent.handle.close();
    }
    try {
      const info = await handle.stat();
      if (info.isDirectory()) throw new AppError('invalid_input', `${shown} is a directory, not a file.`);
      if (!info.isFile()) throw new AppError('invalid_input', `${shown} is not a regular file.`);
      return {
        path: shown,
        sizeBytes: info.size,
        modifiedAt: info.mtime,
        read: (start, end) => readRange(handle, start, end),
        close: () => handle.close(),
      };
    } catch (err: unknown) {
      await handle.close();
      throw err;
    }
  } catch (err: unknown) {
    throw toFileError(err, shown, ws.diskLimitBytes);
  }
}

/** Bytes `start` to `end` of `handle`, a fresh buffer a chunk (the socket may still hold the last one). */
async function* readRange(handle: FileHandle, start: number, end: number): AsyncGenerator<Uint8Array> {
  for (let position = start; position <= end; ) {
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, end - position + 1));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    // The file shrank since it was opened: the answer ends short, and the client sees it cut.
    if (bytesRead === 0) throw shrankWhileSent();
    position += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
}

/** Writes `req.body` to `req.path`, whole or not at all. */
export async function receiveWorkspaceFile(ws: Workspace, req: ReceiveFileRequest): Promise<ReceivedFile> {
  const target = toWorkspacePath(ws, req.path);
  const shown = target.sandboxPath;
  if (target.parts.length === 0) throw new AppError('invalid_input', 'Give a file name, not the working directory.');
  try {
    const at = await locate(ws, target.parts, { shown: req.path, createDirs: true });
    try {
      const name = await writableName(at, shown, req.path);
      // Beside the target, so that the rename stays on one file system; hidden, and named so no one mistakes it.
      const temporary = `.${name.slice(0, 100)}.upload-${randomBytes(6).toString('hex')}`;
      const bytes = await writeNew(ws, at, temporary, req);
      try {
        // Through the directory's descriptor: a name swapped meanwhile is replaced, never followed.
        await rename(inside(at.parent, temporary), inside(at.parent, name));
      } catch (err: unknown) {
        await unlink(inside(at.parent, temporary)).catch(() => undefined);
        throw err;
      }
      return { path: shown, created: !at.exists, bytes };
    } finally {
      await at.parent.handle.close();
    }
  } catch (err: unknown) {
    throw toFileError(err, shown, ws.diskLimitBytes);
  }
}

/** The last name of an upload's target, once it is known to be a regular file or nothing yet. */
async function writableName(at: Located, shown: string, given: string): Promise<string> {
  if (at.name === undefined) throw new AppError('invalid_input', `${shown} is a directory.`);
  if (!at.exists && at.lastWasLink) throw dangling(given);
  if (!at.exists) return at.name;
  const info = await lstat(inside(at.parent, at.name));
  if (info.isDirectory()) throw new AppError('invalid_input', `${shown} is a directory.`);
  if (!info.isFile()) throw new AppError('invalid_input', `${shown} is not a regular file.`);
  return at.name;
}

/** Creates `name` in the target's directory and fills it from the body; on any failure it is removed. */
async function writeNew(ws: Workspace, at: Located, name: string, req: ReceiveFileRequest): Promise<number> {
  const path = inside(at.parent, name);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await open(path, flags, 0o644);
  // One write in flight while the next WRITE_BATCH_BYTES are read from the client: the two overlap, and a slow
  // disk holds the client back (back-pressure), never more than two batches in the server's memory.
  let inFlight: Promise<void> = Promise.resolve();
  let batch: Buffer[] = [];
  let batchBytes = 0;
  let written = 0;
  const flush = async (): Promise<void> => {
    await inFlight;
    const buffers = batch;
    batch = [];
    batchBytes = 0;
    inFlight = writeAll(handle, buffers);
    // Seen at the next flush, or at the end; never an unhandled rejection meanwhile.
    inFlight.catch(() => undefined);
  };
  try {
    for await (const chunk of req.body) {
      written += chunk.length;
      if (written > req.maxBytes) throw tooLargeToUpload(req.maxBytes);
      batch.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      batchBytes += chunk.length;
      if (batchBytes >= WRITE_BATCH_BYTES || batch.length >= WRITE_BATCH_CHUNKS) await flush();
    }
    await flush();
    await inFlight;
    if (ws.owner !== undefined) await handle.chown(ws.owner.uid, ws.owner.gid);
    await handle.close();
    return written;
  } catch (err: unknown) {
    await inFlight.catch(() => undefined);
    await handle.close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
    throw err;
  }
}

/** Writes all of `buffers` at the file's position, in one system call when the kernel takes them whole. */
async function writeAll(handle: FileHandle, buffers: readonly Buffer[]): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    const { bytesWritten } = await handle.writev(rest as Buffer[]);
    rest = dropBytes(rest, bytesWritten);
  }
}

/** `buffers` without their first `count` bytes. */
function dropBytes(buffers: readonly Buffer[], count: number): readonly Buffer[] {
  let left = count;
  let index = 0;
  while (index < buffers.length && left >= (buffers[index] as Buffer).length) {
    left -= (buffers[index] as Buffer).length;
    index += 1;
  }
  if (index === buffers.length) return [];
  const first = (buffers[index] as Buffer).subarray(left);
  return [first, ...buffers.slice(index + 1)];
}
