/** Backend selection: the one place that knows which SandboxProvider a Config asks for. */
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Logger } from '../log';
import { createE2BSandboxProvider } from './e2b/provider';
import { createLocalSandboxProvider } from './local/provider';
import type { SandboxProvider } from './types';

/**
 * Slack on top of the idle TTL and the longest call before an unused local workspace is deleted (clocks, marker
 * writes).
 */
const STALE_MARGIN_MS = 60_000;

/** A provider and the promise of its readiness (start-up probes run off the request path). */
export interface SelectedProvider {
  provider: SandboxProvider;
  ready: () => Promise<void>;
}

/**
 * Creates the provider named by SANDBOX_BACKEND; `clock` times E2B's retries, gate and leases, and dates local
 * workspaces' use.
 */
export function createSandboxProvider(config: Config, logger: Logger, clock?: Clock): SelectedProvider {
  if (config.sandboxBackend === 'e2b') {
    // Nothing to probe: the SDK loads, and E2B is called, when the first sandbox is needed.
    const provider = createE2BSandboxProvider({
      config: config.e2b,
      idleTtlMs: config.sessionIdleTtlS * 1000,
      logger,
      clock,
    });
    return { provider, ready: async () => undefined };
  }
  // A session unused for the idle TTL has ended on every instance; a call may still run the longest tool timeout.
  const staleAfterMs = (config.sessionIdleTtlS + config.toolTimeoutMaxS) * 1000 + STALE_MARGIN_MS;
  // Preview URLs carry a token signed like session ids (with the same secret, configured or this process's), valid as
  // long as one.
  const provider = createLocalSandboxProvider({
    config: config.local,
    logger,
    clock,
    staleAfterMs,
    previewSecret: config.sessionSecret,
    previewTtlMs: config.sessionMaxAgeS * 1000,
  });
  return { provider, ready: provider.ready };
}
