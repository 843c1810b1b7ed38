/**
 * The size limits of files and their refusals, the same on every backend: `read_file`'s (and reading no more than the
 * limit allows), an upload's cap, and a download whose file shrank under it.
 */
import { AppError } from '../errors';

/** The refusal of a file over the read limit (`size`: how large it was seen to be, e.g. `11000000 bytes`). */
export function tooLargeToRead(shown: string, size: string, maxBytes: number): AppError {
  return new AppError(
    'invalid_input',
    `${shown} is ${size}, over the ${maxBytes}-byte read limit; read it by lines (offset/limit) if it is ` +
      'text, or inspect it with run_command (head, tail, split).',
  );
}

/** Reads `stream` until its end or `limit` bytes, whichever comes first, and cancels the rest of it. */
export async function readStreamAtMost(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      const part = value.subarray(0, limit - total);
      parts.push(part);
      total += part.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(parts, total);
}

/** The refusal of an upload past its cap (`maxBytes`): nothing of it was written. */
export function tooLargeToUpload(maxBytes: number): AppError {
  return new AppError('too_large', `The upload is larger than its limit of ${maxBytes} bytes; nothing was written.`);
}

/** A download whose file got shorter than it was when opened: the answer ends short, and the client sees it cut. */
export function shrankWhileSent(): AppError {
  return new AppError('sandbox_error', 'The file shrank while it was being sent.');
}
