/**
 * Which protocol revisions each entry serves. A client that asks for a revision in a list gets it back; any other ask
 * gets the list's first, its preferred (MCP's version negotiation; the eras are in docs/platform-facts.md).
 */

/** Over HTTP, preferred first: the 2025 era of Streamable HTTP, negotiated by `initialize`. */
export const HTTP_PROTOCOL_VERSIONS: readonly string[] = Object.freeze(['2025-11-25', '2025-06-18', '2025-03-26']);

/** Over HTTP on the same `/mcp` too: the 2026-07-28 revision (the modern lane: no `initialize`, no session). */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = Object.freeze(['2026-07-28']);

/** Over stdio, which also serves the 2024-11-05 clients. */
export const STDIO_PROTOCOL_VERSIONS: readonly string[] = Object.freeze([...HTTP_PROTOCOL_VERSIONS, '2024-11-05']);

/** Every revision served, by transport, newest first (what `/health` reports). */
export const PROTOCOL_VERSIONS_BY_TRANSPORT: Readonly<Record<'http' | 'stdio', readonly string[]>> = Object.freeze({
  http: Object.freeze([...MODERN_PROTOCOL_VERSIONS, ...HTTP_PROTOCOL_VERSIONS]),
  stdio: STDIO_PROTOCOL_VERSIONS,
});

/** The revision batches are allowed in (JSON-RPC batching was removed in 2025-06-18). */
export const BATCH_PROTOCOL_VERSION = '2025-03-26';

/** The version `initialize` is answered with: the client's when served, else the preferred one (as the SDK does). */
export function negotiateVersion(requested: string): string {
  return HTTP_PROTOCOL_VERSIONS.includes(requested) ? requested : (HTTP_PROTOCOL_VERSIONS[0] as string);
}
