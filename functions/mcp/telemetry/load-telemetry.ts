/**
 * The server's telemetry: none (NO_TELEMETRY) without OTEL_* settings, else OpenTelemetry, loaded now
 * (telemetry-modules.ts). Pure of OpenTelemetry itself.
 */
import type { Logger } from '../log';
import { SERVER_INFO } from '../version';
import type { TelemetrySettings } from './settings';
import { type HeldCounts, NO_TELEMETRY, type Telemetry } from './telemetry';
import { loadOtelTelemetry } from './telemetry-modules';

export interface TelemetryDeps {
  readonly logger: Logger;
  /** FC's variables (FC_INSTANCE_ID, FC_REGION, FC_FUNCTION_NAME) describe the process in every export. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** What the instance holds, read when metrics are collected. */
  readonly held: () => HeldCounts;
}

export function createTelemetry(settings: TelemetrySettings | undefined, deps: TelemetryDeps): Telemetry {
  if (settings === undefined) return NO_TELEMETRY;
  const { env } = deps;
  const telemetry = loadOtelTelemetry().createOtelTelemetry({
    settings,
    logger: deps.logger,
    held: deps.held,
    resource: {
      serviceVersion: SERVER_INFO.version,
      instanceId: env.FC_INSTANCE_ID?.trim() || crypto.randomUUID(),
      ...(env.FC_REGION !== undefined && { region: env.FC_REGION }),
      ...(env.FC_FUNCTION_NAME !== undefined && { functionName: env.FC_FUNCTION_NAME }),
    },
  });
  deps.logger.info('telemetry on', {
    traces: settings.traces === undefined ? 'off' : `${settings.traces.protocol} ${originOf(settings.traces.url)}`,
    metrics: settings.metrics === undefined ? 'off' : `${settings.metrics.protocol} ${originOf(settings.metrics.url)}`,
    service: settings.serviceName,
  });
  return telemetry;
}

/** Where exports go, without a path or query that might carry a key. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'an unparsable URL';
  }
}
