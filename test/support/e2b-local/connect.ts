/**
 * The Connect protocol over JSON, server side, as envd speaks it to the SDK's `@connectrpc/connect-web`
 * transport (`useBinaryFormat: false`): unary calls are a POSTed JSON body answered with JSON (an error is an
 * HTTP status per Connect code plus `{code, message}`); server-streaming calls send one enveloped request
 * message and are answered `200 application/connect+json` with envelopes (1 flag byte, 4-byte big-endian
 * length, JSON), the last one flagged 0x02 and carrying `{}` or `{"error": {code, message}}`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Connect error codes, as written on the wire. */
export type ConnectCode =
  | 'canceled'
  | 'unknown'
  | 'invalid_argument'
  | 'deadline_exceeded'
  | 'not_found'
  | 'already_exists'
  | 'permission_denied'
  | 'resource_exhausted'
  | 'failed_precondition'
  | 'aborted'
  | 'out_of_range'
  | 'unimplemented'
  | 'internal'
  | 'unavailable'
  | 'data_loss'
  | 'unauthenticated';

const HTTP_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

const CODES = new Set(Object.keys(HTTP_STATUS));

export function isConnectCode(value: unknown): value is ConnectCode {
  return typeof value === 'string' && CODES.has(value);
}

/** An RPC failure with its Connect code. */
export class ConnectError extends Error {
  constructor(
    readonly code: ConnectCode,
    message: string,
  ) {
    super(message);
    this.name = 'ConnectError';
  }
}

/** Any thrown value as a ConnectError (`unknown` for what is not one). */
export function asConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return new ConnectError('unknown', err instanceof Error ? err.message : String(err));
}

const END_STREAM_FLAG = 0x02;

/** One envelope: flags, then the big-endian length of `data`, then `data`. */
export function encodeEnvelope(flags: number, data: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt8(flags, 0);
  prefix.writeUInt32BE(data.length, 1);
  return Buffer.concat([prefix, data]);
}

/** The envelopes in a whole body; throws on a truncated one. */
export function decodeEnvelopes(body: Buffer): Array<{ flags: number; data: Buffer }> {
  const envelopes: Array<{ flags: number; data: Buffer }> = [];
  let offset = 0;
  while (offset < body.length) {
    if (body.length - offset < 5) throw new ConnectError('invalid_argument', 'truncated envelope prefix');
    const flags = body.readUInt8(offset);
    const length = body.readUInt32BE(offset + 1);
    if (body.length - offset - 5 < length) throw new ConnectError('invalid_argument', 'truncated envelope');
    envelopes.push({ flags, data: body.subarray(offset + 5, offset + 5 + length) });
    offset += 5 + length;
  }
  return envelopes;
}

/** The whole request body. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('request aborted')));
  });
}

function parseJson(data: Buffer): unknown {
  if (data.length === 0) return {};
  try {
    return JSON.parse(data.toString('utf8')) as unknown;
  } catch (err) {
    throw new ConnectError('invalid_argument', `unmarshal message: ${(err as Error).message}`);
  }
}

function contentType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** The JSON message of a unary call (`application/json`); throws a ConnectError otherwise. */
export async function readUnaryRequest(req: IncomingMessage): Promise<unknown> {
  if (contentType(req) !== 'application/json')
    throw new ConnectError('unimplemented', `unsupported content type ${contentType(req) || '(none)'}`);
  return parseJson(await readBody(req));
}

/** The single enveloped JSON message of a server-streaming call (`application/connect+json`). */
export async function readStreamRequest(req: IncomingMessage): Promise<unknown> {
  if (contentType(req) !== 'application/connect+json')
    throw new ConnectError('unimplemented', `unsupported content type ${contentType(req) || '(none)'}`);
  const envelopes = decodeEnvelopes(await readBody(req));
  if (envelopes.length !== 1 || envelopes[0]!.flags !== 0)
    throw new ConnectError('invalid_argument', `expected one request message, got ${envelopes.length}`);
  return parseJson(envelopes[0]!.data);
}

