/**
 * The server as an OAuth 2.1 resource server (MCP_OAUTH_ISSUER), in-process, against a hand-driven issuer on
 * loopback (test/support/oauth-issuer.ts): its metadata and challenges, every token it must refuse and why, tokens of
 * one subject sharing sessions, and static tokens beside OAuth.
 */
import { SignJWT } from 'jose';

import { createHarness, HARNESS_TOKEN, HARNESS_URL, type Harness, type HarnessOptions } from '../support/harness';
import { initializeBody, type RawResponse, request } from '../support/http';
import { startTestIssuer, stopAllTestIssuers, type TestIssuer, type TestIssuerOptions } from '../support/oauth-issuer';

const PUBLIC_URL = 'https://mcp.example.com';
const RESOURCE = `${PUBLIC_URL}/mcp`;
const METADATA_URL = `${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp`;

afterAll(stopAllTestIssuers);

async function setUp(
  options: { issuer?: Partial<TestIssuerOptions>; env?: Record<string, string>; harness?: HarnessOptions } = {},
): Promise<{ h: Harness; issuer: TestIssuer }> {
  let now = (): number => Date.now();
  const issuer = await startTestIssuer({ audience: RESOURCE, now: () => now(), ...options.issuer });
  const h = createHarness({
    ...options.harness,
    env: { MCP_OAUTH_ISSUER: issuer.issuer, MCP_PUBLIC_URL: PUBLIC_URL, MCP_OAUTH_SCOPES: 'mcp:tools', ...options.env },
  });
  now = () => h.clock.now();
  return { h, issuer };
}

const initialize = (h: Harness, token: string | undefined): Promise<RawResponse> =>
  h.post(initializeBody(), token === undefined ? { authorization: '' } : { authorization: `Bearer ${token}` });

/** A JWT with `alg: none`: no signature at all. */
function unsignedToken(payload: Record<string, unknown>): string {
  const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(payload)}.`;
}

describe('metadata and challenges', () => {
  it('serves the RFC 9728 document at both well-known paths, without a token', async () => {
    const { h, issuer } = await setUp();
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await request(new URL(path, HARNESS_URL).href, {}, h.fetch);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        resource: RESOURCE,
        authorization_servers: [issuer.issuer],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
        resource_name: 'Sandbox MCP server',
      });
    }
    // The server is no authorization server: registration and the rest are plain 404s, not the no-OAuth hint.
    const register = await request(new URL('/register', HARNESS_URL).href, { method: 'POST' }, h.fetch);
    expect(register.status).toBe(404);
    expect(register.text).not.toContain('does not use OAuth');
  });

  it('answers a request without a token 401, pointing at the metadata and naming the scope', async () => {
    const { h } = await setUp();
    const res = await initialize(h, undefined);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${METADATA_URL}", scope="mcp:tools"`);
  });
});

describe('a valid access token', () => {
  it('opens a session and calls a tool; the session belongs to the subject, not to the token', async () => {
    const { h, issuer } = await setUp();
    const first = await issuer.mint();
    const client = await h.connect({ token: first });
    expect((await client.callTool('sandbox_status')).isError).toBeFalsy();
    const { sessionId, headers } = await h.openSession({ token: first });
    // A refreshed token (same subject, later iat, another jti) goes on with the session.
    h.clock.advance(60_000);
    const refreshed = await issuer.mint({ claims: { jti: 'second' } });
    expect(refreshed).not.toBe(first);
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'sandbox_status', arguments: {} } };
    expect((await h.post(call, { ...headers, authorization: `Bearer ${refreshed}` })).status).toBe(200);
    // Another subject's token does not see it: 404, as for a session that does not exist.
    const stranger = await issuer.mint({ claims: { sub: 'user-2' } });
    const refused = await h.post(call, { ...headers, authorization: `Bearer ${stranger}` });
    expect(refused.status).toBe(404);
    // Nor does a static token.
    expect((await h.post(call, { ...headers, authorization: `Bearer ${HARNESS_TOKEN}` })).status).toBe(404);
    expect(sessionId).toBeTruthy();
    await client.close();
  });

  it('is found through OpenID discovery when the issuer has no RFC 8414 document', async () => {
    const { h, issuer } = await setUp({ issuer: { rfc8414: false } });
    expect((await initialize(h, await issuer.mint())).status).toBe(200);
    expect(issuer.hits.get('/.well-known/openid-configuration')).toBe(1);
  });

  it(
    'signed by a key that rotated in after the keys were fetched is accepted: ' + 'the keys are fetched again, once',
    async () => {
      const { h, issuer } = await setUp({ harness: { oauth: { jwksCooldownMs: 0 } } });
      expect((await initialize(h, await issuer.mint())).status).toBe(200);
      expect(issuer.hits.get('/jwks')).toBe(1);
      await issuer.rotate();
      expect((await initialize(h, await issuer.mint())).status).toBe(200);
      expect(issuer.hits.get('/jwks')).toBe(2);
      // Keys it holds are not fetched again.
      expect((await initialize(h, await issuer.mint())).status).toBe(200);
      expect(issuer.hits.get('/jwks')).toBe(2);
    },
  );

  it('leaves the static tokens working beside OAuth', async () => {
    const { h } = await setUp();
    expect((await initialize(h, HARNESS_TOKEN)).status).toBe(200);
  });
});

