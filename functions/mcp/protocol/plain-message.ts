/**
 * The envelope of a plain JSON-RPC 2.0 message, checked by hand: the fast paths (http/early-listener.ts,
 * the endpoint's era shortcut) use it to recognize the common messages without the SDK's zod schemas, and
 * leave anything else to the SDK.
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

/** A JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
