/**
 * What the HTTP entry makes before the core and shares with it (config → the credential check, the id
 * signer, the Origin/Host rules, the rate of new sessions). index.ts and the in-process test harness
 * build them the same way, here.
 */
import { isLoopbackHost, type Config } from './config';
import { type BearerVerifier, createBearerVerifier } from './http/auth';
import type { OriginPolicy } from './http/origin';
import { createInitializeRate, type InitializeRate } from './sessions/initialize-rate';
import { createSignedIdCodec, type SignedIdCodec } from './sessions/session-id';

export interface EntryDeps {
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  /** Origin and Host rules (from config). */
  policy: OriginPolicy;
  /** Signs and checks session ids and sandbox handles (MCP_SESSION_SECRET). */
  ids: SignedIdCodec;
  /** Each credential's rate of new sessions, taken by the early answer and by the core alike. */
  initializeRate: InitializeRate;
}

/** Builds the entry's shared parts from `config`. */
export function createEntryDeps(config: Config): EntryDeps {
  return {
    verifier: config.auth.mode === 'bearer' ? createBearerVerifier(config.auth.tokens) : undefined,
    policy: {
      allowedOrigins: config.allowedOrigins,
      allowedHosts: config.allowedHosts,
      loopbackOnly: !config.onFc && isLoopbackHost(config.host),
    },
    ids: createSignedIdCodec(config.sessionSecret, config.sessionMaxAgeS * 1000),
    initializeRate: createInitializeRate({
      burst: config.perCredential.initializeBurst,
      perMinute: config.perCredential.initializePerMin,
    }),
  };
}
