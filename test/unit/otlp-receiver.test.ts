/**
 * The loopback OTLP receiver (test/support/otlp-receiver.ts) that the telemetry tests read exports with: the
 * official OpenTelemetry exporters send it a known parent and child span and a set of metrics over http/protobuf
 * and http/json, gzipped and not, and it must read every encoding to the same normalized values. Bodies built by
 * hand check the protobuf decoder on what the exporters never send (summaries, unpacked repeated fields, unknown
 * fields of every wire type, oneof and message-merge rules, kvlists, bytes, 64-bit integers) and the JSON reader on
 * the same data in OTLP/JSON. Deterministic: fixed ids and span times, forceFlush instead of timers.
 *
 * Spans come from @opentelemetry/sdk-trace (TracerProvider, SimpleSpanProcessor), the package that
 * @opentelemetry/sdk-trace-base 2.12 is a shim over and that the trace exporters themselves import.
 */
import { context, SpanKind, SpanStatusCode, trace, ValueType } from '@opentelemetry/api';
import type { Attributes, HrTime } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import type { ExportResult } from '@opentelemetry/core';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AggregationType, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { IdGenerator, ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { Agent, request } from 'node:http';
import { gzipSync } from 'node:zlib';

import { startOtlpReceiver } from '../support/otlp-receiver';
import type { OtlpReceiver, ReceivedMetric, ReceivedSpan } from '../support/otlp-receiver';

type Encoding = 'protobuf' | 'json';
/** The exporters' compression option (an enum of their base package, which the project does not depend on). */
type Compression = NonNullable<ConstructorParameters<typeof ProtoTraceExporter>[0]>['compression'];

// ---------------------------------------------------------------------------------------------------------------
// What the exporters send

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';
const CHILD_ID = '00f067aa0ba902b7';
const LINKED = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '53995c3f42cd8ad8', traceFlags: 1 };
const SECRET = 'sk-otlp-receiver-canary-1f2e3d';

/** Span times as HrTime [seconds, nanoseconds] and the nanoseconds they are on the wire. */
const at = (nanos: number): HrTime => [1_700_000_000, nanos];
const nanos = (n: number): bigint => 1_700_000_000n * 1_000_000_000n + BigInt(n);

/** Attribute values of every type an SDK attribute can have; 2^60 is beyond a double's exact integers. */
const PARENT_ATTRIBUTES: Attributes = {
  'test.string': 'hello',
  'test.bool': true,
  'test.int': 42,
  'test.negative': -42,
  'test.wide': 2 ** 40,
  'test.huge': 2 ** 60,
  'test.double': 3.25,
  'test.strings': ['a', 'b'],
  'test.bools': [true, false],
  'test.ints': [1, -2, 3],
  'test.doubles': [1.5, -2.5],
  'test.secret': SECRET,
};

/** The ids the spans get: one trace, the parent's span id then the child's. */
function fixedIds(): IdGenerator {
  const spanIds = [PARENT_ID, CHILD_ID];
  return { generateTraceId: () => TRACE_ID, generateSpanId: () => spanIds.shift() ?? 'ffffffffffffffff' };
}

/** A tracer provider whose spans go to `exporter` one by one as they end. */
function tracerProvider(exporter: SpanExporter): TracerProvider {
  return new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'otlp-receiver-test', 'deployment.region': 'cn-hangzhou' }),
    idGenerator: fixedIds(),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
}

/** The parent (server, error status, an event, a link) and its child (client, ok), with fixed times. */
function recordSpans(provider: TracerProvider): void {
  const tracer = provider.getTracer('receiver-test-scope', '1.2.3');
  const parent = tracer.startSpan('GET /things', {
    kind: SpanKind.SERVER,
    startTime: at(1000),
    attributes: PARENT_ATTRIBUTES,
    links: [{ context: LINKED, attributes: { 'link.reason': 'follows' } }],
  });
  parent.addEvent('cache.miss', { 'cache.key': 'things:1', 'cache.attempt': 2 }, at(1500));
  parent.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream failed' });
  const child = tracer.startSpan(
    'fetch upstream',
    { kind: SpanKind.CLIENT, startTime: at(2000), attributes: { 'peer.port': 443 } },
    trace.setSpan(context.active(), parent),
  );
  child.setStatus({ code: SpanStatusCode.OK });
  child.end(at(3000));
  parent.end(at(4000));
}

const RESOURCE = { 'service.name': 'otlp-receiver-test', 'deployment.region': 'cn-hangzhou' };
const SCOPE = { name: 'receiver-test-scope', version: '1.2.3' };

