/**
 * A real OpenID provider (the oidc-provider package) on loopback, for the tests of the server as an OAuth resource
 * server. It runs as a child Node process because oidc-provider is ESM-only (jest runs the tests as CommonJS);
 * test/support/oidc-provider.ts starts it and drives it.
 *
 *   node test/support/oidc/provider.mjs '{"scopes":["mcp:tools"],"accessTokenTtlS":300,"accountId":"user-1"}'
 *
 * The options (all optional, see options.mjs) come from argv[2], else from the OIDC_PROVIDER_OPTIONS variable.
 * Once listening on a free port of 127.0.0.1 it prints one JSON line on stdout, `{"issuer":"http://127.0.0.1:PORT"}`
 * (oidc-provider's own notices may come before it, as plain text); it exits on SIGTERM or SIGINT.
 * State (clients, grants, tokens) is in memory: each start is a fresh provider with a fresh signing key.
 */
import { createServer } from 'node:http';

import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

import { INTERACTION_PATH, providerConfiguration } from './configuration.mjs';
import { finishInteraction } from './interaction.mjs';
import { parseOptions } from './options.mjs';

const options = parseOptions(process.argv[2] ?? process.env.OIDC_PROVIDER_OPTIONS);

/** A fresh RS256 key pair as a private JWK with `kid` (its RFC 7638 thumbprint), `alg` and `use`. */
async function signingJwk() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: 'RS256', use: 'sig' };
}

// The issuer holds the port, so the port comes first: listen, then build the provider (no request arrives before
// the ready line, which is printed last).
let handle = (_req, res) => res.writeHead(503).end();
const server = createServer((req, res) => handle(req, res));
await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, providerConfiguration(options, await signingJwk()));
const providerHandler = provider.callback();

handle = (req, res) => {
  const { pathname } = new URL(req.url ?? '/', issuer);
  if (req.method === 'GET' && pathname.startsWith(INTERACTION_PATH)) {
    finishInteraction(provider, options.accountId, req, res).catch((error) => {
      // A plain-text 400 the scripted browser reports (a missing interaction cookie, say), and a line here.
      console.error(`interaction ${pathname} failed:`, error);
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`interaction failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    return;
  }
  providerHandler(req, res);
};

for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => process.exit(0));

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
