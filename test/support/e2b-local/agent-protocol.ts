/**
 * The framing between the service and a sandbox's agent (`agent.js`), over the agent's stdin and stdout:
 * each frame is a 4-byte big-endian header length, a 4-byte big-endian payload length, a JSON header and raw
 * payload bytes (process output, file contents), so binary data crosses without base64. agent.js has its own
 * copy of this (it runs inside the sandbox, plain JS).
 *
 * Egress connections (agent-connections.ts on this side): the agent listens on 127.0.0.1:EGRESS_PORT inside the
 * sandbox's own network and carries each connection it accepts as frames without an `id`, keyed by a number the
 * agent picks:
 *
 * - `{t:'conn', key}` (agent → service): a process connected; the connection is open both ways.
 * - `{t:'cdata', key}` + bytes (both ways): at most CONNECTION_CHUNK_BYTES a frame.
 * - `{t:'cack', key, n}` (both ways): `n` bytes of `cdata` were passed on (written to the socket inside, or taken
 *   by the proxy outside). Each side sends at most CONNECTION_WINDOW_BYTES that the other has not acknowledged;
 *   the agent stops reading its socket meanwhile, and the service holds the proxy's writes.
 * - `{t:'ceof', key}` (both ways): that side sends no more (a half close).
 * - `{t:'cclose', key}` (both ways): the connection is over (reset, or done both ways); nothing more for it.
 *
 * At most MAX_CONNECTIONS are open per sandbox: the agent closes one more at once, and the service answers a
 * `conn` beyond them with `cclose`.
 */

/** The egress listener's port on 127.0.0.1 inside each sandbox (agent.js has the same number). */
export const EGRESS_PORT = 3128;
/** Open egress connections per sandbox (agent.js has the same number). */
export const MAX_CONNECTIONS = 64;
/** The most bytes of one `cdata` frame. */
export const CONNECTION_CHUNK_BYTES = 64 * 1024;
/** Unacknowledged bytes one side may have sent on a connection (agent.js has the same number). */
export const CONNECTION_WINDOW_BYTES = 256 * 1024;

export interface Frame {
  readonly header: Record<string, unknown>;
  readonly payload: Buffer;
}

const EMPTY = Buffer.alloc(0);

/** The bytes of one frame. */
export function encodeFrame(header: Record<string, unknown>, payload: Buffer = EMPTY): Buffer[] {
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(json.length, 0);
  prefix.writeUInt32BE(payload.length, 4);
  return payload.length === 0 ? [Buffer.concat([prefix, json])] : [Buffer.concat([prefix, json]), payload];
}

/** Turns a byte stream into frames, however it was chunked. */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;

  /** Adds `chunk`; returns the frames it completed. */
  push(chunk: Buffer): Frame[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.buffered < 8) break;
      const prefix = this.peek(8);
      const headerLength = prefix.readUInt32BE(0);
      const payloadLength = prefix.readUInt32BE(4);
      const total = 8 + headerLength + payloadLength;
      if (this.buffered < total) break;
      const bytes = this.take(total);
      const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, unknown>;
      frames.push({ header, payload: bytes.subarray(8 + headerLength) });
    }
    return frames;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    const first = this.chunks[0]!;
    const taken = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return taken;
  }
}
