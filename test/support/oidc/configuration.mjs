/**
 * The oidc-provider configuration of the test OpenID provider (provider.mjs): an authorization server for MCP
 * clients (OAuth 2.1 with dynamic registration, PKCE, and RFC 8707 resource indicators) that issues JWT access
 * tokens for whatever resource server a client names. Only what differs from the package's defaults is here,
 * each with its reason; the defaults are in the package's own `node_modules/oidc-provider/lib/helpers/defaults.js`.
 */

/** The path of the scripted interaction (interaction.mjs); provider.mjs routes it there. */
export const INTERACTION_PATH = '/interaction/';

/**
 * @param options what options.mjs parsed
 * @param signingJwk the private RS256 JWK (with a `kid`) that signs the access tokens; its public half is at jwks_uri
 */
export function providerConfiguration(options, signingJwk) {
  const { scopes, accessTokenTtlS, accountId, defaultResource } = options;
  return {
    jwks: { keys: [signingJwk] },

    // The one account: the scripted sign-in logs it in, and the tokens' `sub` is its id.
    findAccount(_ctx, sub) {
      if (sub !== accountId) return undefined;
      return { accountId, claims: () => ({ sub: accountId }) };
    },

    // The resource's scopes listed beside OpenID's own, so that discovery advertises them (scopes_supported) and a
    // client may register with them: MCP clients register with the scope the resource metadata names.
    scopes: ['openid', 'offline_access', ...scopes],

    // Every interaction (login, consent) goes to the scripted route instead of HTML pages.
    interactions: { url: (_ctx, interaction) => `${INTERACTION_PATH}${interaction.uid}` },

    features: {
      // Its HTML login and consent pages are what the scripted route replaces.
      devInteractions: { enabled: false },

      // RFC 7591 registration open to anyone (no initial access token), as MCP clients expect. Public clients
      // (token_endpoint_auth_method "none") are allowed by the default clientAuthMethods.
      registration: { enabled: true, initialAccessToken: false },

      // RFC 8707: a `resource` in the authorization and token requests makes the access token a JWT (RFC 9068,
      // header typ "at+jwt") whose `aud` is that resource and whose `scope` holds the granted scopes among `scopes`.
      resourceIndicators: {
        enabled: true,
        // A client that names no resource gets `defaultResource` when one is configured; otherwise the package's
        // default (keep a single granted resource, else none: an opaque token for userinfo only).
        defaultResource: async (_ctx, _client, oneOf) => oneOf ?? defaultResource,
        // Any absolute URL is a resource server (oidc-provider checks the URL), so a test can name its server's
        // dynamic port, or a wrong audience on purpose.
        getResourceServerInfo: async () => ({
          scope: scopes.join(' '),
          accessTokenFormat: 'jwt',
          accessTokenTTL: accessTokenTtlS,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },

    // OAuth 2.1 keeps only the code flow (no implicit, no hybrid): discovery then lists the grants authorization_code
    // and refresh_token only.
    responseTypes: ['code'],

    // OAuth 2.1: every client uses PKCE (the package's default asks it of public clients only); S256 is the only
    // method the package supports.
    pkce: { required: () => true },

    // A refresh token for every client registered with the refresh_token grant, public ones included, without the
    // OpenID Connect `offline_access` scope: the package drops that scope unless the request has prompt=consent,
    // which MCP clients do not send (node_modules/oidc-provider/lib/actions/authorization/scopes.js).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // ...and the tokens live on when the scripted browser's session is gone, as offline tokens do (the default ties
    // them to the session unless offline_access was granted).
    expiresWithSession: async () => false,

    // Access tokens without a resource (userinfo only) live as long as the JWT ones.
    ttl: { AccessToken: accessTokenTtlS },
  };
}
