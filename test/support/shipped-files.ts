/**
 * The files the deploy artifact carries (scripts/artifact.js), in its order, as dist/ has them: index.js, the files
 * it loads on first use, the source maps of all of them, then the core's V8 code caches (build.mjs).
 */
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';

export const DIST = resolve(__dirname, '../../dist');
/** The files index.js requires from its own directory on first use. */
export const DEFERRED_FILES = ['mcp-core.js', 'e2b-sdk.js', 'jose.js', 'telemetry.js'];
/** The maps index.js is shipped with: its own and those of the files it loads on first use. */
export const SHIPPED_MAPS = ['index.js.map', 'mcp-core.js.map', 'e2b-sdk.js.map', 'jose.js.map', 'telemetry.js.map'];
const CODE_CACHE = /^mcp-core\.js\.[0-9a-f]{12}-[0-9a-f]{8}\.cache$/;

/** The core's code caches in dist/ (one per Node the build made one for), sorted. */
export function codeCachesIn(dir = DIST): string[] {
  return readdirSync(dir)
    .filter((name) => CODE_CACHE.test(name))
    .sort();
}

/** Every file of code/ and of code.zip, in the artifact's order. */
export function shippedFiles(dir = DIST): string[] {
  return ['index.js', ...DEFERRED_FILES, ...SHIPPED_MAPS, ...codeCachesIn(dir)];
}
