/** The methods `/mcp` serves: every `Allow` header the server sends about `/mcp` lists exactly these. */

/** The `Allow` header for `/mcp`: POST (messages), DELETE (ending a session), OPTIONS (CORS preflights). */
export const MCP_ALLOW = 'POST, DELETE, OPTIONS';

/** The message of the 405 for any other method on `/mcp`. */
export function mcpMethodNotAllowed(method: string): string {
  return `Method not allowed: ${method} /mcp; use POST (and DELETE to end a session)`;
}

/** True when a request target (`/mcp`, `/mcp?x=1`, `/./mcp`) names `/mcp`, as the router reads it. */
export function targetsMcp(target: string | undefined): boolean {
  try {
    return new URL(`http://localhost${target ?? ''}`).pathname === '/mcp';
  } catch {
    return false;
  }
}