/** What the receiver must read from recordSpans, whatever the encoding (in order of span id). */
const EXPECTED_SPANS: ReceivedSpan[] = [
  {
    traceId: TRACE_ID,
    spanId: CHILD_ID,
    parentSpanId: PARENT_ID,
    name: 'fetch upstream',
    kind: 'client',
    startTimeUnixNano: nanos(2000),
    endTimeUnixNano: nanos(3000),
    attributes: { 'peer.port': 443 },
    status: { code: 'ok' },
    events: [],
    links: [],
    resource: RESOURCE,
    scope: SCOPE,
  },
  {
    traceId: TRACE_ID,
    spanId: PARENT_ID,
    parentSpanId: undefined,
    name: 'GET /things',
    kind: 'server',
    startTimeUnixNano: nanos(1000),
    endTimeUnixNano: nanos(4000),
    attributes: { ...PARENT_ATTRIBUTES, 'test.huge': 2n ** 60n } as ReceivedSpan['attributes'],
    status: { code: 'error', message: 'upstream failed' },
    events: [
      { name: 'cache.miss', timeUnixNano: nanos(1500), attributes: { 'cache.key': 'things:1', 'cache.attempt': 2 } },
    ],
    links: [{ traceId: LINKED.traceId, spanId: LINKED.spanId, attributes: { 'link.reason': 'follows' } }],
    resource: RESOURCE,
    scope: SCOPE,
  },
];

/** A meter provider read by `exporter` on forceFlush (its interval is longer than any test). */
function meterProvider(exporter: PushMetricExporter): MeterProvider {
  return new MeterProvider({
    resource: resourceFromAttributes(RESOURCE),
    readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 600_000 })],
    views: [{ instrumentName: 'test.sizes', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
  });
}

/** A counter (int), an up-down counter (negative int), a histogram, an exponential histogram and a gauge. */
function recordMetrics(provider: MeterProvider): void {
  const meter = provider.getMeter('receiver-test-scope', '1.2.3');
  const requests = meter.createCounter('test.requests', {
    description: 'Requests served',
    unit: '{request}',
    valueType: ValueType.INT,
  });
  requests.add(3, { route: '/a' });
  requests.add(4, { route: '/a' });
  requests.add(1, { route: '/b' });
  meter.createUpDownCounter('test.inflight', { valueType: ValueType.INT }).add(-2, { pool: 'main' });
  const latency = meter.createHistogram('test.latency', {
    unit: 'ms',
    advice: { explicitBucketBoundaries: [1, 10, 100] },
  });
  for (const ms of [0.5, 5, 50, 500]) latency.record(ms, { route: '/a', 'test.secret': SECRET });
  const sizes = meter.createHistogram('test.sizes', { unit: 'By' });
  for (const size of [1, 2, 4]) sizes.record(size);
  meter.createGauge('test.temperature', { unit: 'Cel' }).record(21.5, { room: 'lab' });
}

const POINT_BASE = {
  description: '',
  unit: '',
  startTimeUnixNano: expect.any(BigInt),
  timeUnixNano: expect.any(BigInt),
  resource: RESOURCE,
  scope: SCOPE,
};

/** What the receiver must read from recordMetrics (times aside: the SDK takes them from the clock). */
const EXPECTED_METRICS: ReceivedMetric[] = [
  {
    ...POINT_BASE,
    name: 'test.requests',
    description: 'Requests served',
    unit: '{request}',
    kind: 'sum',
    attributes: { route: '/a' },
    value: 7,
    isMonotonic: true,
    temporality: 'cumulative',
  },
  {
    ...POINT_BASE,
    name: 'test.requests',
    description: 'Requests served',
    unit: '{request}',
    kind: 'sum',
    attributes: { route: '/b' },
    value: 1,
    isMonotonic: true,
    temporality: 'cumulative',
  },
  {
    ...POINT_BASE,
    name: 'test.inflight',
    kind: 'sum',
    attributes: { pool: 'main' },
    value: -2,
    isMonotonic: false,
    temporality: 'cumulative',
  },
  {
    ...POINT_BASE,
    name: 'test.latency',
    unit: 'ms',
    kind: 'histogram',
    attributes: { route: '/a', 'test.secret': SECRET },
    temporality: 'cumulative',
    count: 4,
    sum: 555.5,
    min: 0.5,
    max: 500,
    bucketCounts: [1, 1, 1, 1],
    explicitBounds: [1, 10, 100],
  },
  {
    ...POINT_BASE,
    name: 'test.sizes',
    unit: 'By',
    kind: 'exponentialHistogram',
    attributes: {},
    temporality: 'cumulative',
    count: 3,
    sum: 7,
    min: 1,
    max: 4,
    scale: expect.any(Number),
    zeroCount: 0,
    positive: { offset: expect.any(Number), bucketCounts: expect.any(Array) },
    negative: { offset: expect.any(Number), bucketCounts: expect.any(Array) },
  },
  { ...POINT_BASE, name: 'test.temperature', unit: 'Cel', kind: 'gauge', attributes: { room: 'lab' }, value: 21.5 },
];

