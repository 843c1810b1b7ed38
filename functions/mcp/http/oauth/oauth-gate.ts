/** The OAuth side of the app (http/app.ts) for one configuration: the gate auth.ts uses and the metadata served. */
import type { OAuthConfig } from '../../config-oauth';
import type { OAuthGate } from '../auth';
import { bearerChallenge, resourceMetadata } from './resource-metadata';
import { createOAuthVerifier, type OAuthVerifierOptions } from './token-verifier';

export function createOAuthGate(
  config: OAuthConfig,
  options: OAuthVerifierOptions = {},
): { gate: OAuthGate; metadata: Record<string, unknown> } {
  const verifier = createOAuthVerifier(config, options);
  return {
    gate: {
      verify: (token, peer) => verifier.verify(token, peer),
      challenge: (error) => bearerChallenge(config, error),
    },
    metadata: resourceMetadata(config),
  };
}
