/**
 * OpenTelemetry's implementation (otel/otel-telemetry.ts and the SDK), loaded on first need. The build makes this
 * module a file of its own (telemetry.js) and gives everything else bundle/deferred-telemetry.ts in its place, which
 * requires that file only when called: a server without OTEL_* settings never reads or runs a line of OpenTelemetry.
 * From source it is a require on first call, for the same reason.
 */
import type * as OtelTelemetry from './otel/otel-telemetry';

export function loadOtelTelemetry(): typeof OtelTelemetry {
  return require('./otel/otel-telemetry') as typeof OtelTelemetry;
}
