// `npm run e2b:local`: the local E2B service (test/support/e2b-local/) as a command. Bundles its cli.ts with
// esbuild into a temporary directory under node_modules/.cache (not under /tmp or /home, which each sandbox
// replaces with its own: the sandboxes run agent.js and kernel.py from beside the bundle, read-only), copies
// those files there, runs it in this process with the arguments given, and removes the directory at exit.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const source = join(repo, 'test', 'support', 'e2b-local');
const cache = join(repo, 'node_modules', '.cache', 'e2b-local');
mkdirSync(cache, { recursive: true });
const dir = mkdtempSync(join(cache, 'run-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

await build({
  entryPoints: [join(source, 'cli.ts')],
  outfile: join(dir, 'cli.js'),
  bundle: true,
  platform: 'node',
  target: 'node20.10',
  format: 'cjs',
  logLevel: 'warning',
});
for (const name of readdirSync(source)) {
  if (!name.endsWith('.ts')) copyFileSync(join(source, name), join(dir, name));
}
createRequire(import.meta.url)(join(dir, 'cli.js'));
