/**
 * What this server tells OAuth clients about itself: its protected-resource metadata (RFC 9728), served at
 * `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource/mcp`, and the
 * `WWW-Authenticate` challenges of its 401 and 403 answers, which point at that document (RFC 9728 §5.1) and name
 * the scopes to ask for (RFC 6750 §3).
 */
import type { OAuthConfig } from '../../config-oauth';

/** The paths the metadata document is served at. */
export const RESOURCE_METADATA_PATHS: readonly string[] = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
];

/** The RFC 9728 document. */
export function resourceMetadata(config: OAuthConfig): Record<string, unknown> {
  return {
    resource: config.resource,
    authorization_servers: [config.issuer],
    ...(config.scopes.length > 0 && { scopes_supported: config.scopes }),
    bearer_methods_supported: ['header'],
    resource_name: 'Sandbox MCP server',
  };
}

/** A `Bearer` challenge; `error` for a token that was sent (RFC 6750 §3.1). Scopes are checked scope-tokens
 * (config-oauth.ts). */
export function bearerChallenge(config: OAuthConfig, error?: 'invalid_token' | 'insufficient_scope'): string {
  const params = [`resource_metadata="${config.metadataUrl}"`];
  if (config.scopes.length > 0) params.push(`scope="${config.scopes.join(' ')}"`);
  if (error !== undefined) params.push(`error="${error}"`);
  return `Bearer ${params.join(', ')}`;
}
