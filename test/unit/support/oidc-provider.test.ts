/**
 * The test OpenID provider (test/support/oidc-provider.ts) does what the OAuth sign-in tests rely on, checked with
 * plain fetch and jose only: discovery, open registration of a public client, an authorization with PKCE S256 and
 * an RFC 8707 resource finished by the scripted browser, a JWT access token for that resource, and a refresh.
 */
import { createHash, randomBytes } from 'node:crypto';

import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';

import {
  completeAuthorization,
  startOidcProvider,
  stopAllOidcProviders,
  type StartedOidcProvider,
} from '../../support/oidc-provider';

/** The resource server the tokens are for; nothing listens there (the provider never calls it). */
const RESOURCE = 'http://127.0.0.1:9/mcp';
/** The client's redirect_uri; completeAuthorization stops at it without fetching it. */
const REDIRECT_URI = 'http://127.0.0.1:1/callback';

interface Metadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
  jwks_uri: string;
  code_challenge_methods_supported: string[];
  grant_types_supported: string[];
  response_types_supported: string[];
}

interface TokenResponse {
  access_token: string;
  refresh_token?: string;
  token_type: string;
  expires_in: number;
  scope?: string;
}

/** The JSON body of a response, after checking its status (the body is in the message when it differs). */
async function jsonOf<T>(response: Response, status = 200): Promise<T> {
  const text = await response.text();
  if (response.status !== status) throw new Error(`expected HTTP ${status}, got ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

async function discover(issuer: string, path = '/.well-known/openid-configuration'): Promise<Metadata> {
  return jsonOf<Metadata>(await fetch(`${issuer}${path}`));
}

/** RFC 7591 registration of a public client (no secret) for the code flow with refresh tokens. */
async function registerPublicClient(metadata: Metadata): Promise<string> {
  const response = await fetch(metadata.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }),
  });
  const client = await jsonOf<{ client_id: string; client_secret?: string; token_endpoint_auth_method: string }>(
    response,
    201,
  );
  expect(client.token_endpoint_auth_method).toBe('none');
  expect(client.client_secret).toBeUndefined();
  return client.client_id;
}

interface Authorized {
  /** Where the scripted browser was sent back to: the redirect_uri with code/state or error. */
  callback: URL;
  state: string;
  codeVerifier: string;
}

/** An authorization request (PKCE S256 unless `pkce` is false), finished by the scripted browser. */
async function authorize(
  metadata: Metadata,
  clientId: string,
  params: { scope: string; resource?: string; pkce?: boolean },
): Promise<Authorized> {
  const codeVerifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const url = new URL(metadata.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: params.scope,
    state,
    ...(params.resource === undefined ? {} : { resource: params.resource }),
    ...(params.pkce === false
      ? {}
      : {
          code_challenge: createHash('sha256').update(codeVerifier).digest('base64url'),
          code_challenge_method: 'S256',
        }),
  }).toString();
  return { callback: await completeAuthorization(url), state, codeVerifier };
}

/** A token request from a public client (client_id in the form, no secret). */
async function requestToken(metadata: Metadata, form: Record<string, string>): Promise<TokenResponse> {
  const response = await fetch(metadata.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return jsonOf<TokenResponse>(response);
}

/** The code from a successful callback, after checking it belongs to this request and this issuer (RFC 9207). */
/** The token request that redeems an authorization code (with its PKCE verifier, and the resource when given). */
function redeemCode(
  metadata: Metadata,
  clientId: string,
  code: string,
  authorized: Authorized,
  resource?: string,
): Promise<TokenResponse> {
  return requestToken(metadata, {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: authorized.codeVerifier,
    ...(resource !== undefined && { resource }),
  });
}

function codeFrom(authorized: Authorized, issuer: string): string {
  const { callback } = authorized;
  expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
  expect(callback.searchParams.get('error')).toBeNull();
  expect(callback.searchParams.get('state')).toBe(authorized.state);
  expect(callback.searchParams.get('iss')).toBe(issuer);
  const code = callback.searchParams.get('code');
  if (code === null) throw new Error(`no code in ${callback.href}`);
  return code;
}

afterAll(stopAllOidcProviders);

describe('the test OpenID provider with its defaults', () => {
  let provider: StartedOidcProvider;
  let metadata: Metadata;

  beforeAll(async () => {
    provider = await startOidcProvider();
    metadata = await discover(provider.issuer);
  });

  it('has a loopback issuer and the same metadata at both discovery paths (OpenID Connect and RFC 8414)', async () => {
    expect(provider.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(metadata.issuer).toBe(provider.issuer);
    expect(await discover(provider.issuer, '/.well-known/oauth-authorization-server')).toEqual(metadata);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.response_types_supported).toEqual(['code']);
    expect(metadata.grant_types_supported.sort()).toEqual(['authorization_code', 'refresh_token']);
    for (const endpoint of [
      metadata.authorization_endpoint,
      metadata.token_endpoint,
      metadata.registration_endpoint,
      metadata.jwks_uri,
    ]) {
      expect(new URL(endpoint).origin).toBe(provider.issuer);
    }
  });

  it('signs a public client in with PKCE, issues a JWT for the resource, and refreshes it', async () => {
    const clientId = await registerPublicClient(metadata);
    const authorized = await authorize(metadata, clientId, { scope: 'mcp:tools', resource: RESOURCE });
    const code = codeFrom(authorized, provider.issuer);

    const tokens = await redeemCode(metadata, clientId, code, authorized, RESOURCE);
    expect(tokens.token_type).toBe('Bearer');
    expect(tokens.scope).toBe('mcp:tools');
    expect(typeof tokens.refresh_token).toBe('string');

    const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
    const verified = await jwtVerify(tokens.access_token, jwks, {
      issuer: provider.issuer,
      audience: RESOURCE,
      typ: 'at+jwt',
    });
    expect(verified.protectedHeader.alg).toBe('RS256');
    expect(verified.payload.sub).toBe('user-1');
    expect(verified.payload.client_id).toBe(clientId);
    expect(String(verified.payload.scope).split(' ')).toContain('mcp:tools');
    // The lifetime is read from the token itself, not from a clock.
    expect((verified.payload.exp ?? 0) - (verified.payload.iat ?? 0)).toBe(300);

    const refreshed = await requestToken(metadata, {
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: tokens.refresh_token ?? '',
      resource: RESOURCE,
    });
    // Public clients get a new refresh token each time (rotation, OAuth 2.1).
    expect(typeof refreshed.refresh_token).toBe('string');
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    const again = await jwtVerify(refreshed.access_token, jwks, {
      issuer: provider.issuer,
      audience: RESOURCE,
      typ: 'at+jwt',
    });
    expect(again.payload.sub).toBe(verified.payload.sub);
    expect(again.payload.scope).toBe('mcp:tools');
    expect(decodeProtectedHeader(refreshed.access_token).kid).toBe(verified.protectedHeader.kid);
  });

  it('grants only the scopes the resource accepts', async () => {
    const clientId = await registerPublicClient(metadata);
    const authorized = await authorize(metadata, clientId, { scope: 'mcp:tools mcp:admin', resource: RESOURCE });
    const tokens = await redeemCode(metadata, clientId, codeFrom(authorized, provider.issuer), authorized, RESOURCE);
    const { payload } = await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(metadata.jwks_uri)), {
      issuer: provider.issuer,
      audience: RESOURCE,
    });
    expect(payload.scope).toBe('mcp:tools');
  });

  it('refuses an authorization request without PKCE, back at the redirect_uri', async () => {
    const clientId = await registerPublicClient(metadata);
    const { callback, state } = await authorize(metadata, clientId, {
      scope: 'mcp:tools',
      resource: RESOURCE,
      pkce: false,
    });
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get('error')).toBe('invalid_request');
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('code')).toBeNull();
  });
});

describe('the test OpenID provider with options', () => {
  const OTHER_RESOURCE = 'http://127.0.0.1:9/other';

  it('uses the given account, scopes, token lifetime and default resource', async () => {
    const provider = await startOidcProvider({
      accountId: 'alice',
      scopes: ['mcp:tools', 'mcp:admin'],
      accessTokenTtlS: 120,
      defaultResource: OTHER_RESOURCE,
    });
    const metadata = await discover(provider.issuer);
    const clientId = await registerPublicClient(metadata);
    // No resource in either request: the default one is used.
    const authorized = await authorize(metadata, clientId, { scope: 'mcp:tools mcp:admin' });
    const tokens = await redeemCode(metadata, clientId, codeFrom(authorized, provider.issuer), authorized);
    const { payload } = await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(metadata.jwks_uri)), {
      issuer: provider.issuer,
      audience: OTHER_RESOURCE,
    });
    expect(payload.sub).toBe('alice');
    expect(String(payload.scope).split(' ').sort()).toEqual(['mcp:admin', 'mcp:tools']);
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(120);
    expect(tokens.expires_in).toBeLessThanOrEqual(120);
    await provider.stop();
  });

  it('fails to start, with the reason, on an unknown option', async () => {
    await expect(startOidcProvider({ scope: ['x'] } as never)).rejects.toThrow(/unknown option "scope"/);
  });
});
