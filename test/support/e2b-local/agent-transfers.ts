/**
 * Files in a sandbox open for a `/files` transfer, through the agent's handles (agent.js: `openRead`, `read`,
 * `openWrite`, `write`, `close`). A download reads chunks at offsets and an upload writes chunks in order, each
 * with at most two chunks in flight (one being used, the next one moving), so a file of any size crosses in
 * bounded memory on both sides of the agent's pipe.
 */
import type { SandboxRuntime } from './sandbox-runtime';

/** The most bytes one `read` or `write` request moves (the agent caps a read at 4 MiB). */
export const TRANSFER_CHUNK_BYTES = 1024 * 1024;

/** A file open for reading. */
export interface SandboxFileReader {
  /** Its size when opened, in bytes. */
  readonly size: number;
  /** Its modification time (from the stat before the open), in ms since the epoch. */
  readonly modifiedMs: number;
  /**
   * Bytes from `start`: `length` of them, or to the end of the file when `length` is omitted. Rejects when the
   * file ends before `length` bytes (cut short meanwhile).
   */
  chunks(start: number, length?: number): AsyncGenerator<Buffer>;
  /** Closes it (after any read under way); never rejects. */
  close(): Promise<void>;
}

/** A file open for writing, truncated. */
export interface SandboxFileWriter {
  /** Writes `source` to it in order, TRANSFER_CHUNK_BYTES a request; rejects with the agent's error or the source's. */
  writeAll(source: AsyncIterable<Buffer> | Iterable<Buffer>): Promise<void>;
  /** Closes it; never rejects. */
  close(): Promise<void>;
}

function closer(runtime: SandboxRuntime, handle: number): () => Promise<void> {
  return () =>
    runtime.request({ t: 'close', handle }).then(
      () => undefined,
      () => undefined,
    );
}

/** Opens `path` (resolved) for reading: AgentError 404 when missing, 400 for a directory, 500 when unreadable. */
export async function openForRead(runtime: SandboxRuntime, path: string): Promise<SandboxFileReader> {
  const { header } = await runtime.request({ t: 'openRead', path });
  const { handle, size, modifiedMs } = header.result as { handle: number; size: number; modifiedMs: number };
  // A read is sent before the previous chunk is used; it is marked handled at once, as its chunk may never be
  // wanted (the client went away), and awaited when it is.
  const read = (offset: number, length: number) => {
    const payload = runtime.request({ t: 'read', handle, offset, length }).then((frame) => frame.payload);
    payload.catch(() => undefined);
    return payload;
  };
  return {
    size,
    modifiedMs,
    async *chunks(start, length = Number.POSITIVE_INFINITY) {
      const end = start + length;
      let offset = start;
      let next = offset < end ? read(offset, Math.min(TRANSFER_CHUNK_BYTES, end - offset)) : undefined;
      while (next !== undefined) {
        const chunk = await next;
        if (chunk.length === 0) {
          if (end === Number.POSITIVE_INFINITY) return;
          throw new Error(`the file ended after ${offset} of ${end} bytes`);
        }
        offset += chunk.length;
        next = offset < end ? read(offset, Math.min(TRANSFER_CHUNK_BYTES, end - offset)) : undefined;
        yield chunk;
      }
    },
    close: closer(runtime, handle),
  };
}

/** `source` in chunks of exactly `size` bytes (the last one shorter). */
async function* rechunked(source: AsyncIterable<Buffer> | Iterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const piece of source) {
    let rest = piece;
    while (pendingBytes + rest.length >= size) {
      const take = size - pendingBytes;
      yield Buffer.concat([...pending, rest.subarray(0, take)]);
      pending = [];
      pendingBytes = 0;
      rest = rest.subarray(take);
    }
    if (rest.length > 0) {
      pending.push(rest);
      pendingBytes += rest.length;
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending);
}

/**
 * Opens `path` (resolved) for writing as envd does (parent directories made, O_TRUNC): AgentError 400 for a
 * directory, 507 when out of inodes, 500 otherwise.
 */
export async function openForWrite(runtime: SandboxRuntime, path: string): Promise<SandboxFileWriter> {
  const { header } = await runtime.request({ t: 'openWrite', path });
  const { handle } = header.result as { handle: number };
  return {
    async writeAll(source) {
      // One write under way while the next chunk is gathered; marked handled at once (the source may take a while
      // to give the next chunk), and awaited before the next write.
      let inFlight: Promise<unknown> | undefined;
      for await (const chunk of rechunked(source, TRANSFER_CHUNK_BYTES)) {
        await inFlight;
        inFlight = runtime.request({ t: 'write', handle }, chunk);
        inFlight.catch(() => undefined);
      }
      await inFlight;
    },
    close: closer(runtime, handle),
  };
}
