/**
 * The frames between the server and a sandbox's supervisor (supervisor-source.ts has the Python side): a
 * 10-byte header (payload length u32, kind u8, key u32, fd u8; big endian), then the payload. A key names a
 * process, a port probe or a forwarded connection (a stream); the server draws all three from one counter, so
 * a key never means two things. Connections made from inside to the egress listener are keyed by the supervisor,
 * with ACCEPTED_KEY set.
 */

/** Frame kinds. 1–5 and 9 go to the supervisor, 6–8, 10 and 13 come from it; 2, 3, 11 and 12 go both ways. */
export const Kind = {
  /** JSON {argv, cwd, env, stdin, channel}: start a process. */
  Spawn: 1,
  /** Bytes for a process's fd 0 or 3, from its fd 1–3, or either way on a stream (fd 0). */
  Data: 2,
  /** That fd (or that direction of a stream) ends. */
  Eof: 3,
  /** A signal number, for a process's group. */
  Signal: 4,
  /** A TCP port: does something accept on 127.0.0.1 there? */
  Probe: 5,
  /** JSON {pid} or {error, message}; key 0: the supervisor is ready. */
  Spawned: 6,
  /** JSON {code, signal}: the process exited and its output was read. */
  Exit: 7,
  /** "1" or "0": the probe's answer. */
  Probed: 8,
  /** A TCP port: open a stream to 127.0.0.1 there, inside the sandbox's network. */
  Connect: 9,
  /** Empty: the stream is connected; else an errno name (ECONNREFUSED, ETIMEDOUT). */
  Connected: 10,
  /** A decimal byte count: the other side passed on that many bytes of the stream; that many more may come. */
  Ack: 11,
  /** The stream is over at once, both ways (a reset, an error, or the other side gone). */
  Close: 12,
  /** Empty: a process of the sandbox connected to the egress listener; the key (ACCEPTED_KEY set) is its stream's. */
  Accepted: 13,
} as const;

/** The bit every key the supervisor draws (an accepted stream's) has, and no key the server draws. */
export const ACCEPTED_KEY = 0x8000_0000;
/** Accepted streams a supervisor may hold open at once; the Python side has the same number. */
export const MAX_ACCEPTED_STREAMS = 64;

export const HEADER_BYTES = 10;
/** The supervisor reads 64 KiB at a time; anything far larger is not a frame it wrote. */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** The largest DATA payload the server sends on a stream (what the supervisor reads at a time). */
export const STREAM_CHUNK_BYTES = 65_536;
/**
 * Bytes of one stream that may be on their way in one direction and not yet acknowledged (ACK): what the
 * server holds for a connection at most, each way. The Python side has the same number.
 */
export const STREAM_WINDOW_BYTES = 256 * 1024;

/** The header of a frame whose payload is `payloadBytes` long (the payload follows it on the wire). */
export function encodeFrameHeader(kind: number, key: number, fd: number, payloadBytes: number): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header.writeUInt32BE(payloadBytes, 0);
  header.writeUInt8(kind, 4);
  header.writeUInt32BE(key, 5);
  header.writeUInt8(fd, 9);
  return header;
}