describe('refused tokens', () => {
  const refusals: Array<[string, (issuer: TestIssuer, h: Harness) => Promise<string>]> = [
    ['for another audience', (issuer) => issuer.mint({ claims: { aud: 'https://other.example.com/mcp' } })],
    [
      'expired (past the leeway)',
      (issuer, h) => issuer.mint({ claims: { exp: Math.floor(h.clock.now() / 1000) - 120 } }),
    ],
    [
      'not yet valid (past the leeway)',
      (issuer, h) => issuer.mint({ claims: { nbf: Math.floor(h.clock.now() / 1000) + 120 } }),
    ],
    ['from another issuer', (issuer) => issuer.mint({ claims: { iss: 'https://evil.example.com' } })],
    ['without a subject', (issuer) => issuer.mint({ claims: { sub: undefined } })],
    [
      'signed by a key the issuer does not publish',
      async (issuer) => issuer.mint({ key: await issuer.unpublishedKey() }),
    ],
    [
      'signed by another key under a published kid',
      async (issuer) => issuer.mint({ key: await issuer.unpublishedKey(), kid: issuer.currentKey().kid }),
    ],
    [
      'with alg none',
      async (issuer, h) =>
        unsignedToken({
          iss: issuer.issuer,
          aud: RESOURCE,
          sub: 'user-1',
          scope: 'mcp:tools',
          exp: Math.floor(h.clock.now() / 1000) + 300,
        }),
    ],
    [
      'signed with HMAC keyed by the public key',
      async (issuer, h) =>
        new SignJWT({
          iss: issuer.issuer,
          aud: RESOURCE,
          sub: 'user-1',
          scope: 'mcp:tools',
          exp: Math.floor(h.clock.now() / 1000) + 300,
        })
          .setProtectedHeader({ alg: 'HS256', kid: issuer.currentKey().kid })
          .sign(new TextEncoder().encode(JSON.stringify(issuer.currentKey().publicJwk))),
    ],
    ['that is not a JWT', async () => 'not-a-jwt'],
  ];

  it.each(refusals)('refuses a token %s with 401 invalid_token', async (_name, make) => {
    const { h, issuer } = await setUp();
    const res = await initialize(h, await make(issuer, h));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${METADATA_URL}", scope="mcp:tools", error="invalid_token"`,
    );
    // Why is in the log, never the token.
    const line = h.logs().find((l) => l.msg === 'request' && l.status === 401);
    expect(line).toMatchObject({ error_code: 'auth_invalid', auth_detail: expect.any(String) });
  });

  it(
    'refuses a token signed with an algorithm the issuer does not ' + 'publish (RS256 where it signs with ES256 only)',
    async () => {
      const { h, issuer } = await setUp({ issuer: { algorithms: ['ES256'] } });
      const res = await initialize(h, await issuer.mint());
      expect(res.status).toBe(401);
      expect(h.logs().find((l) => l.msg === 'request' && l.status === 401)).toMatchObject({
        auth_detail: expect.stringContaining('alg'),
      });
    },
  );

  it('refuses a token without a required scope with 403 insufficient_scope', async () => {
    const { h, issuer } = await setUp();
    const res = await initialize(h, await issuer.mint({ claims: { scope: 'openid profile' } }));
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${METADATA_URL}", scope="mcp:tools", error="insufficient_scope"`,
    );
    expect(JSON.stringify(res.json)).toContain('missing scope mcp:tools');
  });

  it('answers 503 with Retry-After, not 401, when the issuer cannot be reached', async () => {
    const { h, issuer } = await setUp();
    const token = await issuer.mint();
    await issuer.stop();
    const res = await initialize(h, token);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('10');
  });
});

