/**
 * Files moved as streams on E2B (the file URLs the server serves itself, http/file-route.ts), at paths already
 * resolved in the sandbox (e2b-sandbox.ts). envd's reads start at the file's start, so a range skips what comes
 * before it; an upload goes to a new file beside its target and is renamed over it once whole, so that a body past
 * its cap or a full disk leaves the target as it was.
 */
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';

import { AppError } from '../../errors';
import { shrankWhileSent, tooLargeToUpload } from '../read-limit';
import type { FileSource, ReceivedFile, ReceiveFileRequest } from '../types';
import type { E2BSandboxApi } from './sdk';

/** Opens the regular file `target` to be read out. */
export async function openE2BFile(api: E2BSandboxApi, target: string): Promise<FileSource> {
  const info = await api.getInfo(target);
  if (info.type === 'dir') throw new AppError('invalid_input', `${target} is a directory, not a file.`);
  if (info.type !== 'file') throw new AppError('invalid_input', `${target} is not a regular file.`);
  return {
    path: target,
    sizeBytes: info.size,
    modifiedAt: info.modifiedTime ?? new Date(0),
    read: (start, end) => readRange(api, target, start, end),
    close: async () => undefined,
  };
}

/** Bytes `start` to `end` of the file, skipping what envd sends before `start`. */
async function* readRange(api: E2BSandboxApi, target: string, start: number, end: number): AsyncGenerator<Uint8Array> {
  const reader = (await api.readStream(target)).getReader();
  let position = 0;
  try {
    while (position <= end) {
      const { done, value } = await reader.read();
      if (done) throw shrankWhileSent();
      const from = Math.max(0, start - position);
      const to = Math.min(value.length, end - position + 1);
      position += value.length;
      if (from < to) yield value.subarray(from, to);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Writes `req.body` to `target`, whole or not at all. */
export async function receiveE2BFile(
  api: E2BSandboxApi,
  target: string,
  req: ReceiveFileRequest,
): Promise<ReceivedFile> {
  const existing = await api.getInfo(target).catch(() => undefined);
  if (existing?.type === 'dir') throw new AppError('invalid_input', `${target} is a directory.`);
  if (existing !== undefined && existing.type !== 'file')
    throw new AppError('invalid_input', `${target} is not a regular file.`);
  const temporary = posix.join(
    posix.dirname(target),
    `.${posix.basename(target).slice(0, 100)}.upload-${randomBytes(6).toString('hex')}`,
  );
  let bytes = 0;
  let overCap = false;
  const source = req.body[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await source.next();
      if (done) {
        controller.close();
        return;
      }
      bytes += value.length;
      if (bytes > req.maxBytes) {
        overCap = true;
        controller.error(new Error('over the upload cap'));
        return;
      }
      controller.enqueue(value);
    },
    async cancel() {
      await source.return?.();
    },
  });
  try {
    await api.writeStream(temporary, body);
    if (overCap) throw tooLargeToUpload(req.maxBytes);
    await api.rename(temporary, target);
  } catch (err: unknown) {
    await api.remove(temporary).catch(() => undefined);
    throw overCap ? tooLargeToUpload(req.maxBytes) : err;
  }
  return { path: target, created: existing === undefined, bytes };
}