/** The exporters for one encoding, sending to `receiver`. */
function exporters(receiver: OtlpReceiver, encoding: Encoding, gzip: boolean, timeoutMillis = 5000) {
  const compression = (gzip ? 'gzip' : 'none') as Compression;
  const options = (signal: string) => ({ url: `${receiver.endpoint}/v1/${signal}`, compression, timeoutMillis });
  const made =
    encoding === 'protobuf'
      ? { traces: new ProtoTraceExporter(options('traces')), metrics: new ProtoMetricExporter(options('metrics')) }
      : { traces: new JsonTraceExporter(options('traces')), metrics: new JsonMetricExporter(options('metrics')) };
  return { traces: withHttpLoaded(made.traces), metrics: withHttpLoaded(made.metrics) };
}

/**
 * Gives an exporter's Node transport `node:http` up front. The transport loads it on its first export with a
 * dynamic import() (@opentelemetry/otlp-exporter-base 0.223.0, transport/http-exporter-transport.js), which Jest's
 * CommonJS sandbox refuses ("A dynamic import callback was invoked without --experimental-vm-modules"); it keeps
 * what it loaded in `_utils`, so setting that first skips the import and nothing else (the request, compression,
 * headers, retries and response handling stay the exporter's own). A process outside Jest, such as the server a
 * test starts, needs none of this. Throws when the exporter's internals are no longer where this expects them.
 */
function withHttpLoaded<T extends object>(exporter: T): T {
  const transport = ['_delegate', '_transport', '_transport'].reduce<unknown>(
    (at, field) => (typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[field] : undefined),
    exporter,
  );
  if (typeof transport !== 'object' || transport === null || (transport as { _utils?: unknown })._utils !== null) {
    throw new Error('the OTLP exporter has no HttpExporterTransport at _delegate._transport._transport any more');
  }
  (transport as { _utils: unknown })._utils = { agent: new Agent({ keepAlive: true }), request };
  return exporter;
}

/** Sends the spans and the metrics over `encoding`; returns what the receiver read of them. */
async function exportAll(receiver: OtlpReceiver, encoding: Encoding, gzip: boolean) {
  const { traces, metrics } = exporters(receiver, encoding, gzip);
  const tracers = tracerProvider(traces);
  recordSpans(tracers);
  await tracers.forceFlush();
  await tracers.shutdown();
  await receiver.waitFor((r) => r.spans().length >= 2, 'the parent and child spans');

  const meters = meterProvider(metrics);
  recordMetrics(meters);
  await meters.forceFlush();
  await receiver.waitFor((r) => r.metrics().length > 0, 'the metric data points');
  // Read before shutdown, which exports (the same cumulative points) once more.
  const result = { spans: receiver.spans(), metrics: receiver.metrics(), requests: [...receiver.requests] };
  await meters.shutdown();
  return result;
}

/**
 * Spans in a fixed order (by span id): SimpleSpanProcessor exports each span as it ends, and two exports in
 * flight at once may arrive in either order.
 */
function bySpanId(spans: ReceivedSpan[]): ReceivedSpan[] {
  return [...spans].sort((a, b) => a.spanId.localeCompare(b.spanId));
}

/** Data points in a fixed order (by name, then attributes): the SDK's order is its own. */
function sorted(points: ReceivedMetric[]): ReceivedMetric[] {
  const key = (point: ReceivedMetric) => `${point.name} ${JSON.stringify(point.attributes)}`;
  return [...points].sort((a, b) => key(a).localeCompare(key(b)));
}

/** An exporter's own verdict on one export. */
function exportResult<T>(exporter: { export(items: T, done: (result: ExportResult) => void): void }, items: T) {
  return new Promise<ExportResult>((resolve) => exporter.export(items, resolve));
}

