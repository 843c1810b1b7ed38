/**
 * The E2B SDK modules, loaded on first use. The build makes this module a file of its own (e2b-sdk.js), required
 * on the first call (bundle/deferred-e2b-sdk.ts), so its ~500 KB cost nothing at start-up; from source it is a
 * plain import.
 */
export async function loadE2BModules() {
  const [e2b, codeInterpreter] = await Promise.all([import('e2b'), import('@e2b/code-interpreter')]);
  return { e2b, codeInterpreter };
}
