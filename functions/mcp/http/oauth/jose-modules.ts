/**
 * The parts of jose (JOSE and JWT) that token-verifier.ts and key-set.ts use, loaded on first use. The bundle carries
 * this module as a string compiled only when called (build.mjs DEFERRED_MODULES), so a server without
 * MCP_OAUTH_ISSUER never compiles it; from source it is a plain import. Named imports, so that the chunk holds only
 * these (~20 KB of jose).
 */
import { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify } from 'jose';

export async function loadJose() {
  return { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify };
}

/** What loadJose gives. */
export type Jose = Awaited<ReturnType<typeof loadJose>>;
