// Bundles the server into single files for Function Compute: dist/index.js (HTTP) and dist/stdio.js.
// CommonJS output: the E2B SDK fails at run time as ESM (a dynamic require of node:fs); see docs/platform-facts.md.
import { build as esbuild } from 'esbuild';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { runInThisContext } from 'node:vm';
import { brotliCompressSync, constants as zlibConstants } from 'node:zlib';

/** Entry points and the files they become. */
export const ENTRY_POINTS = {
  index: 'functions/mcp/index.ts',
  stdio: 'functions/mcp/stdio.ts',
};

/**
 * Modules whose bundled code is embedded as a string and compiled on first use: V8 only scans a string
 * literal at start-up. Each exports one loader function; its chunk is built with the plugins of the
 * modules listed before it (the core carries the E2B SDK chunk inside it). `compress`: stored as
 * base64 brotli, which also spares start-up reading the bytes (decompressed when first called, ~4 ms).
 */
const DEFERRED_MODULES = [
  // The E2B SDK (~500 KB): only the E2B backend needs it, at its first sandbox.
  { file: 'functions/mcp/sandbox/e2b/sdk-modules.ts', loader: 'loadE2BModules', name: 'e2b-sdk.js', compress: false },
  // The HTTP entry's core (SDK, zod, tools, sandboxes; ~1.4 MB): loaded once a client goes past its handshake.
  { file: 'functions/mcp/core-modules.ts', loader: 'loadCore', name: 'mcp-core.js', compress: true },
];

const COMMON = { bundle: true, platform: 'node', target: 'node20.10', format: 'cjs', minify: true, legalComments: 'none' };

/** The plugins that replace each deferred module with a stub holding its bundled code. */
async function deferredModulePlugins() {
  const plugins = [];
  for (const deferred of DEFERRED_MODULES) {
    const chunk = await esbuild({ ...COMMON, entryPoints: [deferred.file], write: false, logLevel: 'silent', plugins: [...plugins] });
    plugins.push(deferredModulePlugin(deferred, chunk.outputFiles[0].text));
  }
  return plugins;
}

function deferredModulePlugin({ file, loader, name, compress }, source) {
  const code = compress
    ? `require('node:zlib').brotliDecompressSync(Buffer.from(${JSON.stringify(brotliCompressSync(source, BROTLI).toString('base64'))}, 'base64')).toString('utf8')`
    : JSON.stringify(source);
  const filter = new RegExp(`${file.replace(/[.]/g, '\\.').replace(/\//g, '[\\\\/]')}$`);
  return {
    name: `deferred:${name}`,
    setup(build) {
      build.onLoad({ filter }, () => ({
        loader: 'js',
        contents: `
let loaded;
exports.${loader} = function () {
  if (loaded === undefined) {
    const wrapper = require('node:vm').runInThisContext('(function (exports, require, module) {' + ${code} + '\\n})', { filename: ${JSON.stringify(name)} });
    const mod = { exports: {} };
    wrapper(mod.exports, require, mod);
    loaded = mod.exports;
  }
  return loaded.${loader}.apply(this, arguments);
};`,
      }));
    },
  };
}

const BROTLI = { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 9 } };

/**
 * The SDK's own `tools/list` answers, one per protocol version, captured by running
 * functions/mcp/protocol/tools-list-capture.ts; the entry embeds them as `__EARLY_TOOLS_LIST__`.
 */
async function captureToolsList(plugins) {
  const probe = await esbuild({ ...COMMON, minify: false, entryPoints: ['functions/mcp/protocol/tools-list-capture.ts'], write: false, logLevel: 'silent', plugins });
  const mod = { exports: {} };
  runInThisContext(`(function (exports, require, module) {${probe.outputFiles[0].text}\n})`, { filename: 'tools-list-capture.js' })(mod.exports, createRequire(import.meta.url), mod);
  return mod.exports.captureToolsListResults();
}

/** Builds the bundles; resolves with esbuild's result (metafile included when asked). */
export async function build({ outdir = 'dist', metafile = false, logLevel = 'warning' } = {}) {
  const plugins = await deferredModulePlugins();
  return esbuild({
    ...COMMON,
    entryPoints: ENTRY_POINTS,
    outdir,
    sourcemap: false,
    metafile,
    logLevel,
    plugins,
    define: { __EARLY_TOOLS_LIST__: JSON.stringify(await captureToolsList(plugins)) },
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await build({ logLevel: 'info' });
}
