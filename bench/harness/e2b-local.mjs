// The local E2B service (test/support/e2b-local/, TypeScript) in this process, for figures on the E2B backend. The
// bench runs plain Node, so its index.ts is bundled by esbuild (the root's) the way scripts/e2b-local.mjs
// (`npm run e2b:local`) bundles its cli.ts: into a fresh directory under node_modules/.cache, not under /tmp or
// /home, which each sandbox replaces with its own (the sandboxes run agent.js and kernel.py from beside the bundle,
// read-only), with those files copied there. The directory goes when the service stops.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const ROOT_DIR = join(dirname(fileURLToPath(import.meta.url)), '../..');
const SOURCE_DIR = join(ROOT_DIR, 'test/support/e2b-local');

/**
 * Starts the service (`startLocalE2B(options)` of test/support/e2b-local/index.ts: every sandbox killed and its root
 * removed by `stop()`). Resolves with the service: `url`, `env()` (E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL),
 * `sandboxes()` (`{ sandboxId, state: 'running' | 'paused', memory }`), `stop()`.
 */
export async function startLocalE2B(options = {}) {
  const cache = join(ROOT_DIR, 'node_modules/.cache/e2b-local');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'bench-'));
  try {
    await build({
      entryPoints: [join(SOURCE_DIR, 'index.ts')],
      outfile: join(dir, 'index.js'),
      bundle: true,
      platform: 'node',
      target: 'node20.10',
      format: 'cjs',
      logLevel: 'warning',
    });
    for (const name of readdirSync(SOURCE_DIR)) {
      if (!name.endsWith('.ts')) copyFileSync(join(SOURCE_DIR, name), join(dir, name));
    }
    const service = await createRequire(import.meta.url)(join(dir, 'index.js')).startLocalE2B(options);
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
