// Bundles the server into single files for Function Compute: dist/index.js (HTTP) and dist/stdio.js, with their
// source maps beside them (SOURCE_MAPS below).
// CommonJS output: the E2B SDK fails at run time as ESM (a dynamic require of node:fs); see docs/platform-facts.md.
import { build as esbuild } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlibConstants, deflateRawSync } from 'node:zlib';

/** Entry points and the files they become. */
export const ENTRY_POINTS = {
  index: 'functions/mcp/index.ts',
  stdio: 'functions/mcp/stdio.ts',
};

/**
 * Modules whose bundled code is embedded as a string and compiled on first use: V8 only scans a string
 * literal at start-up. Each exports one loader function; its chunk is built with the plugins of the modules listed
 * before it (the core carries the E2B SDK and jose chunks inside it). `compress`: stored as base64 of the chunk
 * compressed, which also spares start-up reading the bytes (every byte of index.js is read and scanned at each start:
 * its ~400 KB of chunks cost ~14 ms of the first answer's CPU here). `deflate` for the core, which every cold start
 * decompresses (inflated in one piece of its size: ~6 ms for its ~0.7 MB here; brotli, 10 % smaller, took ~2.5× as
 * long); `brotli` at its best for chunks decompressed only when their feature is first used, so that fewer bytes are
 * read at start and fewer inflated with the core. `codeCache`: compiled with V8's code cache
 * for the running Node when one lies beside the bundle (CODE_CACHE). Decompressing and reading the cache in libuv's
 * thread pool while the server starts was tried: on two cores it slowed the first answer (1.22× → 1.5× bare
 * node:http) and did not bring the first tool call sooner.
 */
const DEFERRED_MODULES = [
  // The E2B SDK (~500 KB): only the E2B backend needs it, at its first sandbox.
  {
    file: 'functions/mcp/sandbox/e2b/sdk-modules.ts',
    loader: 'loadE2BModules',
    name: 'e2b-sdk.js',
    compress: 'brotli',
  },
  // jose (~60 KB): only a server with MCP_OAUTH_ISSUER needs it, at its first OAuth access token.
  { file: 'functions/mcp/http/oauth/jose-modules.ts', loader: 'loadJose', name: 'jose.js', compress: 'brotli' },
  // The HTTP entry's core (SDK, zod, tools, sandboxes; ~0.7 MB): loaded once a client goes past its handshake.
  {
    file: 'functions/mcp/core-modules.ts',
    loader: 'loadCore',
    name: 'mcp-core.js',
    compress: 'deflate',
    codeCache: true,
  },
];

/** `.py` files (the local sandbox's Python programs) are imported as their text. */
const COMMON = {
  bundle: true,
  platform: 'node',
  target: 'node20.10',
  format: 'cjs',
  minify: true,
  legalComments: 'none',
  loader: { '.py': 'text' },
};

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

/**
 * The plugins that replace each deferred module with a stub holding its bundled code, the chunks' maps, and the
 * chunks to make a code cache of.
 */
async function deferredModulePlugins(common) {
  const plugins = [NO_AJV, SPEC_SCHEMAS_ON_USE];
  const maps = [];
  const cached = [];
  for (const deferred of DEFERRED_MODULES) {
    const chunk = await esbuild({
      ...common,
      ...SOURCE_MAPS,
      entryPoints: [deferred.file],
      outfile: join(MAP_HOME, deferred.name),
      write: false,
      logLevel: 'silent',
      plugins: [...plugins],
    });
    maps.push({ file: `${deferred.name}.map`, text: outputText(chunk, '.map') });
    plugins.push(deferredModulePlugin(deferred, outputText(chunk, '.js')));
    if (deferred.codeCache === true)
      cached.push({ name: deferred.name, prefix: codeCachePrefix(deferred.name, outputText(chunk, '.js')) });
  }
  return { plugins, maps, cached };
}

