/** Session ids: minted by the server, ≥ 128 random bits, visible ASCII only. */
import { createHash, randomBytes } from 'node:crypto';

/** A new session id: 192 random bits as base64url (32 characters). */
export function mintSessionId(): string {
  return randomBytes(24).toString('base64url');
}

/** A short, non-reversible tag of a session id for logs and metrics; never the id itself. */
export function toSessionTag(id: string): string {
  return createHash('sha256').update(`mcp-session:${id}`).digest('hex').slice(0, 12);
}

/** True when `value` could be a session id at all (visible ASCII, bounded length). */
export function isWellFormedSessionId(value: string): boolean {
  return value.length > 0 && value.length <= 256 && /^[\x21-\x7e]+$/.test(value);
}
