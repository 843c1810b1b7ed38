/**
 * The JSON-RPC 2.0 envelope, checked by hand, in one place: is a body a message or a batch of them, what is its
 * id, which method does it call. The fast paths (early-initialize.ts, the endpoint's era shortcut) use
 * `readPlainMessage` to recognize the common messages without the SDK's zod schemas, and leave anything else to
 * the SDK; the refusals before the SDK (a wrong body, a full instance) use the rest.
 */

/** One JSON-RPC request (`id` present) or notification. */
export interface PlainMessage {
  readonly method: string;
  readonly id?: string | number;
  readonly params?: Readonly<Record<string, unknown>>;
}

const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * `value` as one JSON-RPC request or notification with only the standard members, a string or safe-integer id
 * (or none) and object params (or none); else `undefined`. The SDK's strict request and notification schemas
 * accept every such envelope.
 */
export function readPlainMessage(value: unknown): PlainMessage | undefined {
  if (!isObject(value) || value.jsonrpc !== '2.0' || typeof value.method !== 'string') return undefined;
  for (const key in value) if (!MESSAGE_KEYS.has(key)) return undefined;
  const { id, params } = value;
  if (id !== undefined && typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  if (params !== undefined && !isObject(params)) return undefined;
  return value as unknown as PlainMessage;
}

/** True for a body that is one JSON-RPC 2.0 message object, or a non-empty batch (array) of them. */
export function isJsonRpcEnvelope(body: unknown): boolean {
  const isMessage = (m: unknown): boolean => isObject(m) && m.jsonrpc === '2.0';
  return Array.isArray(body) ? body.length > 0 && body.every(isMessage) : isMessage(body);
}

/** The id of a single message, for the error that answers it; `null` for a batch, a notification, another type. */
export function jsonRpcIdOf(body: unknown): string | number | null {
  const id = isObject(body) ? body.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** True when `value` is a single message (not a batch) calling `method`. */
export function hasMethod<M extends string>(
  value: unknown,
  method: M,
): value is Record<string, unknown> & { method: M } {
  return isObject(value) && value.method === method;
}

/** A JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
