/**
 * Reading protobuf messages in their canonical JSON form (what `@bufbuild/protobuf` writes): fields under
 * their lowerCamelCase JSON name or their proto name, bytes as base64, enums as names or numbers, 64-bit
 * integers as strings or numbers. And writing the few types that are not plain JSON (Timestamp, int64).
 */
import { ConnectError } from './connect';

export type JsonObject = Record<string, unknown>;

function snakeOf(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The message itself, which must be a JSON object. */
export function objectOf(value: unknown, what = 'message'): JsonObject {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ConnectError('invalid_argument', `${what} must be a JSON object`);
  return value as JsonObject;
}

/** A field by its JSON name (`fooBar`) or proto name (`foo_bar`). */
export function field(message: JsonObject, jsonName: string): unknown {
  if (Object.hasOwn(message, jsonName)) return message[jsonName];
  const protoName = snakeOf(jsonName);
  return Object.hasOwn(message, protoName) ? message[protoName] : undefined;
}

export function stringField(message: JsonObject, name: string): string | undefined {
  const value = field(message, name);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ConnectError('invalid_argument', `${name} must be a string`);
  return value;
}

export function boolField(message: JsonObject, name: string): boolean | undefined {
  const value = field(message, name);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new ConnectError('invalid_argument', `${name} must be a boolean`);
  return value;
}

/** A 32- or 64-bit integer field (numbers or decimal strings). */
export function intField(message: JsonObject, name: string): number | undefined {
  const value = field(message, name);
  if (value === undefined || value === null) return undefined;
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n))
    throw new ConnectError('invalid_argument', `${name} must be an integer`);
  return n;
}

export function objectField(message: JsonObject, name: string): JsonObject | undefined {
  const value = field(message, name);
  return value === undefined || value === null ? undefined : objectOf(value, name);
}

export function stringArrayField(message: JsonObject, name: string): string[] {
  const value = field(message, name);
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw new ConnectError('invalid_argument', `${name} must be a list of strings`);
  return value as string[];
}

export function stringMapField(message: JsonObject, name: string): Record<string, string> {
  const value = objectField(message, name) ?? {};
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new ConnectError('invalid_argument', `${name}.${key} must be a string`);
  }
  return value as Record<string, string>;
}

/** A bytes field: standard or URL-safe base64, padded or not. */
export function bytesOf(value: unknown, name: string): Buffer {
  if (typeof value !== 'string') throw new ConnectError('invalid_argument', `${name} must be base64`);
  return Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

/** An enum field as its value name, given the enum's names by number. */
export function enumField(
  message: JsonObject,
  name: string,
  names: Readonly<Record<number, string>>,
): string | undefined {
  const value = field(message, name);
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return names[value] ?? String(value);
  if (typeof value === 'string') return value;
  throw new ConnectError('invalid_argument', `${name} must be an enum name or number`);
}

/** google.protobuf.Timestamp in JSON: RFC 3339 in UTC. */
export function timestampJson(ms: number): string {
  return new Date(ms).toISOString();
}
