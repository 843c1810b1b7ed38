/**
 * The OpenTelemetry SDK as the settings ask: a tracer provider whose spans go out in batches, and a meter provider
 * read every OTEL_METRIC_EXPORT_INTERVAL, each to its OTLP/HTTP endpoint in protobuf or JSON. Spans follow the
 * active context through async calls (AsyncLocalStorage), set here as the process's context manager: this module is
 * loaded only when telemetry is on, so a server without it pays for none of that.
 */
import { context, diag, DiagLogLevel, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtobufMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

import type { SamplerSettings, SignalExport, TelemetrySettings } from '../settings';

/** What describes this process in every span and metric (the resource), besides OTEL_RESOURCE_ATTRIBUTES. */
export interface ResourceFacts {
  readonly serviceVersion: string;
  /** FC's instance id, or a random one per process. */
  readonly instanceId: string;
  /** FC_REGION and FC_FUNCTION_NAME, when on FC. */
  readonly region?: string;
  readonly functionName?: string;
}

export interface Providers {
  readonly tracerProvider: TracerProvider | undefined;
  readonly meterProvider: MeterProvider | undefined;
  /** Exports what is buffered; resolves when done or after `timeoutMs`, never rejects. */
  flush(timeoutMs: number): Promise<void>;
  shutdown(): Promise<void>;
}

/** Where the SDK's own complaints (an export that failed) go: one line each, never a header or a payload. */
export type DiagSink = (message: string) => void;

/** Builds the providers and makes AsyncLocalStorage the context manager. */
export function createProviders(settings: TelemetrySettings, facts: ResourceFacts, onDiag: DiagSink): Providers {
  diag.setLogger(
    {
      error: (message) => onDiag(String(message).slice(0, 300)),
      warn: (message) => onDiag(String(message).slice(0, 300)),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());

  const resource = resourceFromAttributes({
    ...settings.resourceAttributes,
    'service.name': settings.serviceName,
    'service.version': facts.serviceVersion,
    'service.instance.id': facts.instanceId,
    ...(facts.region !== undefined && { 'cloud.provider': 'alibaba_cloud', 'cloud.region': facts.region }),
    ...(facts.functionName !== undefined && { 'faas.name': facts.functionName, 'cloud.platform': 'alibaba_cloud_fc' }),
  });
  const tracerProvider =
    settings.traces === undefined
      ? undefined
      : new TracerProvider({
          resource,
          sampler: toSampler(settings.sampler),
          spanProcessors: [
            new BatchSpanProcessor({
              exporter: toTraceExporter(settings.traces),
              scheduledDelayMillis: settings.spanDelayMs,
              exportTimeoutMillis: settings.traces.timeoutMs,
            }),
          ],
        });
  const meterProvider =
    settings.metrics === undefined
      ? undefined
      : new MeterProvider({
          resource,
          readers: [
            new PeriodicExportingMetricReader({
              exporter: toMetricExporter(settings.metrics),
              exportIntervalMillis: settings.metricIntervalMs,
              exportTimeoutMillis: Math.min(settings.metrics.timeoutMs, settings.metricIntervalMs),
            }),
          ],
        });
  return {
    tracerProvider,
    meterProvider,
    async flush(timeoutMs) {
      const flushes = [tracerProvider?.forceFlush(), meterProvider?.forceFlush({ timeoutMillis: timeoutMs })];
      await within(Promise.allSettled(flushes), timeoutMs);
    },
    async shutdown() {
      await Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
    },
  };
}

function toSampler({ name, parentBased, ratio }: SamplerSettings): Sampler {
  const root =
    name === 'always_off'
      ? new AlwaysOffSampler()
      : name === 'traceidratio'
        ? new TraceIdRatioBasedSampler(ratio)
        : new AlwaysOnSampler();
  return parentBased ? new ParentBasedSampler({ root }) : root;
}

/** The exporters' own enum for `gzip` and `none` (the same strings), named through their options' type. */
type Compression = NonNullable<NonNullable<ConstructorParameters<typeof ProtobufTraceExporter>[0]>['compression']>;

function exporterOptions(signal: SignalExport) {
  return {
    url: signal.url,
    headers: { ...signal.headers },
    timeoutMillis: signal.timeoutMs,
    compression: signal.compression as Compression,
  };
}

function toTraceExporter(signal: SignalExport) {
  const options = exporterOptions(signal);
  return signal.protocol === 'http/json' ? new JsonTraceExporter(options) : new ProtobufTraceExporter(options);
}

function toMetricExporter(signal: SignalExport) {
  const options = exporterOptions(signal);
  return signal.protocol === 'http/json' ? new JsonMetricExporter(options) : new ProtobufMetricExporter(options);
}

/** `work`, or nothing once `ms` have passed (the timer does not keep the process alive). */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([work.then(() => undefined), late]);
  clearTimeout(timer);
}
