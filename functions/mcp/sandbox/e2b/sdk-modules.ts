/**
 * The E2B SDK modules, loaded on first use. The bundle carries this module as a string compiled only
 * when called (build.mjs), so its ~500 KB cost nothing at start-up; from source it is a plain import.
 */
export async function loadE2BModules() {
  const [e2b, codeInterpreter] = await Promise.all([import('e2b'), import('@e2b/code-interpreter')]);
  return { e2b, codeInterpreter };
}
