/**
 * The core (core.ts), loaded on first need. The build makes this module a file of its own (mcp-core.js) and gives
 * the entry bundle/deferred-core.ts in its place, which loads that file on the first call, so start-up neither
 * reads nor compiles the SDK, zod and the tools; from source it is a plain import.
 */
import * as core from './core';

export function loadCore(): typeof core {
  return core;
}

/**
 * How the bundle compiled the core: from the V8 code cache made for this Node at build time (`used`), with one V8
 * refused (`rejected`: other flags), or without one (`none`: no cache for this runtime beside the bundle); for the
 * `core loaded` log line. `undefined` before the core is loaded, and from source, where nothing is compiled here.
 */
export function codeCacheState(): 'used' | 'rejected' | 'none' | undefined {
  return undefined;
}