/** `Connect-Timeout-Ms` in milliseconds; 0 when absent (no deadline). */
export function timeoutOf(req: IncomingMessage): number {
  const raw = req.headers['connect-timeout-ms'];
  const value = Number(Array.isArray(raw) ? raw[0] : raw);
  return Number.isFinite(value) && value > 0 ? value : 0;
}

export function writeUnary(res: ServerResponse, message: unknown): void {
  const body = Buffer.from(JSON.stringify(message ?? {}));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}

export function writeUnaryError(res: ServerResponse, err: ConnectError): void {
  const body = Buffer.from(JSON.stringify({ code: err.code, message: err.message }));
  res.writeHead(HTTP_STATUS[err.code], { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}

/** The response side of a server-streaming call. Headers go out at once (`200`), as connect-go does. */
export class ServerStream {
  private ended = false;
  private readonly closeListeners: Array<() => void> = [];

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { 'Content-Type': 'application/connect+json' });
    res.flushHeaders();
    res.on('close', () => {
      this.ended = true;
      for (const listener of this.closeListeners.splice(0)) listener();
    });
  }

  /** Whether the stream was ended or the client went away. */
  get closed(): boolean {
    return this.ended || this.res.destroyed;
  }

  /** Calls `listener` once the response is closed, by us or by the client. */
  onClose(listener: () => void): void {
    if (this.res.closed) listener();
    else this.closeListeners.push(listener);
  }

  send(message: unknown): void {
    if (this.closed) return;
    this.res.write(encodeEnvelope(0, Buffer.from(JSON.stringify(message))));
  }

  /** Ends the stream, with an error in the end-stream message when given. */
  end(error?: ConnectError): void {
    if (this.closed) return;
    this.ended = true;
    const endStream = error === undefined ? {} : { error: { code: error.code, message: error.message } };
    this.res.end(encodeEnvelope(END_STREAM_FLAG, Buffer.from(JSON.stringify(endStream))));
  }
}

/** What an RPC handler sees of its call besides the message. */
export interface CallContext {
  readonly req: IncomingMessage;
  /** `Connect-Timeout-Ms`, 0 for none. */
  readonly timeoutMs: number;
}

export type UnaryHandler = (message: unknown, ctx: CallContext) => Promise<unknown>;
export type StreamHandler = (message: unknown, stream: ServerStream, ctx: CallContext) => Promise<void>;

/** One Connect service: its unary and server-streaming methods by name. */
export interface ConnectService {
  readonly unary: Readonly<Record<string, UnaryHandler>>;
  readonly serverStream: Readonly<Record<string, StreamHandler>>;
}

/** Serves `POST /<package.Service>/<Method>` with `service`; answers `unimplemented` for unknown methods. */
export async function serveConnect(
  service: ConnectService,
  method: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const ctx: CallContext = { req, timeoutMs: timeoutOf(req) };
  const unary = Object.hasOwn(service.unary, method) ? service.unary[method] : undefined;
  const streaming = Object.hasOwn(service.serverStream, method) ? service.serverStream[method] : undefined;
  if (req.method !== 'POST' || (unary === undefined && streaming === undefined)) {
    req.resume();
    writeUnaryError(res, new ConnectError('unimplemented', `${req.method} ${req.url} is not implemented`));
    return;
  }
  if (unary !== undefined) {
    try {
      writeUnary(res, await unary(await readUnaryRequest(req), ctx));
    } catch (err) {
      if (!res.headersSent) writeUnaryError(res, asConnectError(err));
    }
    return;
  }
  let message: unknown;
  try {
    message = await readStreamRequest(req);
  } catch (err) {
    // A malformed streaming request still gets a streaming answer, its error in the end-stream message.
    new ServerStream(res).end(asConnectError(err));
    return;
  }
  const stream = new ServerStream(res);
  try {
    await streaming!(message, stream, ctx);
  } catch (err) {
    stream.end(asConnectError(err));
  }
}
