// The floor under figure 12: what the official OpenTelemetry SDK alone costs for one request of ours, with no server
// around it. Per request, in a loop: an HTTP server span and a child MCP server span with the attributes ours sets
// (names as functions/mcp/telemetry/mcp-messages.ts gives them), a histogram record of the call's duration with the
// attributes ours records, the MCP span active (AsyncLocalStorage, as ours) across an awaited step, both spans ended,
// batched and exported over OTLP/HTTP protobuf to the sink at argv[2]. Prints `{ cpuUsPerRequest, alsUsPerRequest,
// exportedSpans }`; `alsUsPerRequest` is what the context manager adds (the same loop without it). Run as a child
// process (bench/figures/telemetry.mjs), so that its CPU time is its own.
import { context, metrics, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

const origin = process.argv[2];
const REQUESTS = Number(process.argv[3] ?? 100_000);
const resource = resourceFromAttributes({
  'service.name': 'floor',
  'service.version': '0',
  'service.instance.id': 'x',
});
let exportedSpans = 0;
const exporter = new OTLPTraceExporter({ url: `${origin}/v1/traces` });
const counting = {
  export: (spans, done) => {
    exportedSpans += spans.length;
    exporter.export(spans, done);
  },
  shutdown: () => exporter.shutdown(),
  forceFlush: () => exporter.forceFlush(),
};
const tracerProvider = new TracerProvider({
  resource,
  spanProcessors: [new BatchSpanProcessor({ exporter: counting })],
});
const meterProvider = new MeterProvider({
  resource,
  readers: [
    new PeriodicExportingMetricReader({
      exporter: new OTLPMetricExporter({ url: `${origin}/v1/metrics` }),
      exportIntervalMillis: 60_000,
    }),
  ],
});
metrics.setGlobalMeterProvider(meterProvider);
const tracer = tracerProvider.getTracer('floor', '0');
const duration = meterProvider.getMeter('floor').createHistogram('mcp.server.operation.duration', { unit: 's' });
const tick = () => new Promise((resolve) => setImmediate(resolve));

async function request(i) {
  const http = tracer.startSpan('POST /mcp', {
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': 'POST', 'http.route': '/mcp' },
  });
  const mcp = tracer.startSpan(
    'tools/call sandbox_status',
    {
      kind: SpanKind.SERVER,
      attributes: {
        'mcp.method.name': 'tools/call',
        'jsonrpc.request.id': String(i),
        'gen_ai.tool.name': 'sandbox_status',
        'gen_ai.operation.name': 'execute_tool',
      },
    },
    trace.setSpan(ROOT_CONTEXT, http),
  );
  const started = performance.now();
  // The request's work: one awaited step with the MCP span active, as ours handles a message.
  await context.with(trace.setSpan(ROOT_CONTEXT, mcp), async () => {
    await Promise.resolve(trace.getActiveSpan());
  });
  mcp.setAttributes({
    'mcp.session.id': '0123456789ab',
    'mcp.protocol.version': '2025-11-25',
    'sandbox_mcp.era': 'legacy',
    'sandbox_mcp.credential': 'anonymous',
  });
  mcp.end();
  duration.record((performance.now() - started) / 1000, {
    'mcp.method.name': 'tools/call',
    'gen_ai.tool.name': 'sandbox_status',
    'mcp.protocol.version': '2025-11-25',
    'sandbox_mcp.credential': 'anonymous',
  });
  http.setAttributes({ 'mcp.session.id': '0123456789ab', 'http.response.status_code': 200 });
  http.end();
}

/** CPU µs per request over `n` requests, yielding now and then so that the batch processor can export. */
async function measure(n) {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i += 1) {
    await request(i);
    if (i % 64 === 0) await tick();
  }
  await tracerProvider.forceFlush();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

await measure(REQUESTS / 10); // warm-up, without the context manager
const bare = await measure(REQUESTS);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
await measure(REQUESTS / 10);
const withAls = await measure(REQUESTS);
await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
console.log(JSON.stringify({ cpuUsPerRequest: withAls, alsUsPerRequest: withAls - bare, exportedSpans }));
