/** Span and metric attributes as OpenTelemetry takes them. */
import type { Attributes } from '@opentelemetry/api';

import type { SpanAttributes } from '../telemetry';

/** Attributes without the undefined ones (OpenTelemetry drops them, but only after a warning). */
export function clean(attributes: SpanAttributes): Attributes {
  const kept: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) kept[key] = value;
  return kept;
}
