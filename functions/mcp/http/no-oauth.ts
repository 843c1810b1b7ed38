/**
 * What OAuth-first clients meet while this server has no OAuth. MCP clients (the SDKs, mcp-remote) answer a
 * 401 by looking for OAuth metadata (RFC 9728, RFC 8414, OpenID discovery) and then registering a client
 * (`POST /register`). Each of those paths answers 404 with a JSON body shaped as an OAuth error, whose
 * description (which the SDK clients put in the error they raise) says to send a bearer token instead.
 */

/** Metadata documents a client looks for, at the root and with the resource's path after or before them. */
const WELL_KNOWN = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
];
/** The endpoints a client falls back to when it finds no metadata. */
const ENDPOINTS = new Set(['/register', '/authorize', '/token']);

/** What the 404 says (the `no_oauth` row of http/refusals.ts): this server takes a bearer token, and how to pass
 * one. */
export const NO_OAUTH_MESSAGE =
  'This server does not use OAuth: it takes a bearer token in the Authorization header ("Authorization: Bearer ' +
  '<token>", ' +
  'a token its operator gives you). Configure your client to send that header; with mcp-remote: ' +
  'npx mcp-remote https://<host>/mcp --header "Authorization: Bearer ${TOKEN}".';

/** True for a path an OAuth client asks for while it tries to authorize with this server. */
export function isOAuthPath(path: string): boolean {
  if (ENDPOINTS.has(path)) return true;
  return WELL_KNOWN.some((doc) => path === doc || path.startsWith(`${doc}/`) || path.endsWith(doc));
}
