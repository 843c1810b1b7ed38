/** Backend selection: the one place that knows which SandboxProvider a Config asks for. */
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Logger } from '../log';
import { createE2BSandboxProvider } from './e2b/provider';
import { createLocalSandboxProvider } from './local/provider';
import type { SandboxProvider } from './types';

/** A provider and the promise of its readiness (start-up probes run off the request path). */
export interface SelectedProvider {
  provider: SandboxProvider;
  ready: () => Promise<void>;
}

/** Creates the provider named by SANDBOX_BACKEND; `clock` times E2B's retries, gate and leases, and dates local workspaces' use. */
export function createSandboxProvider(config: Config, logger: Logger, clock?: Clock): SelectedProvider {
  if (config.sandboxBackend === 'e2b') {
    // Nothing to probe: the SDK loads, and E2B is called, when the first sandbox is needed.
    const provider = createE2BSandboxProvider({ config: config.e2b, idleTtlMs: config.sessionIdleTtlS * 1000, logger, clock });
    return { provider, ready: async () => undefined };
  }
  const provider = createLocalSandboxProvider({ config: config.local, logger, clock });
  return { provider, ready: provider.ready };
}
