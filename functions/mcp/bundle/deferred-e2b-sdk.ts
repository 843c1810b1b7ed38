/**
 * What the bundle has in place of sandbox/e2b/sdk-modules.ts (build.mjs `DEFERRED_MODULES`): the E2B SDK from
 * e2b-sdk.js beside the bundle, required on the first call, so that its ~500 KB are neither read nor compiled
 * before the E2B backend's first sandbox.
 */
import type * as SdkModules from '../sandbox/e2b/sdk-modules';

export const loadE2BModules: typeof SdkModules.loadE2BModules = () =>
  (require('./e2b-sdk.js') as typeof SdkModules).loadE2BModules();
