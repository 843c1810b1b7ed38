/**
 * What the E2B backend writes into a sandbox's metadata at creation (fixed from then on, and visible to anyone
 * with the API key): tags that find the sandbox again without revealing a session, a credential or a token, and,
 * for a named sandbox, its name and key (a handle needs MCP_SESSION_SECRET besides, as every id does).
 */
import { hashTag } from '../../hash-tag';

/** The metadata keys. */
export const E2B_METADATA = Object.freeze({
  /** toTag of the sandbox's key. */
  session: 'mcp_session',
  /** toTag of the owner's principal (the same as toOwnerTag). */
  owner: 'mcp_owner',
  /** The server's name, and its version. */
  server: 'mcp_server',
  version: 'mcp_version',
  /** A named sandbox's name and key. */
  name: 'mcp_name',
  key: 'mcp_key',
  /** An unnamed sandbox: until when (ms since the epoch) an id or handle can name it. */
  until: 'mcp_until',
  /** When it was created, on the server's clock (ms since the epoch). */
  created: 'mcp_created',
  /** How it sleeps: `memory` or `files`. */
  sleep: 'mcp_sleep',
  /** The template it was made from, and the snapshot a fork was made from. */
  template: 'mcp_template',
  snapshot: 'mcp_snapshot',
});

/** A stable, non-reversible tag for metadata (E2B metadata is visible to anyone with the API key). */
export function toTag(value: string): string {
  return hashTag(value, 24);
}