/**
 * The MCP SDK carries ajv and ajv-formats inside its own dist (`ajvProvider-*.mjs`) for one thing this server never
 * does: validating a JSON Schema a client supplies (elicitation). That module's top level costs ~15 ms of every cold
 * start and ~300 KB of the core, so the bundle gets a stand-in with the same exports: the validator the SDK's
 * `Server` makes by default can be made, but refuses to validate, and the engines refuse to be built. Were the
 * server ever asked to validate, it would answer with this message rather than a wrong result. The stand-in is
 * written from the module's own export list, so an SDK that exports something else stops the build.
 */
const NO_AJV = {
  name: 'no-ajv',
  setup(build) {
    build.onLoad({ filter: /[\\/]@modelcontextprotocol[\\/]server[\\/]dist[\\/]ajvProvider-[\w-]+\.mjs$/ }, (args) => {
      const exported = /export \{([^}]*)\};\s*(?:\/\/# sourceMappingURL=\S*\s*)?$/.exec(
        readFileSync(args.path, 'utf8'),
      );
      if (exported === null) throw new Error(`${args.path}: no export list found; update NO_AJV in build.mjs`);
      const standIns = { AjvJsonSchemaValidator: 'NoJsonSchemaValidator', addFormats: 'refuse', Ajv: 'NoEngine' };
      const exports = exported[1].split(',').map((entry) => {
        const [local, name] = entry.trim().split(/\s+as\s+/);
        if (!Object.hasOwn(standIns, local))
          throw new Error(`${args.path} exports ${local}; update NO_AJV in build.mjs`);
        return `${standIns[local]} as ${name ?? local}`;
      });
      return {
        loader: 'js',
        contents: `
function refuse() {
  throw new Error('JSON Schema validation (ajv) is not in this build: the server validates no schema a client supplies');
}
class NoEngine {
  constructor() {
    refuse();
  }
}
class NoJsonSchemaValidator {
  getValidator() {
    refuse();
  }
}
export { ${exports.join(', ')} };`,
      };
    });
  },
};

/**
 * The SDK's public zod schemas (@modelcontextprotocol/core: ~200 spec and OAuth schemas) are built at module scope,
 * and the server package registers every one of them in its `specTypeSchemas` and `isSpecType` tables at module
 * scope too, so a bundle builds them all at start-up although the server's own checks use a few dozen (its wire
 * schemas per protocol revision are built separately, on first use). Two rewrites let esbuild drop the unused ones:
 * each top-level `const X = <expression>;` of the core's schema modules becomes a call marked pure (kept only where
 * something the bundle runs refers to X), and the two tables, which this server never reads, become stand-ins that
 * throw on use, without the registration loops. Each rewrite checks the text it expects and stops the build
 * otherwise, so an SDK that changes shape is looked at again rather than silently mis-rewritten.
 */
const SPEC_SCHEMAS_ON_USE = {
  name: 'spec-schemas-on-use',
  setup(build) {
    build.onLoad(
      { filter: /[\\/]@modelcontextprotocol[\\/]core[\\/]dist[\\/](?:schemas|auth)-[\w-]+\.mjs$/ },
      (args) => ({
        loader: 'js',
        contents: markConstantsPure(args.path, readFileSync(args.path, 'utf8')),
      }),
    );
    build.onLoad({ filter: /[\\/]@modelcontextprotocol[\\/]server[\\/]dist[\\/]src-[\w-]+\.mjs$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      const rewrites = [
        [
          'for (const key of SPEC_SCHEMA_KEYS) register(key, schemas_exports[key]);\nfor (const [key, schema] of Object.entries(authSchemas)) register(key, schema);\n',
          '',
        ],
        [
          'const specTypeSchemas = Object.freeze(_specTypeSchemas);',
          `const specTypeSchemas = ${TABLE_STAND_IN('specTypeSchemas')};`,
        ],
        ['const isSpecType = Object.freeze(_isSpecType);', `const isSpecType = ${TABLE_STAND_IN('isSpecType')};`],
      ];
      for (const [from, to] of rewrites) {
        if (text.split(from).length !== 2)
          throw new Error(
            `${args.path}: expected once: ${from.split('\n')[0]}; update SPEC_SCHEMAS_ON_USE in build.mjs`,
          );
        text = text.replace(from, to);
      }
      return { loader: 'js', contents: text };
    });
  },
};

