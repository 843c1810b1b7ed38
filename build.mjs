// Bundles the server into single files for Function Compute: dist/index.js (HTTP) and dist/stdio.js.
// CommonJS output: the E2B SDK fails at run time as ESM (a dynamic require of node:fs), FACTS.md §9.
import { build as esbuild } from 'esbuild';
import { fileURLToPath } from 'node:url';

/** Entry points and the files they become. */
export const ENTRY_POINTS = {
  index: 'functions/mcp/index.ts',
  stdio: 'functions/mcp/stdio.ts',
};

/** The module whose code is embedded as a string and compiled on first use (the E2B SDK, ~500 KB). */
const DEFERRED_MODULE = /sandbox[\\/]e2b[\\/]sdk-modules\.ts$/;

const COMMON = { bundle: true, platform: 'node', target: 'node20.10', format: 'cjs', minify: true, legalComments: 'none' };

/**
 * Replaces the deferred module with a stub that holds its bundled code as a string: V8 only scans a string
 * literal at start-up, and compiles the code when the E2B backend first needs it.
 */
async function deferredModulePlugin() {
  const chunk = await esbuild({ ...COMMON, entryPoints: ['functions/mcp/sandbox/e2b/sdk-modules.ts'], write: false, logLevel: 'silent' });
  const source = chunk.outputFiles[0].text;
  return {
    name: 'deferred-module',
    setup(build) {
      build.onLoad({ filter: DEFERRED_MODULE }, () => ({
        loader: 'js',
        contents: `
const source = ${JSON.stringify(source)};
let loaded;
exports.loadE2BModules = function () {
  if (loaded === undefined) {
    const wrapper = require('node:vm').runInThisContext('(function (exports, require, module) {' + source + '\\n})', { filename: 'e2b-sdk.js' });
    const mod = { exports: {} };
    wrapper(mod.exports, require, mod);
    loaded = mod.exports;
  }
  return loaded.loadE2BModules();
};`,
      }));
    },
  };
}

/** Builds the bundles; resolves with esbuild's result (metafile included when asked). */
export async function build({ outdir = 'dist', metafile = false, logLevel = 'warning' } = {}) {
  return esbuild({
    ...COMMON,
    entryPoints: ENTRY_POINTS,
    outdir,
    sourcemap: false,
    metafile,
    logLevel,
    plugins: [await deferredModulePlugin()],
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await build({ logLevel: 'info' });
}
