/**
 * OAuth-first clients (http/no-oauth.ts): while the server has no OAuth, the paths a client walks after a 401
 * (metadata discovery, then client registration) answer 404 with a body saying to send a bearer token and how
 * mcp-remote passes one; the official clients' OAuth flows end with that message. The 401 advertises no
 * metadata document.
 */
import {
  Client as ClientV2,
  type OAuthClientProvider as ProviderV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import type { OAuthClientProvider as ProviderV1 } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { initializeBody, postMcp, request } from '../support/http';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'no-oauth-token-0123456789abcdef0123';
/** What mcp-remote users must be told, as they would type it. */
const MCP_REMOTE_HINT = '--header "Authorization: Bearer ${TOKEN}"';

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
});
afterAll(stopAllServers);

describe('the OAuth paths', () => {
  it.each([
    ['GET', '/.well-known/oauth-protected-resource/mcp'],
    ['GET', '/.well-known/oauth-protected-resource'],
    ['GET', '/.well-known/oauth-authorization-server'],
    ['GET', '/.well-known/openid-configuration'],
    ['POST', '/register'],
    ['GET', '/authorize'],
    ['POST', '/token'],
  ])(
    'answer %s %s with 404 and a JSON body saying to send a bearer token, and how with mcp-remote',
    async (method, path) => {
      const res = await request(`${server.origin}${path}`, {
        method,
        ...(method === 'POST' && {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: ['http://localhost:1/cb'] }),
        }),
      });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = res.json as { error: string; error_description: string; message: string };
      for (const text of [body.message, body.error_description]) {
        expect(text).toContain('bearer token');
        expect(text).toContain('Authorization: Bearer <token>');
        expect(text).toContain(MCP_REMOTE_HINT);
      }
      expect(res.text).not.toContain(TOKEN);
    },
  );

  it('leave other unknown paths with the plain 404', async () => {
    const res = await request(`${server.origin}/nope`);
    expect(res.status).toBe(404);
    expect(res.text).not.toContain('bearer token');
  });
});

describe('the 401 on /mcp', () => {
  /** RFC 6750 §3: `Bearer` and auth-params, each a token or a quoted string. */
  const CHALLENGE =
    /^Bearer( [a-z_]+=("[^"\\]*"|[!#$%&'*+.^_`|~0-9A-Za-z-]+))(, [a-z_]+=("[^"\\]*"|[!#$%&'*+.^_`|~0-9A-Za-z-]+))*$/;

  it(
    'carries a valid Bearer challenge, ' + 'with no resource_metadata (there is no metadata document to point at)',
    async () => {
      const missing = await postMcp(server.url, initializeBody(), {});
      const wrong = await postMcp(server.url, initializeBody(), {
        authorization: 'Bearer not-the-token-0123456789abcdef',
      });
      for (const res of [missing, wrong]) {
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(CHALLENGE);
        expect(res.headers.get('www-authenticate')).not.toContain('resource_metadata');
      }
      expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token", error_description="');
      expect(missing.headers.get('www-authenticate')).not.toContain('error');
    },
  );
});

/** An OAuth client that has nothing yet: on a 401 the SDK discovers metadata and registers a client. */
function freshProvider(): ProviderV1 & ProviderV2 {
  return {
    redirectUrl: 'http://127.0.0.1:1/callback',
    clientMetadata: { client_name: 'no-oauth-test', redirect_uris: ['http://127.0.0.1:1/callback'] },
    clientInformation: () => undefined,
    saveClientInformation: () => undefined,
    tokens: () => undefined,
    saveTokens: () => undefined,
    redirectToAuthorization: () => {
      throw new Error('the flow must not reach the browser');
    },
    saveCodeVerifier: () => undefined,
    codeVerifier: () => 'unused',
  };
}

describe('the official clients’ OAuth flow', () => {
  it('ends in the v1 SDK client (as mcp-remote uses it) with the message', async () => {
    const client = new ClientV1({ name: 'oauth-v1', version: '1.0.0' });
    const failure = await client.connect(new TransportV1(new URL(server.url), { authProvider: freshProvider() })).then(
      () => 'connected',
      (err: unknown) => String(err),
    );
    expect(failure).toContain('Authorization: Bearer <token>');
    expect(failure).toContain(MCP_REMOTE_HINT);
    await client.close();
  });

  it('ends in the v2 client with the message', async () => {
    const client = new ClientV2({ name: 'oauth-v2', version: '1.0.0' });
    const failure = await client.connect(new TransportV2(new URL(server.url), { authProvider: freshProvider() })).then(
      () => 'connected',
      (err: unknown) => String(err),
    );
    expect(failure).toContain('Authorization: Bearer <token>');
    expect(failure).toContain('--header \\"Authorization: Bearer ${TOKEN}\\"'); // the body as it came, JSON-escaped
    await client.close();
  });
});
