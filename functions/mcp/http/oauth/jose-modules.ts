/**
 * jose (JOSE and JWT), loaded on first use. The bundle carries this module as a string compiled only when called
 * (build.mjs DEFERRED_MODULES), so a server without MCP_OAUTH_ISSUER never compiles it; from source it is a plain
 * import.
 */
export async function loadJose() {
  return import('jose');
}
