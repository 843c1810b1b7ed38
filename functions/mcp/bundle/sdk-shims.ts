/**
 * What the bundle has in place of the MCP SDK's `@modelcontextprotocol/server/_shims` (build.mjs `alias`), the
 * module through which the SDK's `Server` gets its default JSON Schema validator: ajv with ajv-formats, for one
 * thing this server never does, validating a JSON Schema a client supplies (elicitation). Their top level would
 * cost ~15 ms of every cold start and ~300 KB of the core. The stand-in's validator can be made, as `Server` makes
 * it by default, but refuses to validate: were the server ever asked to, it would answer with this message rather
 * than a wrong result. `process` is the SDK's own Node shim, as it is.
 *
 * Its exports are the SDK module's (the type check below fails when the SDK's list changes, and esbuild fails the
 * build when the SDK imports a name this module does not export).
 */
import process from 'node:process';

import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/server';
import type * as Shims from '@modelcontextprotocol/server/_shims';

class NoJsonSchemaValidator implements jsonSchemaValidator {
  getValidator<T>(_schema: JsonSchemaType): JsonSchemaValidator<T> {
    throw new Error(
      'JSON Schema validation (ajv) is not in this build: the server validates no schema a client supplies',
    );
  }
}

export { NoJsonSchemaValidator as DefaultJsonSchemaValidator, process };

/** The SDK's exports, each with its stand-in here. */
export const SDK_SHIMS_STOOD_IN: Record<keyof typeof Shims, true> = { DefaultJsonSchemaValidator: true, process: true };
