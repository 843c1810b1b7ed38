/**
 * What the bundle has in place of http/oauth/jose-modules.ts (build.mjs `DEFERRED_MODULES`): jose from jose.js
 * beside the bundle, required on the first call, so that a server without MCP_OAUTH_ISSUER never reads it.
 */
import type * as JoseModules from '../http/oauth/jose-modules';

export const loadJose: typeof JoseModules.loadJose = () => (require('./jose.js') as typeof JoseModules).loadJose();
