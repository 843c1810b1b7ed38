// Bundles the server into single files for Function Compute: dist/index.js (HTTP) and dist/stdio.js.
// CommonJS output: the E2B SDK fails at run time as ESM (a dynamic require of node:fs), FACTS.md §9.
import { build as esbuild } from 'esbuild';
import { fileURLToPath } from 'node:url';

/** Entry points and the files they become. */
export const ENTRY_POINTS = {
  index: 'functions/mcp/index.ts',
  stdio: 'functions/mcp/stdio.ts',
};

/** Builds the bundles; resolves with esbuild's result (metafile included when asked). */
export async function build({ outdir = 'dist', metafile = false, logLevel = 'warning' } = {}) {
  return esbuild({
    entryPoints: ENTRY_POINTS,
    outdir,
    bundle: true,
    platform: 'node',
    target: 'node20.10',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    sourcemap: false,
    metafile,
    logLevel,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await build({ logLevel: 'info' });
}
