/**
 * The core (core.ts), loaded on first need. The bundle carries this module as a compressed string that is
 * compiled only when called (build.mjs), so start-up neither reads nor compiles the SDK, zod and the tools;
 * from source it is a plain import.
 */
import * as core from './core';

export function loadCore(): typeof core {
  return core;
}
