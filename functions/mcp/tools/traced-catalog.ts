/**
 * The tool catalog with each call's outcome on its MCP span (telemetry/telemetry.ts): `error.type` is `tool_error`
 * for a result with `isError` (a failure the model reads, which JSON-RPC reports as a success), or the JSON-RPC
 * error code, with `rpc.response.status_code`, for a call refused as a protocol error. Used only when telemetry is
 * on.
 */
import { ProtocolError } from '@modelcontextprotocol/server';

import type { Telemetry } from '../telemetry/telemetry';
import type { ToolCatalog } from './registry';

export function traceToolCatalog(catalog: ToolCatalog, telemetry: Telemetry): ToolCatalog {
  return {
    list: catalog.list,
    async call(name, args, ctx) {
      try {
        const result = await catalog.call(name, args, ctx);
        if (result.isError === true) telemetry.annotate({ 'error.type': 'tool_error' });
        return result;
      } catch (err: unknown) {
        if (err instanceof ProtocolError)
          telemetry.annotate({ 'error.type': String(err.code), 'rpc.response.status_code': String(err.code) });
        throw err;
      }
    },
  };
}
