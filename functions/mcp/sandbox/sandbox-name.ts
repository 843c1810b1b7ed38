/**
 * The names a client gives its sandboxes (`open_sandbox`), and the tags that stand for a sandbox's key and its
 * owner where something outside the server's memory must name them (record files, E2B metadata) without
 * revealing either.
 */
import { hashTag } from '../hash-tag';

/**
 * A sandbox name: 1 to 63 letters, digits, `.`, `_` and `-`, starting with a letter or a digit. Short and plain, so
 * that it fits E2B metadata, a log line and a model's memory as it is; case matters.
 */
export const SANDBOX_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** What a name must look like, for messages and tool descriptions. */
export const SANDBOX_NAME_RULE =
  '1 to 63 letters, digits, ".", "_" and "-", starting with a letter or a digit (case matters)';

/** The tag of a sandbox key: names its record and its local workspace (`mcp-sandbox-<tag>`). */
export function toSandboxTag(key: string): string {
  return hashTag(key, 32);
}

/** The tag of a credential (its principal): whose records these are, and E2B's `mcp_owner` metadata. */
export function toOwnerTag(principal: string): string {
  return hashTag(principal, 24);
}
