/**
 * The OAuth part of the configuration (MCP_OAUTH_*, MCP_PUBLIC_URL): with MCP_OAUTH_ISSUER set, the server is an
 * OAuth 2.1 resource server (docs/oauth.md) that takes JWT access tokens from that issuer beside any static tokens.
 */

/** OAuth resource-server settings. */
export interface OAuthConfig {
  /** MCP_OAUTH_ISSUER: the authorization server's issuer identifier, exactly as its tokens' `iss` carries it. */
  readonly issuer: string;
  /** `<MCP_PUBLIC_URL>/mcp`: this server's endpoint as clients address it (RFC 8707 resource, RFC 9728 `resource`). */
  readonly resource: string;
  /** `<MCP_PUBLIC_URL>/.well-known/oauth-protected-resource/mcp`: the metadata document a 401 points clients at. */
  readonly metadataUrl: string;
  /** MCP_OAUTH_AUDIENCE: the `aud` every token must carry. @default resource */
  readonly audience: string;
  /** MCP_OAUTH_SCOPES (space-separated): scopes every token must carry. @default none */
  readonly scopes: readonly string[];
  /**
   * MCP_OAUTH_INTROSPECTION_CLIENT_ID and _SECRET: this server's client at the issuer, to ask its RFC 7662
   * introspection endpoint about access tokens that are not JWTs. @default none: only JWTs are taken. The secret is
   * never logged.
   */
  readonly introspection: { readonly clientId: string; readonly clientSecret: string } | undefined;
}

type Env = Record<string, string | undefined>;

/** RFC 6749 §3.3 scope-token: printable ASCII but space, `"` and `\` (so it can go in a header's quoted string). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Host names an `http://` issuer may have: the issuer then runs on this machine (a test or a local provider). */
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Reads the OAuth settings; `undefined` when MCP_OAUTH_ISSUER is not set. Problems go to `problems`. */
export function loadOAuthConfig(env: Env, problems: string[]): OAuthConfig | undefined {
  const issuer = env.MCP_OAUTH_ISSUER?.trim() || undefined;
  if (issuer === undefined) {
    for (const name of [
      'MCP_OAUTH_AUDIENCE',
      'MCP_OAUTH_SCOPES',
      'MCP_OAUTH_INTROSPECTION_CLIENT_ID',
      'MCP_OAUTH_INTROSPECTION_CLIENT_SECRET',
    ] as const) {
      if (env[name]?.trim())
        problems.push(`${name} needs MCP_OAUTH_ISSUER (the authorization server whose tokens to accept)`);
    }
    return undefined;
  }
  const issuerUrl = parseUrl(issuer);
  if (issuerUrl === undefined || issuerUrl.search !== '' || issuerUrl.hash !== '') {
    problems.push(`MCP_OAUTH_ISSUER must be an https URL without query or fragment (got "${issuer}")`);
  } else if (
    issuerUrl.protocol !== 'https:' &&
    !(issuerUrl.protocol === 'http:' && LOOPBACK_NAMES.has(issuerUrl.hostname))
  ) {
    problems.push(
      `MCP_OAUTH_ISSUER must use https (http only for an issuer on 127.0.0.1, localhost or [::1]; got "${issuer}")`,
    );
  }
  const origin = readPublicUrl(env, problems);
  if (!env.MCP_PUBLIC_URL?.trim()) {
    problems.push(
      'MCP_OAUTH_ISSUER needs MCP_PUBLIC_URL: the https origin clients reach this server at (e.g. ' +
        'https://mcp.example.com), which names the resource its tokens are for',
    );
  }
  const scopes = (env.MCP_OAUTH_SCOPES ?? '').split(/\s+/).filter((scope) => scope !== '');
  if (scopes.some((scope) => !SCOPE_TOKEN.test(scope)))
    problems.push('MCP_OAUTH_SCOPES must be scope names separated by spaces, without quotes or backslashes');
  const clientId = env.MCP_OAUTH_INTROSPECTION_CLIENT_ID?.trim() || undefined;
  const clientSecret = env.MCP_OAUTH_INTROSPECTION_CLIENT_SECRET?.trim() || undefined;
  if ((clientId === undefined) !== (clientSecret === undefined)) {
    problems.push(
      'MCP_OAUTH_INTROSPECTION_CLIENT_ID and MCP_OAUTH_INTROSPECTION_CLIENT_SECRET go together: set both to ' +
        'introspect opaque access tokens, or neither',
    );
  }
  const base = origin ?? 'http://invalid';
  const resource = `${base}/mcp`;
  return {
    issuer,
    resource,
    metadataUrl: `${base}/.well-known/oauth-protected-resource/mcp`,
    audience: env.MCP_OAUTH_AUDIENCE?.trim() || resource,
    scopes,
    introspection: clientId !== undefined && clientSecret !== undefined ? { clientId, clientSecret } : undefined,
  };
}

/**
 * MCP_PUBLIC_URL: the origin clients reach this server at, when set and well formed (a problem is noted otherwise);
 * OAuth needs it, and file URLs use it rather than the Host a request came with.
 */
export function readPublicUrl(env: Env, problems: string[]): string | undefined {
  const publicUrl = env.MCP_PUBLIC_URL?.trim() || undefined;
  if (publicUrl === undefined) return undefined;
  const origin = parseUrl(publicUrl);
  if (
    origin === undefined ||
    (origin.protocol !== 'https:' && origin.protocol !== 'http:') ||
    origin.pathname !== '/' ||
    origin.search !== '' ||
    origin.hash !== '' ||
    origin.username !== '' ||
    origin.password !== ''
  ) {
    problems.push(
      `MCP_PUBLIC_URL must be an origin such as https://mcp.example.com, without a path, query or credentials ` +
        `(got "${publicUrl}")`,
    );
    return undefined;
  }
  return origin.origin;
}

function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}
