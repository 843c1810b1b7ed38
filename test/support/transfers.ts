/** Large bodies for the file-URL suites: a response's sha256 as it streams, and random bytes made as they are sent. */
import { createHash, randomBytes } from 'node:crypto';

/** The sha256 and length of a response body, read to its end. */
export async function shaOfBody(res: Response): Promise<{ sha: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { sha: hash.digest('hex'), bytes };
}

/** A body of `size` random bytes, made a MiB at a time as it is sent, and the sha256 it will have had. */
export function randomBody(size: number): { body: ReadableStream<Uint8Array>; sha: () => string } {
  const hash = createHash('sha256');
  let left = size;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left === 0) {
        controller.close();
        return;
      }
      const chunk = randomBytes(Math.min(left, 1 << 20));
      left -= chunk.length;
      hash.update(chunk);
      controller.enqueue(chunk);
    },
  });
  return { body, sha: () => hash.digest('hex') };
}

/** Sends `body` with `method` (a PUT of the server's URLs, a POST of E2B's), streamed. */
export function sendBody(url: string, method: string, body: RequestInit['body']): Promise<Response> {
  const headers = method === 'POST' ? { 'content-type': 'application/octet-stream' } : undefined;
  return fetch(url, { method, body, headers, duplex: 'half' } as RequestInit);
}
