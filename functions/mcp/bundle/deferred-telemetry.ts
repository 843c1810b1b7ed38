/**
 * What the bundle has in place of telemetry/telemetry-modules.ts (build.mjs `DEFERRED_MODULES`): OpenTelemetry from
 * telemetry.js beside the bundle, required on the first call, which only a server with OTEL_* settings makes.
 */
import type * as TelemetryModules from '../telemetry/telemetry-modules';

export const loadOtelTelemetry: typeof TelemetryModules.loadOtelTelemetry = () =>
  (require('./telemetry.js') as typeof TelemetryModules).loadOtelTelemetry();
