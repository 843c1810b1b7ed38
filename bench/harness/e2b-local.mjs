// The local E2B service (test/support/e2b-local/, TypeScript) in this process, for figures on the E2B backend. The
// bench runs plain Node, so its index.ts is bundled as `npm run e2b:local` bundles its cli.ts
// (scripts/e2b-local-bundle.mjs). The bundle's directory goes when the service stops.
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';

import { bundleLocalE2B } from '../../scripts/e2b-local-bundle.mjs';

/**
 * Starts the service (`startLocalE2B(options)` of test/support/e2b-local/index.ts: every sandbox killed and its root
 * removed by `stop()`). Resolves with the service: `url`, `env()` (E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL),
 * `sandboxes()` (`{ sandboxId, state: 'running' | 'paused', memory }`), `stop()`.
 */
export async function startLocalE2B(options = {}) {
  const { dir, file } = await bundleLocalE2B('index.ts', 'bench-');
  try {
    const service = await createRequire(import.meta.url)(file).startLocalE2B(options);
    return {
      url: service.url,
      env: () => service.env(),
      sandboxes: () => service.sandboxes(),
      stop: async () => {
        try {
          await service.stop();
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
