/**
 * What the bundle has in place of core-modules.ts (build.mjs `DEFERRED_MODULES`): the core from mcp-core.js beside
 * the entry, run on the first call, compiled with its V8 code cache for this runtime when the build made one
 * (code-cache.ts). So start-up neither reads nor compiles the SDK, zod and the tools.
 */
import { join } from 'node:path';

import type * as CoreModules from '../core-modules';
import { type CodeCacheState, loadWithCodeCache } from './code-cache';

/** The hash of mcp-core.js's text (12 hex digits), given by the build, which names its code cache. */
declare const __MCP_CORE_HASH__: string;

let loaded: { core: ReturnType<typeof CoreModules.loadCore>; codeCache: CodeCacheState } | undefined;

export const loadCore: typeof CoreModules.loadCore = () => {
  if (loaded === undefined) {
    const { exports, codeCache } = loadWithCodeCache(join(__dirname, 'mcp-core.js'), __MCP_CORE_HASH__);
    loaded = { core: (exports as typeof CoreModules).loadCore(), codeCache };
  }
  return loaded.core;
};

export const codeCacheState: typeof CoreModules.codeCacheState = () => loaded?.codeCache;