/** A table of SPEC_SCHEMAS_ON_USE that is not in the bundle: reading any entry says so. */
const TABLE_STAND_IN = (name) =>
  `/* @__PURE__ */ new Proxy({}, { get() { throw new Error('${name} is not in this build: the server looks up no spec type by name'); } })`;

/**
 * A module whose top level is only imports, exports, comments and `const` declarations, with each declaration's
 * initializer wrapped as `/* @__PURE__ *\/ (() => (<expression>))()` unless it is a literal. A declaration runs from
 * its `const` line to the line before the next one at column 0 that is not a closing bracket, and ends with `;`.
 */
function markConstantsPure(path, text) {
  const lines = text.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i];
    const declaration = /^const ([\w$]+) = (.*)$/.exec(line);
    if (declaration === null) {
      if (!/^(?:$|import |export |\/\/|\/\*|\*|[ \t])/.test(line))
        throw new Error(`${path}:${i + 1}: unexpected top-level line; update SPEC_SCHEMAS_ON_USE in build.mjs`);
      out.push(line);
      continue;
    }
    let end = i;
    while (end + 1 < lines.length && /^(?:[ \t]|[}\])])/.test(lines[end + 1])) end += 1;
    if (!lines[end].endsWith(';'))
      throw new Error(
        `${path}:${end + 1}: a declaration that does not end with ';'; update SPEC_SCHEMAS_ON_USE in build.mjs`,
      );
    const statement = lines.slice(i, end + 1);
    if (!/^(?:"[^"]*"|\d+);$/.test(declaration[2])) {
      statement[0] = `const ${declaration[1]} = /* @__PURE__ */ (() => (${declaration[2]}`;
      statement[statement.length - 1] = `${statement[statement.length - 1].slice(0, -1)}))();`;
    }
    out.push(...statement);
    i = end;
  }
  return out.join('\n');
}

function outputText(result, extension) {
  return result.outputFiles.find((file) => file.path.endsWith(extension)).text;
}

/** The function a deferred chunk is compiled into (its first line counts as the chunk's line 0, `lineOffset: -1`). */
const WRAPPER_HEAD = '(function (exports, require, module) {\n';
const WRAPPER_TAIL = '\n})';

/**
 * V8 code cache for a deferred chunk (`codeCache`): the bytecode of the chunk's compiled functions, made at build
 * time by the Node that will run it (`codeCacheNodes`) and written beside the bundle as
 * `<name>.<chunk hash>-<runtime key>.cache`; the loader reads the file of its own chunk and runtime and compiles
 * without one when there is none. The chunk hash (of its text) keeps a cache of another build from being used: V8
 * checks only the source's length. The runtime key hashes the Node version, its V8 version, platform, arch, build configuration
 * (`process.config`) and the size of the node binary, because a cache from another Node build is not always refused: one made by Node 20.20.2 and
 * fed to 20.10.0 (the same V8 11.3.244.8) crashed the process with a segmentation fault. V8 itself refuses a cache
 * made under other flags (`--expose-gc`, say: `cachedDataRejected`), and the chunk is then compiled as without one.
 */
const CODE_CACHE = {
  /** Computes the runtime key in the loader and in the child that makes the cache: FNV-1a over the runtime's identity. */
  keySource: `function () {
    const identity = JSON.stringify([process.version, process.versions.v8, process.platform, process.arch, process.config, require('node:fs').statSync(process.execPath).size]);
    let hash = 0x811c9dc5;
    for (let i = 0; i < identity.length; i += 1) hash = Math.imul(hash ^ identity.charCodeAt(i), 0x01000193) >>> 0;
    return hash.toString(16).padStart(8, '0');
  }`,
};

