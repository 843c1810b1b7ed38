// @ts-check
/**
 * Builds the server for Function Compute into dist/, as plain CommonJS files with their source maps beside them
 * (SOURCE_MAPS): index.js (HTTP, FC's entry) and stdio.js, and the modules they load on first use
 * (DEFERRED_MODULES: mcp-core.js, e2b-sdk.js, jose.js, telemetry.js), which each entry requires from its own
 * directory. Beside them, the core's V8 code cache for each Node asked (scripts/build/make-code-cache.ts).
 * CommonJS: the E2B SDK fails at run time as ESM (a dynamic require of node:fs); see docs/platform-facts.md.
 */
import { build as esbuild } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

import { installedVersions, specSchemasOnUse } from './scripts/build/spec-schemas-on-use.mjs';

const ROOT = dirname(fileURLToPath(import.meta.url));

/** Entry points and the files they become. */
export const ENTRY_POINTS = {
  index: 'functions/mcp/index.ts',
  stdio: 'functions/mcp/stdio.ts',
};

/**
 * Modules built into files of their own, loaded on first use: everywhere else in the bundle, an import of `module`
 * resolves to `standIn` (functions/mcp/bundle/), which loads `file` from its own directory when first called.
 * V8 then neither reads nor compiles their code at start-up.
 */
export const DEFERRED_MODULES = [
  // The HTTP entry's core (SDK, zod, tools, sandboxes; ~0.7 MB): loaded once a client goes past its handshake,
  // compiled with its code cache (functions/mcp/bundle/code-cache.ts).
  { module: 'functions/mcp/core-modules.ts', standIn: 'functions/mcp/bundle/deferred-core.ts', file: 'mcp-core.js' },
  // The E2B SDK (~500 KB): only the E2B backend needs it, at its first sandbox.
  {
    module: 'functions/mcp/sandbox/e2b/sdk-modules.ts',
    standIn: 'functions/mcp/bundle/deferred-e2b-sdk.ts',
    file: 'e2b-sdk.js',
  },
  // jose (~60 KB): only a server with MCP_OAUTH_ISSUER needs it, at its first OAuth access token.
  {
    module: 'functions/mcp/http/oauth/jose-modules.ts',
    standIn: 'functions/mcp/bundle/deferred-jose.ts',
    file: 'jose.js',
  },
  // OpenTelemetry: only a server with OTEL_* settings (telemetry/settings.ts) loads it, when its core starts.
  {
    module: 'functions/mcp/telemetry/telemetry-modules.ts',
    standIn: 'functions/mcp/bundle/deferred-telemetry.ts',
    file: 'telemetry.js',
  },
];

/** The deferred file whose code cache the build makes (the core, which every instance loads). */
const CODE_CACHED = 'mcp-core.js';

/**
 * `.py` files (the local sandbox's Python programs) are imported as their text. ASCII output (esbuild's default,
 * made explicit): the core's loader reads its file as latin1. The SDK's `_shims` (how its `Server` gets ajv)
 * resolve to a stand-in without ajv (functions/mcp/bundle/sdk-shims.ts).
 * @satisfies {import('esbuild').BuildOptions}
 */
const COMMON = {
  absWorkingDir: ROOT,
  bundle: true,
  platform: 'node',
  target: 'node20.10',
  format: 'cjs',
  minify: true,
  charset: 'ascii',
  legalComments: 'none',
  loader: { '.py': 'text' },
  alias: { '@modelcontextprotocol/server/_shims': './functions/mcp/bundle/sdk-shims.ts' },
};

