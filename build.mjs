// Bundles the server into single files for Function Compute: dist/index.js (HTTP) and dist/stdio.js, with their
// source maps beside them (SOURCE_MAPS below).
// CommonJS output: the E2B SDK fails at run time as ESM (a dynamic require of node:fs); see docs/platform-facts.md.
import { build as esbuild } from 'esbuild';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
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

/** `.py` files (the local sandbox's Python programs) are imported as their text. */
const COMMON = { bundle: true, platform: 'node', target: 'node20.10', format: 'cjs', minify: true, legalComments: 'none', loader: { '.py': 'text' } };

/**
 * Source maps: each bundle and each deferred chunk gets a `.map` beside it (index.js.map, mcp-core.js.map, …),
 * read only when a stack with a frame in that file is formatted (functions/mcp/stack-maps.ts), so that a logged
 * stack names `functions/…/x.ts:line:column` rather than `mcp-core.js:1:NNNNN`. Without `sourcesContent`: a
 * stack needs positions, not text. `sources` are relative paths written as if the map lay in the repository's
 * dist/ (`../functions/mcp/core.ts`) wherever the build goes: next to dist/index.js they name the real files,
 * next to FC's /code/index.js they read /functions/mcp/core.ts, and no path of the build machine is in them.
 */
const SOURCE_MAPS = { sourcemap: 'external', sourcesContent: false };
const MAP_HOME = fileURLToPath(new URL('./dist/', import.meta.url));

/** The plugins that replace each deferred module with a stub holding its bundled code, and the chunks' maps. */
async function deferredModulePlugins() {
  const plugins = [];
  const maps = [];
  for (const deferred of DEFERRED_MODULES) {
    const chunk = await esbuild({ ...COMMON, ...SOURCE_MAPS, entryPoints: [deferred.file], outfile: join(MAP_HOME, deferred.name), write: false, logLevel: 'silent', plugins: [...plugins] });
    maps.push({ file: `${deferred.name}.map`, text: outputText(chunk, '.map') });
    plugins.push(deferredModulePlugin(deferred, outputText(chunk, '.js')));
  }
  return { plugins, maps };
}

function outputText(result, extension) {
  return result.outputFiles.find((file) => file.path.endsWith(extension)).text;
}

/**
 * The chunk starts on the wrapper's second line, counted as its first (`lineOffset: -1`): a frame in it reads
 * `mcp-core.js:line:column` of the chunk as esbuild wrote it, which is what its map is of.
 */
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
    const wrapper = require('node:vm').runInThisContext('(function (exports, require, module) {\\n' + ${code} + '\\n})', { filename: ${JSON.stringify(name)}, lineOffset: -1 });
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

/**
 * Builds the bundles into `outdir`: index.js, stdio.js, their maps, and the deferred chunks' maps
 * (mcp-core.js.map, e2b-sdk.js.map). Resolves with esbuild's result (metafile included when asked).
 */
export async function build({ outdir = 'dist', metafile = false, logLevel = 'warning' } = {}) {
  const { plugins, maps } = await deferredModulePlugins();
  const result = await esbuild({
    ...COMMON,
    ...SOURCE_MAPS,
    sourcemap: 'linked',
    entryPoints: ENTRY_POINTS,
    outdir,
    write: false,
    metafile,
    logLevel,
    plugins,
    define: { __EARLY_TOOLS_LIST__: JSON.stringify(await captureToolsList(plugins)) },
  });
  mkdirSync(outdir, { recursive: true });
  for (const output of result.outputFiles) writeFileSync(output.path, output.path.endsWith('.map') ? rebaseSources(output) : output.contents);
  for (const map of maps) writeFileSync(join(outdir, map.file), map.text);
  return result;
}

/** A map of `outdir` with its `sources` made relative to dist/ (SOURCE_MAPS); esbuild's own (`<define:…>`) kept. */
function rebaseSources(output) {
  const map = JSON.parse(output.text);
  const sources = map.sources.map((source) => (source.startsWith('<') ? source : relative(MAP_HOME, resolve(dirname(output.path), source)).split(sep).join('/')));
  return JSON.stringify({ ...map, sources });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await build({ logLevel: 'info' });
}
