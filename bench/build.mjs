// Bundles the reference servers into bench/dist/ the way the product is bundled (build.mjs at the root:
// esbuild, one CommonJS file per server, minified, node20.10), so that start-up is compared like for like.
import { build as esbuild } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));

/** Reference entry points (bench/references/) and the bundles they become (bench/dist/<name>.js). */
export const REFERENCE_ENTRY_POINTS = {
  r1: join(BENCH_DIR, 'references/r1.mjs'),
  r2: join(BENCH_DIR, 'references/r2.mjs'),
  bare: join(BENCH_DIR, 'references/bare.mjs'),
};

/** Builds the reference bundles; resolves with esbuild's result. */
export async function buildReferences({ outdir = join(BENCH_DIR, 'dist'), logLevel = 'warning' } = {}) {
  return esbuild({
    entryPoints: REFERENCE_ENTRY_POINTS,
    outdir,
    bundle: true,
    platform: 'node',
    target: 'node20.10',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    sourcemap: false,
    logLevel,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildReferences({ logLevel: 'info' });
}