/**
 * Source maps: each output file gets a `.map` beside it (index.js.map, mcp-core.js.map, …), read only when a stack
 * with a frame in that file is formatted (functions/mcp/stack-maps.ts), so that a logged stack names
 * `functions/…/x.ts:line:column` rather than `mcp-core.js:1:NNNNN`. Without `sourcesContent`: a stack needs
 * positions, not text. `sources` are relative paths written as if the map lay in the repository's dist/
 * (`../functions/mcp/core.ts`) wherever the build goes: next to dist/index.js they name the real files, next to
 * FC's /code/index.js they read /functions/mcp/core.ts, and no path of the build machine is in them.
 * @satisfies {import('esbuild').BuildOptions}
 */
const SOURCE_MAPS = { sourcemap: 'linked', sourcesContent: false };
const MAP_HOME = join(ROOT, 'dist');

/**
 * Resolves each deferred module to its stand-in, except as an entry point (its own file), and leaves the
 * stand-ins' requires of those files to run time.
 * @type {import('esbuild').Plugin}
 */
const DEFERRED = {
  name: 'deferred-modules',
  setup(build) {
    const byPath = new Map(DEFERRED_MODULES.map((deferred) => [join(ROOT, deferred.module), deferred]));
    const standIns = new Set(DEFERRED_MODULES.map((deferred) => join(ROOT, deferred.standIn)));
    const files = new Set(DEFERRED_MODULES.map((deferred) => `./${deferred.file}`));
    build.onResolve({ filter: /-modules$/ }, (args) => {
      const deferred = byPath.get(`${resolve(args.resolveDir, args.path)}.ts`);
      return deferred === undefined || args.kind === 'entry-point' ? undefined : { path: join(ROOT, deferred.standIn) };
    });
    build.onResolve({ filter: /^\.\/[\w-]+\.js$/ }, (args) =>
      files.has(args.path) && standIns.has(args.importer) ? { path: args.path, external: true } : undefined,
    );
  },
};

/**
 * The esbuild plugins of every build of the server's code: the deferred modules, and the SDK's public schemas
 * built only where used (scripts/build/spec-schemas-on-use.mjs, which fails the build on an SDK it was not
 * checked for).
 * @returns {import('esbuild').Plugin[]}
 */
function plugins() {
  return [DEFERRED, specSchemasOnUse(installedVersions(ROOT))];
}

/**
 * Builds into `outdir`: index.js, stdio.js, the deferred files, their maps, and the core's code cache for each of
 * `codeCacheNodes` (paths of node binaries; `[]` for none). Resolves with esbuild's results (metafiles included
 * when asked): `entries` of index.js, `rest` of the others. `minify: false` keeps function names readable in a
 * CPU profile (`node --cpu-prof`), for a build that only the bench runs.
 */
export async function build({
  outdir = 'dist',
  metafile = false,
  logLevel = /** @type {import('esbuild').LogLevel} */ ('warning'),
  minify = true,
  codeCacheNodes = [process.execPath],
} = {}) {
  const out = resolve(outdir);
  const common = { ...COMMON, ...SOURCE_MAPS, minify, metafile, logLevel, plugins: plugins(), write: false };
  const define = { __TOOL_LIST_JSON__: JSON.stringify(await toolListJson(common)) };
  // The deferred files and stdio.js first: index.js is given the hash of mcp-core.js, which names its code cache.
  const rest = await esbuild({
    ...common,
    define,
    outdir: out,
    entryPoints: {
      stdio: ENTRY_POINTS.stdio,
      ...Object.fromEntries(DEFERRED_MODULES.map((deferred) => [deferred.file.slice(0, -3), deferred.module])),
    },
  });
  const core = (rest.outputFiles ?? []).find((file) => file.path === join(out, CODE_CACHED));
  if (core === undefined) throw new Error(`build.mjs: esbuild wrote no ${CODE_CACHED}`);
  const coreHash = createHash('sha256').update(core.contents).digest('hex').slice(0, 12);
  const entries = await esbuild({
    ...common,
    define: { ...define, __MCP_CORE_HASH__: JSON.stringify(coreHash) },
    outdir: out,
    entryPoints: { index: ENTRY_POINTS.index },
  });
  mkdirSync(out, { recursive: true });
  for (const file of [...(rest.outputFiles ?? []), ...(entries.outputFiles ?? [])])
    writeFileSync(file.path, file.path.endsWith('.map') ? rebaseSources(file) : file.contents);
  writeCodeCaches(out, coreHash, codeCacheNodes, await bundleProgram('scripts/build/make-code-cache.ts', common));
  return { entries, rest };
}