describe('opaque tokens (RFC 7662 introspection)', () => {
  const client = { id: 'mcp-server', secret: 'introspection-secret-0123456789' };
  const withIntrospection = {
    issuer: { introspectionClient: client },
    env: { MCP_OAUTH_INTROSPECTION_CLIENT_ID: client.id, MCP_OAUTH_INTROSPECTION_CLIENT_SECRET: client.secret },
  };
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'sandbox_status', arguments: {} } };

  it(
    'takes an active token for this server, asks once while it is ' +
      'remembered, and gives its session to its subject',
    async () => {
      const { h, issuer } = await setUp(withIntrospection);
      const token = issuer.mintOpaque();
      const { headers } = await h.openSession({ token });
      expect((await h.post(call, headers)).status).toBe(200);
      expect(issuer.hits.get('/introspect')).toBe(1);
      // A JWT of the same subject may use the session too.
      expect((await h.post(call, { ...headers, authorization: `Bearer ${await issuer.mint()}` })).status).toBe(200);
      // Remembered for a minute at most: then the issuer is asked again.
      h.clock.advance(61_000);
      expect((await h.post(call, headers)).status).toBe(200);
      expect(issuer.hits.get('/introspect')).toBe(2);
      // Neither the token nor the server's client secret is in any log line.
      const logged = JSON.stringify(h.logs());
      expect(logged).not.toContain(token);
      expect(logged).not.toContain(client.secret);
    },
  );

  const refusals: Array<[string, Record<string, unknown>]> = [
    ['not active', { active: false }],
    ['for another audience', { aud: 'https://other.example.com/mcp' }],
    ['from another issuer', { iss: 'https://evil.example.com' }],
    ['expired', { exp: Math.floor(Date.parse('2030-01-01T00:00:00Z') / 1000) - 120 }],
    ['without a subject', { sub: undefined }],
  ];
  it.each(refusals)('refuses a token %s with 401 invalid_token', async (_name, claims) => {
    const { h, issuer } = await setUp(withIntrospection);
    const res = await initialize(h, issuer.mintOpaque(claims));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('refuses a token without a required scope with 403', async () => {
    const { h, issuer } = await setUp(withIntrospection);
    expect((await initialize(h, issuer.mintOpaque({ scope: 'openid' }))).status).toBe(403);
  });

  it(
    'answers 503 when the issuer refuses the server as a client, ' + 'and refuses opaque tokens without credentials',
    async () => {
      const wrongSecret = await setUp({
        ...withIntrospection,
        env: { ...withIntrospection.env, MCP_OAUTH_INTROSPECTION_CLIENT_SECRET: 'not-the-secret' },
      });
      expect((await initialize(wrongSecret.h, wrongSecret.issuer.mintOpaque())).status).toBe(503);
      const noCredentials = await setUp({ issuer: { introspectionClient: client } });
      expect((await initialize(noCredentials.h, noCredentials.issuer.mintOpaque())).status).toBe(401);
      expect(noCredentials.issuer.hits.get('/introspect')).toBeUndefined();
    },
  );
});

describe('per-credential shares count per subject', () => {
  it("a subject's second token shares its first's share; another subject has its own", async () => {
    const { h, issuer } = await setUp({ env: { MCP_MAX_SESSIONS: '5', MCP_MAX_SESSIONS_PER_CREDENTIAL: '1' } });
    const evictions = (): number => h.logs().filter((line) => line.msg === 'session evicted').length;
    await h.openSession({ token: await issuer.mint({ claims: { jti: 'a-1' } }) });
    // The same subject with another token is at its share of one: its idle session is let go for the new one.
    await h.openSession({ token: await issuer.mint({ claims: { jti: 'a-2' } }) });
    expect(evictions()).toBe(1);
    // Another subject has a share of its own: nothing is let go for it.
    await h.openSession({ token: await issuer.mint({ claims: { sub: 'user-2' } }) });
    expect(evictions()).toBe(1);
  });
});
