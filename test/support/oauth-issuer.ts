/**
 * A hand-driven OAuth issuer on loopback, for the refusals a real provider never makes: it publishes RFC 8414
 * metadata (or only OpenID discovery) and a JWKS, and mints access tokens signed as the test asks (another
 * audience, expired, unknown key, wrong key under a published kid, `alg: none`, an HMAC keyed with the public key).
 * The complete sign-in against a real OpenID provider is test/support/oidc-provider.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export interface MintOptions {
  /** Claims over the defaults (iss, aud, sub, scope, iat, exp). `undefined` removes a claim. */
  claims?: Record<string, unknown>;
  /** Sign with this key instead of the current one (e.g. one never published). */
  key?: SigningKey;
  /** The `kid` header; `null` for none. @default the signing key's */
  kid?: string | null;
}

export interface TestIssuer {
  readonly issuer: string;
  /** An opaque token its introspection endpoint answers for with these claims over the defaults (active, aud, sub…). */
  mintOpaque(claims?: Record<string, unknown>): string;
  /** Mints a token for `audience` (the server's resource) that the issuer's current key signs. */
  mint(options?: MintOptions): Promise<string>;
  /** A key the JWKS does not publish. */
  unpublishedKey(): Promise<SigningKey>;
  /** Publishes a new current key (the old one stays published, as in a rotation). */
  rotate(): Promise<SigningKey>;
  /** The key a token is signed with by default. */
  currentKey(): SigningKey;
  /** Requests the issuer has served, by path. */
  readonly hits: Map<string, number>;
  stop(): Promise<void>;
}

export interface TestIssuerOptions {
  /** The `aud` of minted tokens. */
  audience: string;
  /** Time for `iat` and `exp` (the harness's fake clock). */
  now: () => number;
  /** Publish RFC 8414 metadata (`oauth-authorization-server`); false: OpenID discovery only. @default true */
  rfc8414?: boolean;
  /** `id_token_signing_alg_values_supported` in the metadata. @default ['RS256'] */
  algorithms?: string[];
  /** The client allowed to introspect (HTTP Basic at `/introspect`, published as introspection_endpoint). @default
   * none */
  introspectionClient?: { id: string; secret: string };
  /** Holds the introspection answer for `token` until the promise it returns settles (a slow provider). @default none
   * held */
  introspectionDelay?: (token: string) => Promise<void> | undefined;
}

let keyCount = 0;

async function newKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  keyCount += 1;
  const kid = `key-${keyCount}`;
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

const started = new Set<Server>();

export async function startTestIssuer(options: TestIssuerOptions): Promise<TestIssuer> {
  const published: SigningKey[] = [await newKey()];
  const hits = new Map<string, number>();
  const opaque = new Map<string, Record<string, unknown>>();
  let issuer = '';
  const client = options.introspectionClient;
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const json = (body: unknown, status = 200): void =>
      void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const metadata = {
      issuer,
      jwks_uri: `${issuer}/jwks`,
      id_token_signing_alg_values_supported: options.algorithms ?? ['RS256'],
      response_types_supported: ['code'],
      ...(client !== undefined && { introspection_endpoint: `${issuer}/introspect` }),
    };
    if (path === '/.well-known/oauth-authorization-server' && options.rfc8414 !== false) return json(metadata);
    if (path === '/.well-known/openid-configuration') return json(metadata);
    if (path === '/jwks') return json({ keys: published.map((key) => key.publicJwk) });
    if (path === '/introspect' && client !== undefined && req.method === 'POST') {
      let body = '';
      req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const expected =
          `Basic ` +
          `${Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString('base64')}`;
        if (req.headers.authorization !== expected) return json({ error: 'invalid_client' }, 401);
        const token = new URLSearchParams(body).get('token') ?? '';
        void Promise.resolve(options.introspectionDelay?.(token)).then(() =>
          json(opaque.get(token) ?? { active: false }),
        );
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  started.add(server);
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    issuer,
    hits,
    mintOpaque(claims = {}) {
      const token = `opaque-${opaque.size + 1}-${Math.random().toString(36).slice(2)}`;
      const nowS = Math.floor(options.now() / 1000);
      opaque.set(token, {
        active: true,
        iss: issuer,
        aud: options.audience,
        sub: 'user-1',
        scope: 'mcp:tools',
        exp: nowS + 300,
        ...claims,
      });
      return token;
    },
    async mint({ claims = {}, key = published.at(-1) as SigningKey, kid = key.kid } = {}) {
      const nowS = Math.floor(options.now() / 1000);
      const payload: Record<string, unknown> = {
        iss: issuer,
        aud: options.audience,
        sub: 'user-1',
        scope: 'mcp:tools',
        iat: nowS,
        exp: nowS + 300,
        ...claims,
      };
      for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
      return new SignJWT(payload as JWTPayload)
        .setProtectedHeader({ alg: 'RS256', ...(kid !== null && { kid }), typ: 'at+jwt' })
        .sign(key.privateKey);
    },
    unpublishedKey: newKey,
    async rotate() {
      const key = await newKey();
      published.push(key);
      return key;
    },
    currentKey: () => published.at(-1) as SigningKey,
    async stop() {
      started.delete(server);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** For afterAll. */
export async function stopAllTestIssuers(): Promise<void> {
  await Promise.all([...started].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  started.clear();
}