/** The start of a chunk's code cache file names: `<name>.<chunk hash>-` (CODE_CACHE). */
function codeCachePrefix(name, source) {
  return `${name}.${createHash('sha256').update(source).digest('hex').slice(0, 12)}-`;
}

/**
 * The chunk starts on the wrapper's second line, counted as its first (`lineOffset: -1`): a frame in it reads
 * `mcp-core.js:line:column` of the chunk as esbuild wrote it, which is what its map is of. The stub also exports
 * `codeCacheState()`: whether the chunk was compiled from a code cache (`used`), one was refused (`rejected`), or
 * there was none for this runtime (`none`), `undefined` before it is loaded.
 */
function deferredModulePlugin({ file, loader, name, compress, codeCache = false }, source) {
  // esbuild writes ASCII (its default charset): decoded as latin1, a third of the time utf8 takes, same string.
  const encoding = /^[\x00-\x7f]*$/.test(source) ? 'latin1' : 'utf8';
  const size = Buffer.byteLength(source, encoding);
  const code =
    compress === 'deflate'
      ? `require('node:zlib').inflateRawSync(Buffer.from(${JSON.stringify(deflateRawSync(source, { level: 9 }).toString('base64'))}, 'base64'), { chunkSize: ${size} }).toString('${encoding}')`
      : compress === 'brotli'
        ? `require('node:zlib').brotliDecompressSync(Buffer.from(${JSON.stringify(brotliCompressSync(source, BROTLI_BEST(size)).toString('base64'))}, 'base64'), { chunkSize: ${size} }).toString('${encoding}')`
        : JSON.stringify(source);
  const cacheRead = codeCache
    ? `try {
      options.cachedData = require('node:fs').readFileSync(require('node:path').join(__dirname, ${JSON.stringify(codeCachePrefix(name, source))} + (${CODE_CACHE.keySource})() + '.cache'));
    } catch {
      // None for this runtime: compiled as without a cache.
    }`
    : '';
  const filter = new RegExp(`${file.replace(/[.]/g, '\\.').replace(/\//g, '[\\\\/]')}$`);
  return {
    name: `deferred:${name}`,
    setup(build) {
      build.onLoad({ filter }, () => ({
        loader: 'js',
        contents: `
let loaded;
let cacheState;
exports.${loader} = function () {
  if (loaded === undefined) {
    const options = { filename: ${JSON.stringify(name)}, lineOffset: -1 };
    ${cacheRead}
    const script = new (require('node:vm').Script)(${JSON.stringify(WRAPPER_HEAD)} + ${code} + ${JSON.stringify(WRAPPER_TAIL)}, options);
    cacheState = options.cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
    const mod = { exports: {} };
    script.runInThisContext()(mod.exports, require, mod);
    loaded = mod.exports;
  }
  return loaded.${loader}.apply(this, arguments);
};
exports.codeCacheState = function () {
  return cacheState;
};`,
      }));
    },
  };
}

