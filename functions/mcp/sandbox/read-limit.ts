/** The read limit of `read_file`, the same on every backend: the refusal, and reading no more than the limit allows. */
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
