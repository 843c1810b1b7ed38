/** Backend selection: the one place that knows which SandboxProvider a Config asks for. */
import type { Config } from '../config';
import type { Logger } from '../log';
import { createLocalSandboxProvider } from './local/provider';
import type { SandboxProvider } from './types';

/** A provider and the promise of its readiness (start-up probes run off the request path). */
export interface SelectedProvider {
  provider: SandboxProvider;
  ready: () => Promise<void>;
}

/** Creates the provider named by SANDBOX_BACKEND. */
export function createSandboxProvider(config: Config, logger: Logger): SelectedProvider {
  const provider = createLocalSandboxProvider({ config: config.local, logger });
  return { provider, ready: provider.ready };
}
