/**
 * The server's metrics: MCP operation durations as the semantic conventions for MCP name them
 * (`mcp.server.operation.duration`), refusals by code, E2B API call durations, and what the instance holds
 * (sessions, and sandboxes per credential, by its non-reversible principal). Durations are in seconds, as the
 * conventions ask. One record per MCP message: HTTP request durations are left to the spans, as each record costs
 * every request its share (docs/observability.md). Without a meter provider (metrics off) every recording does
 * nothing.
 */
import type { Meter } from '@opentelemetry/api';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';

import { SERVER_INFO } from '../../version';
import type { HeldCounts, SpanAttributes } from '../telemetry';
import { clean } from './attributes';

export interface Metrics {
  operation(ms: number, attributes: SpanAttributes): void;
  refusal(code: string): void;
  e2bCall(ms: number, attributes: SpanAttributes): void;
}

/** The semantic conventions' advice for MCP and HTTP durations, in seconds. */
const DURATION_BUCKETS_S = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120, 300,
];

const NO_METRICS: Metrics = {
  operation: () => undefined,
  refusal: () => undefined,
  e2bCall: () => undefined,
};

export function createMetrics(provider: MeterProvider | undefined, held: () => HeldCounts): Metrics {
  if (provider === undefined) return NO_METRICS;
  const meter: Meter = provider.getMeter(SERVER_INFO.name, SERVER_INFO.version);
  const seconds = (name: string, description: string) =>
    meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: DURATION_BUCKETS_S } });
  const operations = seconds('mcp.server.operation.duration', 'MCP request or notification duration on the server');
  const e2bCalls = seconds('sandbox_mcp.e2b.api.duration', "Duration of the E2B SDK's calls, each attempt");
  const refusals = meter.createCounter('sandbox_mcp.refusals', {
    unit: '{request}',
    description: 'Requests refused, by the refusal code (error.type)',
  });
  meter
    .createObservableGauge('sandbox_mcp.sessions', {
      unit: '{session}',
      description: '2025-era sessions held by this instance',
    })
    .addCallback((result) => result.observe(held().sessions));
  meter
    .createObservableGauge('sandbox_mcp.sandboxes', {
      unit: '{sandbox}',
      description: 'Running sandboxes held by this instance, by credential (its non-reversible principal)',
    })
    .addCallback((result) => {
      for (const [credential, count] of held().sandboxesByCredential)
        result.observe(count, { 'sandbox_mcp.credential': credential });
    });
  return {
    operation: (ms, attributes) => operations.record(ms / 1000, clean(attributes)),
    refusal: (code) => refusals.add(1, { 'error.type': code }),
    e2bCall: (ms, attributes) => e2bCalls.record(ms / 1000, clean(attributes)),
  };
}
