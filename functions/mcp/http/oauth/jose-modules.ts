/**
 * The parts of jose (JOSE and JWT) that token-verifier.ts and key-set.ts use, loaded on first use. The build makes
 * this module a file of its own (jose.js, build.mjs DEFERRED_MODULES), required on the first call, so a server
 * without MCP_OAUTH_ISSUER never compiles it; from source it is a plain import. Named imports, so that the file
 * holds only these (~20 KB of jose).
 */
import { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify } from 'jose';

export async function loadJose() {
  return { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify };
}

/** What loadJose gives. */
export type Jose = Awaited<ReturnType<typeof loadJose>>;