/** Brotli at its best for text of `size` bytes (quality 11, told the size). */
const BROTLI_BEST = (size) => ({
  params: {
    [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
    [zlibConstants.BROTLI_PARAM_QUALITY]: 11,
    [zlibConstants.BROTLI_PARAM_SIZE_HINT]: size,
  },
});

/**
 * Writes the code cache of each `codeCache` chunk for each Node in `nodes` (paths of node binaries) into `outdir`.
 * Each Node runs the built `index.js` (CODE_CACHE_MAKER) as a client's first requests would: the handshake and one
 * `tools/call`, twice, so that the chunk's top level and the functions a first call runs are compiled; then it
 * saves the cache under its own runtime key. Functions first called later are compiled then, as without a cache.
 * A Node that cannot make one says why on stderr; the build goes on (the bundle then runs without a cache).
 */
function writeCodeCaches(chunks, outdir, nodes) {
  // Caches of earlier builds would never be read again (their chunk hash differs): remove them.
  for (const file of readdirSync(outdir)) {
    if (chunks.some((chunk) => file.startsWith(`${chunk.name}.`) && file.endsWith('.cache')))
      rmSync(join(outdir, file));
  }
  if (chunks.length === 0 || nodes.length === 0) return;
  const scratch = mkdtempSync(join(tmpdir(), 'code-cache-'));
  try {
    const sandboxRoot = join(scratch, 'sandboxes');
    mkdirSync(sandboxRoot, { mode: 0o711 });
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: scratch,
      HOST: '127.0.0.1',
      MCP_AUTH: 'none',
      LOG_LEVEL: 'error',
      LOCAL_SANDBOX_ROOT: sandboxRoot,
      LOCAL_SANDBOX_DISK_MB: '0',
    };
    const args = [
      resolve(outdir, 'index.js'),
      resolve(outdir),
      ...chunks.flatMap((chunk) => [chunk.name, chunk.prefix]),
    ];
    for (const node of nodes) {
      try {
        execFileSync(node, ['-e', CODE_CACHE_MAKER, ...args], {
          stdio: ['ignore', 'ignore', 'pipe'],
          env,
          timeout: 60_000,
        });
      } catch (err) {
        process.stderr.write(
          `build.mjs: no code cache for ${node}: ${String(err.stderr ?? err.message)
            .trim()
            .split('\n')
            .slice(-3)
            .join(' ')}\n`,
        );
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Run by each Node of `codeCacheNodes` as `node -e CODE_CACHE_MAKER <index.js> <outdir> (<chunk name> <file prefix>)...`: keeps the
 * `vm.Script` the loader compiles each chunk into (by its `filename`), serves the first requests of a client on a
 * free loopback port, and writes each chunk's `script.createCachedData()`.
 */
const CODE_CACHE_MAKER = `
const http = require('node:http');
const vm = require('node:vm');
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const [bundle, outdir, ...pairs] = process.argv.slice(1);
const prefixes = new Map(pairs.flatMap((name, i) => (i % 2 === 0 ? [[name, pairs[i + 1]]] : [])));
const scripts = new Map();
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(source, options) {
    super(source, options);
    if (prefixes.has(options && options.filename)) scripts.set(options.filename, this);
  }
};
const freePort = () => new Promise((resolve) => { const probe = http.createServer().listen(0, '127.0.0.1', () => { const { port } = probe.address(); probe.close(() => resolve(port)); }); });
const post = (port, sessionId, message) => new Promise((resolve, reject) => {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  if (sessionId !== undefined) headers['mcp-session-id'] = sessionId;
  const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers, agent: false }, (res) => {
    let text = '';
    res.on('data', (chunk) => (text += chunk));
    res.on('end', () => resolve({ status: res.statusCode, text, sessionId: res.headers['mcp-session-id'] }));
  });
  req.on('error', reject);
  req.end(JSON.stringify({ jsonrpc: '2.0', ...message }));
});
(async () => {
  const port = await freePort();
  process.env.PORT = String(port);
  require(bundle);
  for (let attempt = 0; ; attempt += 1) {
    try { await post(port, undefined, { method: 'ping', id: 0 }); break; } catch (err) { if (attempt > 1000) throw err; await new Promise((r) => setTimeout(r, 10)); }
  }
  for (let round = 0; round < 2; round += 1) {
    const init = await post(port, undefined, { id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'build-code-cache', version: '1' } } });
    await post(port, init.sessionId, { method: 'notifications/initialized' });
    await post(port, init.sessionId, { id: 2, method: 'tools/list' });
    const call = await post(port, init.sessionId, { id: 3, method: 'tools/call', params: { name: 'sandbox_status', arguments: {} } });
    if (call.status !== 200 || !call.text.includes('"result"')) throw new Error('tools/call answered ' + call.status + ': ' + call.text.slice(0, 200));
  }
  const key = (${CODE_CACHE.keySource})();
  for (const [name, prefix] of prefixes) {
    const script = scripts.get(name);
    if (script === undefined) throw new Error(name + ' was not loaded by a first tools/call');
    writeFileSync(join(outdir, prefix + key + '.cache'), script.createCachedData());
  }
  process.exit(0);
})().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + '\\n');
  process.exit(1);
});
`;

/**
 * The tool catalog's JSON, `describeTools(TOOLS)` of functions/mcp/tools/registry.ts, computed here by running that
 * code once in a child Node, and given to the bundles as `__TOOL_LIST_JSON__`: a cold start then parses one string
 * rather than turning the tools' zod schemas into JSON Schema (~10 ms). From source (jest) the registry computes it.
 */
async function toolListDefine(common) {
  const program = await esbuild({
    ...common,
    minify: false,
    write: false,
    logLevel: 'silent',
    plugins: [NO_AJV, SPEC_SCHEMAS_ON_USE],
    stdin: {
      contents: TOOL_LIST_PRINTER,
      resolveDir: fileURLToPath(new URL('.', import.meta.url)),
      loader: 'ts',
      sourcefile: 'tool-list.ts',
    },
  });
  const json = execFileSync(process.execPath, ['-'], {
    input: program.outputFiles[0].text,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (!Array.isArray(JSON.parse(json)))
    throw new Error(`build.mjs: the tool list is not an array: ${json.slice(0, 200)}`);
  return { __TOOL_LIST_JSON__: JSON.stringify(json) };
}

const TOOL_LIST_PRINTER = `import { describeTools, TOOLS } from './functions/mcp/tools/registry';
process.stdout.write(JSON.stringify(describeTools(TOOLS)), () => process.exit(0));`;

/**
 * Builds the bundles into `outdir`: index.js, stdio.js, their maps, and the deferred chunks' maps
 * (mcp-core.js.map, e2b-sdk.js.map, jose.js.map). Resolves with esbuild's result (metafile included when asked). `minify: false`
 * keeps function names readable in a CPU profile (`node --cpu-prof`), for a build that only the bench runs.
 * `codeCacheNodes`: the node binaries to make the core's code cache for (CODE_CACHE), `[]` for none; the deploy
 * adds the Node of FC's runtime (20.10.0).
 */
export async function build({
  outdir = 'dist',
  metafile = false,
  logLevel = 'warning',
  minify = true,
  codeCacheNodes = [process.execPath],
} = {}) {
  const common = { ...COMMON, minify, define: await toolListDefine({ ...COMMON, minify }) };
  const { plugins, maps, cached } = await deferredModulePlugins(common);
  const result = await esbuild({
    ...common,
    ...SOURCE_MAPS,
    sourcemap: 'linked',
    entryPoints: ENTRY_POINTS,
    outdir,
    write: false,
    metafile,
    logLevel,
    plugins,
  });
  mkdirSync(outdir, { recursive: true });
  for (const output of result.outputFiles)
    writeFileSync(output.path, output.path.endsWith('.map') ? rebaseSources(output) : output.contents);
  for (const map of maps) writeFileSync(join(outdir, map.file), map.text);
  writeCodeCaches(cached, outdir, codeCacheNodes);
  return result;
}

/** A map of `outdir` with its `sources` made relative to dist/ (SOURCE_MAPS); esbuild's own (`<define:…>`) kept. */
function rebaseSources(output) {
  const map = JSON.parse(output.text);
  const sources = map.sources.map((source) =>
    source.startsWith('<')
      ? source
      : relative(MAP_HOME, resolve(dirname(output.path), source))
          .split(sep)
          .join('/'),
  );
  return JSON.stringify({ ...map, sources });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // `--code-cache-node <path>` (repeatable): also make the core's code cache for that Node (the running one always).
  const extraNodes = process.argv.flatMap((arg, i) => (process.argv[i - 1] === '--code-cache-node' ? [arg] : []));
  await build({ logLevel: 'info', codeCacheNodes: [process.execPath, ...extraNodes] });
}
