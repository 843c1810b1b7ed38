/**
 * Sign-in as the big connector hosts do it: the official MCP client (v2) knows only the server's URL, meets a 401,
 * and finds everything else itself: the resource metadata (RFC 9728), the authorization server (RFC 8414), dynamic
 * client registration, authorization code with PKCE at a real OpenID provider (oidc-provider on loopback, consent
 * scripted: test/support/oidc-provider.ts), the token for this resource (RFC 8707), then a tool call on the built
 * bundle. The refusals of single tokens are test/core/oauth.test.ts.
 */
import {
  Client,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';

import { initializeBody, postMcp } from '../support/http';
import { completeAuthorization, startOidcProvider, stopAllOidcProviders } from '../support/oidc-provider';
import { findFreePort, type StartedServer, startServer, stopAllServers } from '../support/server';

const REDIRECT_URL = 'http://127.0.0.1:1/callback';
const STATIC_TOKEN = 'static-token-0123456789abcdef-0123456789';

afterAll(async () => {
  await stopAllServers();
  await stopAllOidcProviders();
});

/**
 * What an MCP host keeps for one server: its registration, its tokens, the PKCE verifier, what discovery found (so
 * that the callback is checked against the authorization server the redirect went to), the URL it sent the user to.
 */
class ScriptedHost implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  private discovered: OAuthDiscoveryState | undefined;
  private info: Awaited<ReturnType<OAuthClientProvider['clientInformation']>>;
  private stored: Awaited<ReturnType<OAuthClientProvider['tokens']>>;
  private verifier = '';

  get redirectUrl(): string {
    return REDIRECT_URL;
  }
  get clientMetadata() {
    return {
      client_name: 'e2e host',
      redirect_uris: [REDIRECT_URL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: NonNullable<ScriptedHost['info']>) {
    this.info = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: NonNullable<ScriptedHost['stored']>) {
    this.stored = tokens;
  }
  /** Replaces the access token (as one that went stale would be), keeping the refresh token. */
  spoilAccessToken(): void {
    if (this.stored !== undefined) this.stored = { ...this.stored, access_token: 'stale-access-token' };
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovered = state;
  }
  discoveryState() {
    return this.discovered;
  }
}

async function startOAuthServer(
  extraEnv: Record<string, string> = {},
): Promise<{ server: StartedServer; issuer: string }> {
  const provider = await startOidcProvider();
  const port = await findFreePort();
  const server = await startServer({
    port,
    env: {
      MCP_OAUTH_ISSUER: provider.issuer,
      MCP_PUBLIC_URL: `http://127.0.0.1:${port}`,
      MCP_OAUTH_SCOPES: 'mcp:tools',
      ...extraEnv,
    },
  });
  return { server, issuer: provider.issuer };
}

/** Connects as a host that has never seen the server: 401, discovery, registration, sign-in, token. */
async function signIn(server: StartedServer, host: ScriptedHost): Promise<Client> {
  const first = new Client({ name: 'e2e-oauth', version: '1.0.0' });
  await expect(
    first.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: host })),
  ).rejects.toBeInstanceOf(UnauthorizedError);
  expect(host.authorizationUrl).toBeDefined();
  const callback = await completeAuthorization(host.authorizationUrl as URL);
  expect(callback.searchParams.get('code')).toBeTruthy();
  await new StreamableHTTPClientTransport(new URL(server.url), { authProvider: host }).finishAuth(
    callback.searchParams,
  );
  const client = new Client({ name: 'e2e-oauth', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: host }));
  return client;
}

it(
  'signs in from the URL alone (discovery, registration, ' + 'PKCE, token for this resource) and calls a tool',
  async () => {
    const { server, issuer } = await startOAuthServer();
    const host = new ScriptedHost();
    const client = await signIn(server, host);
    const result = await client.callTool({ name: 'sandbox_status', arguments: {} });
    expect(result.isError).toBeFalsy();
    // The authorization went to the provider the server named, for this server as the resource, asking its scope.
    const authorization = host.authorizationUrl as URL;
    expect(authorization.origin).toBe(issuer);
    expect(authorization.searchParams.get('resource')).toBe(server.url);
    expect(authorization.searchParams.get('scope')).toContain('mcp:tools');
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    await client.close();
  },
);

it('refreshes a stale access token and goes on with the same subject', async () => {
  const { server } = await startOAuthServer();
  const host = new ScriptedHost();
  const signedIn = await signIn(server, host);
  const firstToken = host.tokens()?.access_token;
  await signedIn.close();
  host.spoilAccessToken();
  // The server answers the stale token 401 invalid_token; the client refreshes with its refresh token and retries.
  const client = new Client({ name: 'e2e-oauth', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { authProvider: host });
  await client.connect(transport);
  const refreshed = host.tokens()?.access_token;
  expect(refreshed).toBeDefined();
  expect(refreshed).not.toBe('stale-access-token');
  expect(refreshed).not.toBe(firstToken);
  expect((await client.callTool({ name: 'sandbox_status', arguments: {} })).isError).toBeFalsy();
  // The session opened with the refreshed token is the subject's: the first token (same subject) may use it too.
  const call = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'sandbox_status', arguments: {} } };
  const withFirst = await postMcp(server.url, call, {
    authorization: `Bearer ${firstToken}`,
    'mcp-session-id': transport.sessionId ?? '',
    'mcp-protocol-version': '2025-11-25',
  });
  expect(withFirst.status).toBe(200);
  await client.close();
});

it("takes static tokens beside OAuth, and their sessions are not the subject's", async () => {
  const { server } = await startOAuthServer({ MCP_AUTH_TOKENS: STATIC_TOKEN });
  const opened = await postMcp(server.url, initializeBody(), { authorization: `Bearer ${STATIC_TOKEN}` });
  expect(opened.status).toBe(200);
  const sessionId = opened.headers.get('mcp-session-id') ?? '';
  const host = new ScriptedHost();
  const client = await signIn(server, host);
  const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'sandbox_status', arguments: {} } };
  const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  expect((await postMcp(server.url, call, { ...headers, authorization: `Bearer ${STATIC_TOKEN}` })).status).toBe(200);
  expect(
    (await postMcp(server.url, call, { ...headers, authorization: `Bearer ${host.tokens()?.access_token}` })).status,
  ).toBe(404);
  await client.close();
});
