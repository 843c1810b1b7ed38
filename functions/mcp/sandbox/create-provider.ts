/** Backend selection: the one place that knows which SandboxProvider a Config asks for. */
import type { Clock } from '../clock';
import type { Config } from '../config';
import { toE2BEgress } from '../egress/e2b-network';
import { policyFor, secretsFor } from '../egress/egress-config';
import { hashTag } from '../hash-tag';
import type { Logger } from '../log';
import { NO_TELEMETRY, type Telemetry } from '../telemetry/telemetry';
import { createE2BSandboxProvider } from './e2b/provider';
import { loadE2BSdk } from './e2b/sdk';
import { traceE2BSdk } from './e2b/traced-sdk';
import { createLocalSandboxProvider } from './local/provider';
import type { RetentionPolicy } from './retention';
import { traceSandboxProvider } from './traced-provider';
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
 * workspaces' use. With telemetry on, the sandboxes' work and the E2B SDK's calls are traced.
 */
export function createSandboxProvider(
  config: Config,
  logger: Logger,
  clock?: Clock,
  telemetry: Telemetry = NO_TELEMETRY,
): SelectedProvider {
  const selected = selectProvider(config, logger, clock, telemetry);
  if (!telemetry.enabled) return selected;
  const options = { commandText: config.telemetry?.commandText === true };
  return { provider: traceSandboxProvider(selected.provider, telemetry, options), ready: selected.ready };
}

function selectProvider(config: Config, logger: Logger, clock: Clock | undefined, telemetry: Telemetry) {
  const retention = toRetentionPolicy(config);
  if (config.sandboxBackend === 'e2b') {
    // Nothing to probe: the SDK loads, and E2B is called, when the first sandbox is needed.
    const provider = createE2BSandboxProvider({
      config: config.e2b,
      idleTtlMs: config.sessionIdleTtlS * 1000,
      logger,
      clock,
      retention,
      secretTag: toSecretTag(config.sessionSecret),
      egressOf: (principal) => toE2BEgress(policyFor(config.egress, principal), secretsFor(config.egress, principal)),
      ...(telemetry.enabled && { loadSdk: async () => traceE2BSdk(await loadE2BSdk(), telemetry) }),
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
    retention,
    secretTag: toSecretTag(config.sessionSecret),
    egress: config.egress,
  });
  return { provider, ready: provider.ready };
}

/** The retention of sleeping sandboxes a Config sets (MCP_SANDBOX_RETENTION_S and the per-credential caps). */
export function toRetentionPolicy({
  sleeping,
  sandboxBackend,
}: Pick<Config, 'sleeping' | 'sandboxBackend'>): RetentionPolicy {
  const diskBytes = sleeping.maxDiskMbPerCredential * 2 ** 20;
  return {
    retentionMs: sleeping.retentionS * 1000,
    maxSleeping: sleeping.maxPerCredential,
    // Only the local backend knows the disk its sandboxes take.
    ...(sandboxBackend === 'local' && diskBytes > 0 && { maxSleepingDiskBytes: diskBytes }),
  };
}

/** A tag of MCP_SESSION_SECRET kept with unnamed sandboxes: an id signed with another secret never reaches them. */
export function toSecretTag(secret: string): string {
  return hashTag(`mcp-secret:${secret}`, 16);
}
