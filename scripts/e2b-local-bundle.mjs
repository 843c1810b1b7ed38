// The local E2B service (test/support/e2b-local/, TypeScript) bundled for plain Node, for `npm run e2b:local`
// (scripts/e2b-local.mjs) and the bench (bench/harness/e2b-local.mjs). The bundle goes into a fresh directory under
// node_modules/.cache, not under /tmp or /home, which each sandbox replaces with its own: the sandboxes run
// agent.js and kernel.py from beside the bundle, read-only, so those files are copied there too.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const ROOT_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
const SOURCE_DIR = join(ROOT_DIR, 'test/support/e2b-local');

/**
 * Bundles `entry` (a file name in test/support/e2b-local, `index.ts` or `cli.ts`) into a fresh directory whose name
 * starts with `prefix`. Resolves with the directory, which the caller removes, and the bundle's path in it.
 * @param {string} entry
 * @param {string} prefix
 * @returns {Promise<{ dir: string, file: string }>}
 */
export async function bundleLocalE2B(entry, prefix) {
  const cache = join(ROOT_DIR, 'node_modules/.cache/e2b-local');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, prefix));
  try {
    const outfile = join(dir, entry.replace(/\.ts$/, '.js'));
    await build({
      entryPoints: [join(SOURCE_DIR, entry)],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node20.10',
      format: 'cjs',
      logLevel: 'warning',
    });
    for (const name of readdirSync(SOURCE_DIR)) {
      if (!name.endsWith('.ts')) copyFileSync(join(SOURCE_DIR, name), join(dir, name));
    }
    return { dir, file: outfile };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