const receivers: OtlpReceiver[] = [];
async function receiver(options?: { status?: number }): Promise<OtlpReceiver> {
  const started = await startOtlpReceiver(options);
  receivers.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

// ---------------------------------------------------------------------------------------------------------------
// The official exporters

describe('OTLP receiver, fed by the official exporters', () => {
  it.each([
    ['protobuf', false],
    ['json', false],
    ['protobuf', true],
    ['json', true],
  ] as const)('reads spans and metrics sent as %s (gzip: %s)', async (encoding, gzip) => {
    const otlp = await receiver();
    const { spans, metrics, requests } = await exportAll(otlp, encoding, gzip);

    expect(bySpanId(spans)).toEqual(EXPECTED_SPANS);
    for (const span of spans) expect(span.startTimeUnixNano < span.endTimeUnixNano).toBe(true);
    expect(sorted(metrics)).toEqual(sorted(EXPECTED_METRICS));
    const exponential = metrics.find((m) => m.kind === 'exponentialHistogram');
    expect(exponential?.positive?.bucketCounts.reduce((a, b) => a + b, 0)).toBe(3);
    for (const point of metrics) expect(point.startTimeUnixNano <= point.timeUnixNano).toBe(true);

    expect(requests.map((r) => [r.path, r.encoding, r.gzip, r.status])).toEqual([
      ['/v1/traces', encoding, gzip, 200],
      ['/v1/traces', encoding, gzip, 200],
      ['/v1/metrics', encoding, gzip, 200],
    ]);
    const contentType = encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json';
    expect(requests[0]?.headers['content-type']).toBe(contentType);
    expect(requests[0]?.headers['user-agent']).toMatch(/^OTel-OTLP-Exporter-JavaScript\//);
    expect(otlp.allText()).toContain(SECRET);
  });

  it('reads both encodings to identical spans, and identical metrics but for their times', async () => {
    const [proto, json] = [await receiver(), await receiver()];
    const fromProto = await exportAll(proto, 'protobuf', true);
    const fromJson = await exportAll(json, 'json', false);
    expect(bySpanId(fromJson.spans)).toEqual(bySpanId(fromProto.spans));
    const timeless = (points: ReceivedMetric[]) => points.map(({ startTimeUnixNano, timeUnixNano, ...rest }) => rest);
    expect(timeless(fromJson.metrics)).toEqual(timeless(fromProto.metrics));
  });

  it.each(['protobuf', 'json'] as const)(
    'answers options.status (503), which the %s exporters report as a failed export',
    async (encoding) => {
      const otlp = await receiver({ status: 503 });
      // A timeout shorter than the exporters' first retry backoff (1 s +-20%, so at least 800 ms), which they retry
      // a 503 only within: one request each, and the verdict at once.
      const { traces, metrics } = exporters(otlp, encoding, false, 750);

      const memory = new InMemorySpanExporter();
      const tracers = tracerProvider(memory);
      recordSpans(tracers);
      const spans: ReadableSpan[] = memory.getFinishedSpans();
      const traceResult = await exportResult(traces, spans);
      expect(traceResult.code).toBe(ExportResultCode.FAILED);

      const reader = new PeriodicExportingMetricReader({ exporter: metrics, exportIntervalMillis: 600_000 });
      const meters = new MeterProvider({ readers: [reader] });
      recordMetrics(meters);
      const { resourceMetrics } = await reader.collect();
      const metricResult = await exportResult(metrics, resourceMetrics);
      expect(metricResult.code).toBe(ExportResultCode.FAILED);

      expect(otlp.requests.map((r) => [r.path, r.status])).toEqual([
        ['/v1/traces', 503],
        ['/v1/metrics', 503],
      ]);
      // Refused data is not counted as received, but every string of it is still scanned.
      expect(otlp.spans()).toEqual([]);
      expect(otlp.metrics()).toEqual([]);
      expect(otlp.allText()).toContain(SECRET);
      await Promise.all([tracers.shutdown(), traces.shutdown(), metrics.shutdown()]);
    },
  );
});

// ---------------------------------------------------------------------------------------------------------------
// The receiver itself

describe('OTLP receiver', () => {
  it('waitFor rejects after its timeout with the text of what it waited for', async () => {
    const otlp = await receiver();
    await expect(otlp.waitFor((r) => r.spans().length > 0, 'a span named never-sent', 50)).rejects.toThrow(
      /timed out after 50 ms waiting for a span named never-sent \(received 0 requests/,
    );
  });

  it('waitFor resolves at once when its predicate holds, and rejects with what the predicate throws', async () => {
    const otlp = await receiver();
    await expect(otlp.waitFor(() => true, 'nothing')).resolves.toBeUndefined();
    const broken = () => {
      throw new Error('predicate broke');
    };
    await expect(otlp.waitFor(broken, 'something')).rejects.toThrow('predicate broke');
  });

  it('waitFor checks again as each request arrives, and rejects when the receiver closes', async () => {
    const otlp = await receiver();
    const arrived = otlp.waitFor((r) => r.requests.length === 1, 'one request');
    const body = new Uint8Array(Buffer.from('{}'));
    expect(await post(otlp, '/v1/traces', 'application/json', body)).toBe(200);
    await expect(arrived).resolves.toBeUndefined();
    const pending = otlp.waitFor((r) => r.requests.length === 2, 'a second request');
    await otlp.close();
    await expect(pending).rejects.toThrow('closed while waiting for a second request');
  });

  it('answers 404 off the OTLP paths, 415 for other content types and encodings, 400 for a bad body', async () => {
    const otlp = await receiver();
    const post = (path: string, type: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
      fetch(`${otlp.endpoint}${path}`, { method: 'POST', headers: { 'content-type': type, ...headers }, body });
    expect((await fetch(`${otlp.endpoint}/v1/traces`)).status).toBe(404);
    expect((await post('/v1/other', 'application/json', '{}')).status).toBe(404);
    expect((await post('/v1/traces', 'text/plain', '{}')).status).toBe(415);
    expect((await post('/v1/traces', 'application/json', '{}', { 'content-encoding': 'br' })).status).toBe(415);
    expect(otlp.requests).toEqual([]);

    const logs = await post('/v1/logs', 'application/json; charset=utf-8', '{"resourceLogs":[]}');
    expect([logs.status, await logs.text()]).toEqual([200, '{}']);
    const truncated = await post('/v1/traces', 'application/x-protobuf', new Uint8Array([0x0a, 0x05, 0x01]));
    expect(truncated.status).toBe(400);
    const notJson = await post('/v1/metrics', 'application/json', '{"resourceMetrics": [');
    expect(notJson.status).toBe(400);
    expect(otlp.requests.map((r) => [r.path, r.status, r.error !== undefined])).toEqual([
      ['/v1/logs', 200, false],
      ['/v1/traces', 400, true],
      ['/v1/metrics', 400, true],
    ]);
    expect(otlp.requests[1]?.error).toMatch(/truncated/);
  });

  it('answers an empty protobuf message as protobuf', async () => {
    const otlp = await receiver();
    const res = await fetch(`${otlp.endpoint}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: new Uint8Array(),
    });
    expect([res.status, res.headers.get('content-type'), (await res.arrayBuffer()).byteLength]).toEqual([
      200,
      'application/x-protobuf',
      0,
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Bodies built by hand: a minimal protobuf encoder (https://protobuf.dev/programming-guides/encoding/)

type Bytes = number[];
const WIRE = { varint: 0, i64: 1, len: 2, sgroup: 3, egroup: 4, i32: 5 } as const;

/** An unsigned base-128 varint (negative int64s as their 64-bit two's complement: ten bytes). */
function varint(value: bigint | number): Bytes {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: Bytes = [];
  for (; v > 0x7fn; v >>= 7n) out.push(Number(v & 0x7fn) | 0x80);
  return [...out, Number(v)];
}
const key = (field: number, wire: number): Bytes => varint((field << 3) | wire);
const little = (size: number, write: (view: DataView) => void): Bytes => {
  const view = new DataView(new ArrayBuffer(size));
  write(view);
  return [...new Uint8Array(view.buffer)];
};
const pb = {
  varint: (field: number, value: bigint | number): Bytes => [...key(field, WIRE.varint), ...varint(value)],
  sint32: (field: number, n: number): Bytes => pb.varint(field, ((n << 1) ^ (n >> 31)) >>> 0),
  fixed64: (field: number, n: bigint): Bytes => [
    ...key(field, WIRE.i64),
    ...little(8, (v) => v.setBigUint64(0, BigInt.asUintN(64, n), true)),
  ],
  sfixed64: (field: number, n: bigint): Bytes => [
    ...key(field, WIRE.i64),
    ...little(8, (v) => v.setBigInt64(0, n, true)),
  ],
  double: (field: number, x: number): Bytes => [...key(field, WIRE.i64), ...little(8, (v) => v.setFloat64(0, x, true))],
  fixed32: (field: number, n: number): Bytes => [...key(field, WIRE.i32), ...little(4, (v) => v.setUint32(0, n, true))],
  bytes: (field: number, bytes: Bytes): Bytes => [...key(field, WIRE.len), ...varint(bytes.length), ...bytes],
  string: (field: number, s: string): Bytes => pb.bytes(field, [...Buffer.from(s, 'utf8')]),
  message: (field: number, ...parts: Bytes[]): Bytes => pb.bytes(field, parts.flat()),
  packedDoubles: (field: number, xs: number[]): Bytes =>
    pb.bytes(
      field,
      xs.flatMap((x) => little(8, (v) => v.setFloat64(0, x, true))),
    ),
  packedVarints: (field: number, ns: number[]): Bytes =>
    pb.bytes(
      field,
      ns.flatMap((n) => varint(n)),
    ),
  hex: (field: number, hex: string): Bytes => pb.bytes(field, [...Buffer.from(hex, 'hex')]),
};
/** AnyValue members. */
const any = {
  string: (s: string) => pb.string(1, s),
  bool: (b: boolean) => pb.varint(2, b ? 1 : 0),
  int: (n: bigint) => pb.varint(3, n),
  double: (x: number) => pb.double(4, x),
  array: (...items: Bytes[]) => pb.message(5, ...items.map((item) => pb.bytes(1, item))),
  kvlist: (...pairs: Array<[string, Bytes]>) => pb.message(6, ...pairs.map(([k, v]) => keyValue(1, k, v))),
  bytes: (bytes: Bytes) => pb.bytes(7, bytes),
};
/** A KeyValue as field `field` of its message. */
const keyValue = (field: number, k: string, value: Bytes): Bytes =>
  pb.message(field, pb.string(1, k), pb.bytes(2, value));
/** Fields of every wire type that no OTLP message has, which a decoder must skip. */
const UNKNOWN_FIELDS: Bytes[] = [
  pb.varint(1999, 2n ** 64n - 1n),
  pb.fixed64(1998, 1n),
  pb.string(1997, 'an unknown field'),
  pb.fixed32(1996, 7),
  [
    ...key(1995, WIRE.sgroup),
    ...pb.varint(1, 5),
    ...key(1, WIRE.sgroup),
    ...key(1, WIRE.egroup),
    ...key(1995, WIRE.egroup),
  ],
];
/** One span with every AnyValue member, unknown fields, a oneof set twice and a status sent in two parts. */
function handTraceRequest(): Uint8Array {
  const span = [
    pb.hex(1, TRACE_ID),
    pb.hex(2, CHILD_ID),
    pb.hex(4, PARENT_ID),
    pb.fixed32(16, 0x101),
    pb.string(5, 'hand span'),
    pb.varint(6, 5),
    pb.fixed64(7, 10n),
    pb.fixed64(8, 2n ** 63n + 5n),
    keyValue(9, 'nested', any.array(any.kvlist(['k', any.string('v')], ['n', any.int(-7n)]), any.bool(true))),
    keyValue(9, 'raw', any.bytes([...Buffer.from('hi')])),
    keyValue(9, 'beyond-safe', any.int(-(2n ** 53n) - 1n)),
    keyValue(9, 'last-member-wins', [...any.string('first'), ...any.int(9n)]),
    keyValue(9, 'empty', []),
    keyValue(9, 'double', any.double(-0.125)),
    ...UNKNOWN_FIELDS,
    pb.message(15, pb.string(2, 'partly')),
    pb.message(15, pb.varint(3, 2)),
  ];
  const scopeSpans = [pb.message(1, pb.string(1, 'hand-scope')), pb.message(2, ...span)];
  const resourceSpans = [pb.message(1, keyValue(1, 'service.name', any.string('hand'))), pb.message(2, ...scopeSpans)];
  return new Uint8Array(pb.message(1, ...resourceSpans));
}

/** A summary, a histogram with unpacked counts, an exponential histogram with negative sint32s, an int gauge. */
function handMetricsRequest(): Uint8Array {
  const times = [pb.fixed64(2, 1n), pb.fixed64(3, 2n)];
  const summaryPoint = [
    keyValue(7, 'q', any.string('summary')),
    ...times,
    pb.fixed64(4, 5n),
    pb.double(5, 12.5),
    pb.message(6, pb.double(1, 0.5), pb.double(2, 2)),
    pb.message(6, pb.double(1, 0.99), pb.double(2, 4)),
  ];
  const histogramPoint = [
    ...times,
    pb.fixed64(4, 6n),
    pb.fixed64(6, 1n),
    pb.fixed64(6, 2n),
    pb.fixed64(6, 3n),
    pb.packedDoubles(7, [0.5, 5]),
    ...UNKNOWN_FIELDS,
  ];
  const exponentialPoint = [
    ...times,
    pb.fixed64(4, 4n),
    pb.sint32(6, -2),
    pb.fixed64(7, 1n),
    pb.message(8, pb.sint32(1, -3), pb.packedVarints(2, [1, 2])),
  ];
  const gaugePoint = [...times, pb.sfixed64(6, -5n)];
  const metrics = [
    pb.message(
      2,
      pb.string(1, 'hand.summary'),
      pb.string(2, 'a summary'),
      pb.string(3, 's'),
      pb.message(11, pb.message(1, ...summaryPoint)),
    ),
    pb.message(2, pb.string(1, 'hand.histogram'), pb.message(9, pb.message(1, ...histogramPoint), pb.varint(2, 1))),
    pb.message(
      2,
      pb.string(1, 'hand.exponential'),
      pb.message(10, pb.message(1, ...exponentialPoint), pb.varint(2, 2)),
    ),
    pb.message(2, pb.string(1, 'hand.gauge'), pb.message(5, pb.message(1, ...gaugePoint))),
  ];
  const scopeMetrics = [pb.message(1, pb.string(1, 'hand-scope'), pb.string(2, '0.1')), ...metrics];
  const resourceMetrics = [
    pb.message(1, keyValue(1, 'service.name', any.string('hand'))),
    pb.message(2, ...scopeMetrics),
  ];
  return new Uint8Array(pb.message(1, ...resourceMetrics));
}

/** The same metrics in OTLP/JSON: int64s as strings (and one as a number), ids as hex, enums as integers. */
const HAND_METRICS_JSON = {
  resourceMetrics: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'hand' } }] },
      scopeMetrics: [
        {
          scope: { name: 'hand-scope', version: '0.1' },
          metrics: [
            {
              name: 'hand.summary',
              description: 'a summary',
              unit: 's',
              summary: {
                dataPoints: [
                  {
                    attributes: [{ key: 'q', value: { stringValue: 'summary' } }],
                    startTimeUnixNano: '1',
                    timeUnixNano: '2',
                    count: '5',
                    sum: 12.5,
                    quantileValues: [
                      { quantile: 0.5, value: 2 },
                      { quantile: 0.99, value: 4 },
                    ],
                  },
                ],
              },
            },
            {
              name: 'hand.histogram',
              histogram: {
                aggregationTemporality: 1,
                dataPoints: [
                  {
                    startTimeUnixNano: '1',
                    timeUnixNano: 2,
                    count: '6',
                    bucketCounts: ['1', '2', 3],
                    explicitBounds: [0.5, 5],
                    unknownField: 'ignored',
                  },
                ],
              },
            },
            {
              name: 'hand.exponential',
              exponentialHistogram: {
                aggregationTemporality: 2,
                dataPoints: [
                  {
                    startTimeUnixNano: '1',
                    timeUnixNano: '2',
                    count: '4',
                    scale: -2,
                    zeroCount: '1',
                    positive: { offset: -3, bucketCounts: ['1', '2'] },
                  },
                ],
              },
            },
            {
              name: 'hand.gauge',
              gauge: { dataPoints: [{ startTimeUnixNano: '1', timeUnixNano: '2', asInt: '-5' }] },
            },
          ],
        },
      ],
    },
  ],
};

const HAND_BASE = {
  description: '',
  unit: '',
  attributes: {},
  startTimeUnixNano: 1n,
  timeUnixNano: 2n,
  resource: { 'service.name': 'hand' },
  scope: { name: 'hand-scope', version: '0.1' },
};
const HAND_METRICS: ReceivedMetric[] = [
  {
    ...HAND_BASE,
    name: 'hand.summary',
    description: 'a summary',
    unit: 's',
    kind: 'summary',
    attributes: { q: 'summary' },
    count: 5,
    sum: 12.5,
    quantileValues: [
      { quantile: 0.5, value: 2 },
      { quantile: 0.99, value: 4 },
    ],
  },
  {
    ...HAND_BASE,
    name: 'hand.histogram',
    kind: 'histogram',
    temporality: 'delta',
    count: 6,
    bucketCounts: [1, 2, 3],
    explicitBounds: [0.5, 5],
  },
  {
    ...HAND_BASE,
    name: 'hand.exponential',
    kind: 'exponentialHistogram',
    temporality: 'cumulative',
    count: 4,
    scale: -2,
    zeroCount: 1,
    positive: { offset: -3, bucketCounts: [1, 2] },
    negative: { offset: 0, bucketCounts: [] },
  },
  { ...HAND_BASE, name: 'hand.gauge', kind: 'gauge', value: -5 },
];

/** Posts a body to the receiver as `type`, gzipped or not. */
async function post(otlp: OtlpReceiver, path: string, type: string, body: Uint8Array, gzip = false): Promise<number> {
  const headers: Record<string, string> = { 'content-type': type };
  if (gzip) headers['content-encoding'] = 'gzip';
  const res = await fetch(`${otlp.endpoint}${path}`, {
    method: 'POST',
    headers,
    body: gzip ? gzipSync(body) : body,
  });
  await res.arrayBuffer();
  return res.status;
}

describe('OTLP receiver, on bodies built by hand', () => {
  it('decodes protobuf by the wire rules: unknown fields skipped, last oneof member, messages merged', async () => {
    const otlp = await receiver();
    expect(await post(otlp, '/v1/traces', 'application/x-protobuf', handTraceRequest(), true)).toBe(200);
    expect(otlp.spans()).toEqual([
      {
        traceId: TRACE_ID,
        spanId: CHILD_ID,
        parentSpanId: PARENT_ID,
        name: 'hand span',
        kind: 'consumer',
        startTimeUnixNano: 10n,
        endTimeUnixNano: 2n ** 63n + 5n,
        attributes: {
          nested: [{ k: 'v', n: -7 }, true],
          raw: new Uint8Array(Buffer.from('hi')),
          'beyond-safe': -(2n ** 53n) - 1n,
          'last-member-wins': 9,
          empty: null,
          double: -0.125,
        },
        status: { code: 'error', message: 'partly' },
        events: [],
        links: [],
        resource: { 'service.name': 'hand' },
        scope: { name: 'hand-scope' },
      },
    ]);
    expect(otlp.allText()).toContain('hi');
  });

  it('reads the same metrics from protobuf and from OTLP/JSON', async () => {
    const otlp = await receiver();
    expect(await post(otlp, '/v1/metrics', 'application/x-protobuf', handMetricsRequest())).toBe(200);
    expect(otlp.metrics()).toEqual(HAND_METRICS);
    const json = new Uint8Array(Buffer.from(JSON.stringify(HAND_METRICS_JSON)));
    expect(await post(otlp, '/v1/metrics', 'application/json', json, true)).toBe(200);
    expect(otlp.metrics()).toEqual([...HAND_METRICS, ...HAND_METRICS]);
    expect(otlp.allText()).toContain('a summary');
  });

  it('reads OTLP/JSON spans: upper-case hex ids, string int64s, kvlists, base64 bytes', async () => {
    const otlp = await receiver();
    const body = {
      resourceSpans: [
        {
          scopeSpans: [
            {
              scope: { name: 's' },
              spans: [
                {
                  traceId: TRACE_ID.toUpperCase(),
                  spanId: PARENT_ID.toUpperCase(),
                  parentSpanId: '',
                  name: 'json span',
                  kind: 2,
                  startTimeUnixNano: '1700000000000001000',
                  endTimeUnixNano: '1700000000000004000',
                  attributes: [
                    { key: 'big', value: { intValue: '-9007199254740993' } },
                    { key: 'map', value: { kvlistValue: { values: [{ key: 'x', value: { doubleValue: 'NaN' } }] } } },
                    { key: 'raw', value: { bytesValue: Buffer.from('hi').toString('base64') } },
                  ],
                  status: {},
                },
              ],
            },
          ],
        },
      ],
    };
    const json = new Uint8Array(Buffer.from(JSON.stringify(body)));
    expect(await post(otlp, '/v1/traces', 'application/json', json)).toBe(200);
    expect(otlp.spans()).toEqual([
      {
        traceId: TRACE_ID,
        spanId: PARENT_ID,
        parentSpanId: undefined,
        name: 'json span',
        kind: 'server',
        startTimeUnixNano: nanos(1000),
        endTimeUnixNano: nanos(4000),
        attributes: { big: -(2n ** 53n) - 1n, map: { x: Number.NaN }, raw: new Uint8Array(Buffer.from('hi')) },
        status: { code: 'unset' },
        events: [],
        links: [],
        resource: {},
        scope: { name: 's' },
      },
    ]);
  });
});