/** A map with its `sources` made relative to dist/ (SOURCE_MAPS); esbuild's own (`<define:…>`) kept. */
function rebaseSources(/** @type {import('esbuild').OutputFile} */ output) {
  const map = JSON.parse(output.text);
  const sources = map.sources.map((/** @type {string} */ source) =>
    source.startsWith('<')
      ? source
      : relative(MAP_HOME, resolve(dirname(output.path), source))
          .split(sep)
          .join('/'),
  );
  return JSON.stringify({ ...map, sources });
}

/**
 * The program at `file` (a TypeScript file of the repository) bundled as the server is, as one CommonJS text, for
 * a child Node to run from stdin.
 * @param {string} file
 * @param {import('esbuild').BuildOptions} common
 */
async function bundleProgram(file, common) {
  const result = await esbuild({
    ...common,
    sourcemap: false,
    metafile: false,
    logLevel: 'silent',
    entryPoints: [file],
    outfile: join(tmpdir(), 'program.js'),
    write: false,
  });
  return result.outputFiles[0]?.text ?? '';
}

/**
 * The tool catalog's JSON, `describeTools(TOOLS)` of functions/mcp/tools/registry.ts, computed by running
 * scripts/build/print-tool-list.ts once, and given to the bundles as `__TOOL_LIST_JSON__`: a cold start then
 * parses one string rather than turning the tools' zod schemas into JSON Schema (~10 ms). From source (jest) the
 * registry computes it.
 * @param {import('esbuild').BuildOptions} common
 */
async function toolListJson(common) {
  const json = execFileSync(process.execPath, ['-'], {
    input: await bundleProgram('scripts/build/print-tool-list.ts', common),
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (!Array.isArray(JSON.parse(json)))
    throw new Error(`build.mjs: the tool list is not an array: ${json.slice(0, 200)}`);
  return json;
}

/**
 * Writes the core's code cache (functions/mcp/bundle/code-cache.ts) for each Node in `nodes` into `outdir`, each
 * made by scripts/build/make-code-cache.ts run with that Node. A Node that cannot make one says why on stderr;
 * the build goes on (the bundle then runs without a cache on that Node).
 * @param {string} outdir
 * @param {string} coreHash
 * @param {string[]} nodes
 * @param {string} program scripts/build/make-code-cache.ts, bundled
 */
function writeCodeCaches(outdir, coreHash, nodes, program) {
  // Caches of earlier builds would never be read again (their chunk hash differs): remove them.
  for (const file of readdirSync(outdir))
    if (file.startsWith(`${CODE_CACHED}.`) && file.endsWith('.cache')) rmSync(join(outdir, file));
  if (nodes.length === 0) return;
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
    for (const node of nodes) {
      try {
        execFileSync(node, ['-', outdir, coreHash], {
          input: program,
          stdio: ['pipe', 'ignore', 'pipe'],
          env,
          timeout: 60_000,
        });
      } catch (err) {
        const reason = /** @type {{ stderr?: Buffer, message: string }} */ (err);
        process.stderr.write(
          `build.mjs: no code cache for ${node}: ${String(reason.stderr ?? reason.message)
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // `--code-cache-node <path>` (repeatable): also make the core's code cache for that Node (the running one always).
  const extraNodes = process.argv.flatMap((arg, i) => (process.argv[i - 1] === '--code-cache-node' ? [arg] : []));
  await build({ logLevel: 'info', codeCacheNodes: [process.execPath, ...extraNodes] });
}
