/** Which protocol revisions each entry serves, and the negotiation rule (FACTS.md §1, §2). */

/** Over HTTP, preferred first: the 2025 era of Streamable HTTP. */
export const HTTP_PROTOCOL_VERSIONS: readonly string[] = Object.freeze(['2025-11-25', '2025-06-18', '2025-03-26']);

/** Over stdio, which also serves the 2024-11-05 clients. */
export const STDIO_PROTOCOL_VERSIONS: readonly string[] = Object.freeze([...HTTP_PROTOCOL_VERSIONS, '2024-11-05']);

/** The revision batches are allowed in (JSON-RPC batching was removed in 2025-06-18). */
export const BATCH_PROTOCOL_VERSION = '2025-03-26';

