/**
 * The V8 code cache of the core (mcp-core.js): the bytecode of its compiled functions, made at build time by each
 * Node asked (scripts/build/make-code-cache.ts) and written beside the bundle as
 * `mcp-core.js.<chunk hash>-<runtime key>.cache`. The bundle reads only the file of its own chunk and runtime, and
 * compiles without one when there is none.
 *
 * The chunk hash (of the file's text, from the build) keeps a cache of another build from being used: V8 checks
 * only the source's length. The runtime key hashes the Node version, its V8 version, platform, arch, build
 * configuration (`process.config`) and the size of the node binary, because a cache from another Node build is not
 * always refused: one made by Node 20.20.2 and fed to 20.10.0 (the same V8 11.3.244.8) crashed the process with a
 * segmentation fault. V8 itself refuses a cache made under other flags (`cachedDataRejected`), and the file is then
 * compiled as without one.
 */
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { Script } from 'node:vm';

/** How a file was compiled: from its code cache, with one V8 refused, or without one for this runtime. */
export type CodeCacheState = 'used' | 'rejected' | 'none';

/** The runtime's identity, hashed (FNV-1a, 8 hex digits): the loader and the cache maker compute it alike. */
export function runtimeKey(): string {
  const identity = JSON.stringify([
    process.version,
    process.versions.v8,
    process.platform,
    process.arch,
    process.config,
    statSync(process.execPath).size,
  ]);
  let hash = 0x811c9dc5;
  for (let i = 0; i < identity.length; i += 1) hash = Math.imul(hash ^ identity.charCodeAt(i), 0x01000193) >>> 0;
  return hash.toString(16).padStart(8, '0');
}

/** The name of `file`'s code cache for the chunk of `chunkHash` (12 hex digits) and this runtime. */
export function codeCacheName(file: string, chunkHash: string): string {
  return `${file}.${chunkHash}-${runtimeKey()}.cache`;
}

/**
 * The function a CommonJS file is compiled into. Its text starts on the wrapper's second line, counted as its
 * first (`lineOffset: -1`), so that a frame in it reads `mcp-core.js:line:column` of the file as it is, which is
 * what its source map is of.
 */
const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {\n';
const WRAPPER_TAIL = '\n})';

/** What `loadWithCodeCache` gives: the file's `module.exports`, and how it was compiled. */
export interface Loaded {
  exports: unknown;
  codeCache: CodeCacheState;
}

/**
 * Runs the CommonJS file at `path` as `require` would, compiled with its code cache for this runtime when one lies
 * beside it. Read as latin1: the build writes ASCII (`charset` in build.mjs), which latin1 decodes in a third of
 * the time utf8 takes, into the same string. Compiled under its file name alone (`mcp-core.js`), as the cache was
 * made: a script compiled from a cache keeps the name the cache was made under, and functions/mcp/stack-maps.ts
 * finds a frame's map by that name beside the entry. `vm.Script` rather than `vm.compileFunction`: only a script
 * can make its cache after it has run (scripts/build/make-code-cache.ts), so that the cache holds the functions a
 * first tool call compiles, not the top level alone.
 */
export function loadWithCodeCache(path: string, chunkHash: string): Loaded {
  const name = basename(path);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(join(dirname(path), codeCacheName(name, chunkHash)));
  } catch {
    // None for this runtime: compiled as without a cache.
  }
  const script = new Script(WRAPPER_HEAD + readFileSync(path, 'latin1') + WRAPPER_TAIL, {
    filename: name,
    lineOffset: -1,
    cachedData,
  });
  const codeCache = cachedData === undefined ? 'none' : script.cachedDataRejected === true ? 'rejected' : 'used';
  const module = { exports: {} as unknown };
  const wrapper = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: { exports: unknown },
    filename: string,
    dirname: string,
  ) => void;
  wrapper(module.exports, createRequire(path), module, path, dirname(path));
  return { exports: module.exports, codeCache };
}
