/**
 * A loopback OTLP/HTTP receiver for tests: it takes what an OTLP exporter sends to `${endpoint}/v1/traces` and
 * `/v1/metrics` (and `/v1/logs`, accepted and not read), as binary protobuf or OTLP/JSON, gzipped or not, and gives
 * the spans and metric data points back in one normalized shape whichever encoding carried them, so that a test can
 * check what the server exports over either encoding, and scan every string it exported (`allText`).
 *
 * The OTLP/HTTP protocol: https://opentelemetry.io/docs/specs/otlp/#otlphttp (JSON encoding:
 * https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding). The protobuf decoder is otlp-protobuf.ts.
 *
 * Normalized values: ids are lower-case hex; times are bigint nanoseconds; enums are names. An integer attribute
 * (AnyValue.int_value, int64) is a number when it is a safe integer and a bigint beyond that; a double is a number
 * (so the int 3 and the double 3.0 both read 3); bytes are a Uint8Array; an AnyValue with no value is null. Metric
 * values and counts are numbers (they are exact up to 2^53). Fields the sender left out read as the proto3 default
 * (empty string, 0, false), except the optional ones (`parentSpanId`, status `message`, scope `version`, histogram
 * `sum`/`min`/`max`), which are then absent.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

import { decodeMetricsRequest, decodeTraceRequest } from './otlp-protobuf';

/** An attribute value (an OTLP AnyValue), normalized as the header says. */
export type AttrValue = string | boolean | number | bigint | Uint8Array | null | AttrValue[] | AttrMap;
export interface AttrMap {
  [key: string]: AttrValue;
}

export type SpanKind = 'unspecified' | 'internal' | 'server' | 'client' | 'producer' | 'consumer';
export type StatusCode = 'unset' | 'ok' | 'error';
export type Temporality = 'unspecified' | 'delta' | 'cumulative';
export type MetricKind = 'gauge' | 'sum' | 'histogram' | 'exponentialHistogram' | 'summary';

export interface ReceivedScope {
  name: string;
  version?: string;
}

export interface ReceivedSpan {
  /** 32 lower-case hex digits. */
  traceId: string;
  /** 16 lower-case hex digits. */
  spanId: string;
  /** Undefined for a root span. */
  parentSpanId: string | undefined;
  name: string;
  kind: SpanKind;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: AttrMap;
  status: { code: StatusCode; message?: string };
  events: Array<{ name: string; timeUnixNano: bigint; attributes: AttrMap }>;
  links: Array<{ traceId: string; spanId: string; attributes: AttrMap }>;
  /** The attributes of the resource the span was sent under. */
  resource: AttrMap;
  scope: ReceivedScope;
}

/** One metric data point, with its metric's name, description and unit. Which fields are set depends on `kind`. */
export interface ReceivedMetric {
  name: string;
  description: string;
  unit: string;
  kind: MetricKind;
  attributes: AttrMap;
  startTimeUnixNano: bigint;
  timeUnixNano: bigint;
  /** gauge, sum: the value (as_double or as_int); absent when the point has neither. */
  value?: number;
  /** sum. */
  isMonotonic?: boolean;
  /** sum, histogram, exponentialHistogram. */
  temporality?: Temporality;
  /** histogram, exponentialHistogram, summary (`sum` is optional on the histograms). */
  count?: number;
  sum?: number;
  /** histogram, exponentialHistogram, when sent. */
  min?: number;
  max?: number;
  /** histogram: one more count than bounds. */
  bucketCounts?: number[];
  explicitBounds?: number[];
  /** exponentialHistogram. */
  scale?: number;
  zeroCount?: number;
  positive?: { offset: number; bucketCounts: number[] };
  negative?: { offset: number; bucketCounts: number[] };
  /** summary. */
  quantileValues?: Array<{ quantile: number; value: number }>;
  resource: AttrMap;
  scope: ReceivedScope;
}

/** One request the receiver took (a known path and content type). */
export interface ReceivedRequest {
  path: string;
  encoding: 'protobuf' | 'json';
  /** Sent with Content-Encoding: gzip. */
  gzip: boolean;
  /** The request headers, lower-case names (repeated headers joined with ", "). */
  headers: Record<string, string>;
  /** The status the receiver answered: 200, `options.status`, or 400 when the body did not decode. */
  status: number;
  /** Why the body did not decode (then nothing of it is in spans() or metrics()). */
  error?: string;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>, the value for OTEL_EXPORTER_OTLP_ENDPOINT (exporters append /v1/traces, /v1/metrics). */
  readonly endpoint: string;
  /** Every request taken, in order of arrival. */
  readonly requests: ReadonlyArray<ReceivedRequest>;
  /** Every span received so far from requests answered 2xx, in order, normalized. */
  spans(): ReceivedSpan[];
  /** Every metric data point received so far from requests answered 2xx, in order, normalized. */
  metrics(): ReceivedMetric[];
  /**
   * Resolves when `predicate(this)` holds, checked now and after each request; rejects after `timeoutMs` (default
   * 5000) with an error naming `what`, or with what the predicate threw, or when the receiver closes.
   */
  waitFor(predicate: (r: OtlpReceiver) => boolean, what: string, timeoutMs?: number): Promise<void>;
  /**
   * Every string received, one per line, for tests that scan exports for secrets: each request body as text
   * (after gunzip) and every string in each decoded body (attribute keys and values at any depth, bytes values as
   * UTF-8, names, status messages, resource and scope attributes, metric names, descriptions and units, ...),
   * from requests answered with any status. Request headers are not included (`requests` has them).
   */
  allText(): string;
  /** Stops listening and drops open connections; pending waitFor calls reject. */
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1 (a free port). `status` is what it answers every export (default 200). */
export async function startOtlpReceiver(options: { status?: number } = {}): Promise<OtlpReceiver> {
  const receiver = new Receiver(options.status ?? 200);
  await receiver.listen();
  return receiver;
}

// ---------------------------------------------------------------------------------------------------------------
// The HTTP side

/** The signal each path carries. */
const SIGNALS: Readonly<Record<string, 'traces' | 'metrics' | 'logs'>> = {
  '/v1/traces': 'traces',
  '/v1/metrics': 'metrics',
  '/v1/logs': 'logs',
};
/** The media type of each encoding (request and response). */
const MEDIA_TYPES = { protobuf: 'application/x-protobuf', json: 'application/json' } as const;
/** The largest body taken, before and after gunzip (the size the OTLP spec recommends). */
const BODY_LIMIT = 64 * 1024 * 1024;
const DEFAULT_WAIT_MS = 5000;

interface Waiter {
  what: string;
  check(): void;
  fail(error: Error): void;
}

class Receiver implements OtlpReceiver {
  readonly requests: ReceivedRequest[] = [];
  private spanList: ReceivedSpan[] = [];
  private metricList: ReceivedMetric[] = [];
  private texts: string[] = [];
  private readonly waiters = new Set<Waiter>();
  private readonly server: Server;
  private port = 0;

  constructor(private readonly status: number) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => answerText(res, 500, String(error)));
    });
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Listens on 127.0.0.1 only, on a port the system picks. */
  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  spans(): ReceivedSpan[] {
    return [...this.spanList];
  }

  metrics(): ReceivedMetric[] {
    return [...this.metricList];
  }

  allText(): string {
    return this.texts.join('\n');
  }

  waitFor(predicate: (r: OtlpReceiver) => boolean, what: string, timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        if (error === undefined) resolve();
        else reject(error);
      };
      const waiter: Waiter = {
        what,
        check: () => {
          try {
            if (predicate(this)) settle();
          } catch (error) {
            settle(error instanceof Error ? error : new Error(String(error)));
          }
        },
        fail: (error) => settle(error),
      };
      const timer = setTimeout(() => {
        settle(new Error(`OTLP receiver: timed out after ${timeoutMs} ms waiting for ${what} (${this.summary()})`));
      }, timeoutMs);
      this.waiters.add(waiter);
      waiter.check();
    });
  }

  async close(): Promise<void> {
    for (const waiter of [...this.waiters]) {
      waiter.fail(new Error(`OTLP receiver: closed while waiting for ${waiter.what} (${this.summary()})`));
    }
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** What has arrived, for a timeout's message. */
  private summary(): string {
    const failed = this.requests.filter((r) => r.error !== undefined).length;
    return (
      `received ${this.requests.length} requests (${failed} undecodable), ${this.spanList.length} spans, ` +
      `${this.metricList.length} metric data points`
    );
  }

  /** Answers one request: 404 for another path or method, 415 for another content type or encoding. */
  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const signal = SIGNALS[path];
    if (req.method !== 'POST' || signal === undefined) return answerText(res, 404, 'not an OTLP/HTTP path');
    const encoding = encodingOf(req.headers['content-type']);
    const contentEncoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding === undefined) return answerText(res, 415, 'expected application/x-protobuf or application/json');
    if (contentEncoding !== 'gzip' && contentEncoding !== 'identity') {
      return answerText(res, 415, `unsupported content-encoding ${contentEncoding}`);
    }
    const body = await readBody(req, BODY_LIMIT);
    if (body === undefined) return answerText(res, 413, `the body is over ${BODY_LIMIT} bytes`);
    const request: ReceivedRequest = {
      path,
      encoding,
      gzip: contentEncoding === 'gzip',
      headers: headersOf(req),
      status: this.status,
    };
    this.requests.push(request);
    try {
      this.take(signal, encoding, request.gzip ? gunzipSync(body, { maxOutputLength: BODY_LIMIT }) : body);
    } catch (error) {
      request.status = 400;
      request.error = error instanceof Error ? error.message : String(error);
    }
    if (request.error === undefined) answerExport(res, request.status, encoding);
    else answerText(res, 400, request.error);
    for (const waiter of [...this.waiters]) waiter.check();
  }

  /** Decodes one body; keeps its text and strings, and (when answered 2xx) its spans or data points. */
  private take(signal: 'traces' | 'metrics' | 'logs', encoding: 'protobuf' | 'json', body: Buffer): void {
    this.texts.push(body.toString('utf8'));
    if (signal === 'logs') return;
    const decoded = decodeBody(signal, encoding, body);
    // Concatenated rather than pushed with spread: a large body can have more strings than a call has arguments.
    this.texts = this.texts.concat(stringsIn(decoded));
    // Normalized before anything is kept, so that a body that fails to normalize adds no spans or points.
    const accepted = this.status >= 200 && this.status < 300;
    if (signal === 'traces') {
      const spans = spansOf(decoded);
      if (accepted) this.spanList = this.spanList.concat(spans);
    } else {
      const points = metricsOf(decoded);
      if (accepted) this.metricList = this.metricList.concat(points);
    }
  }
}

/** 'protobuf' or 'json' for the two OTLP media types (parameters such as charset ignored), else undefined. */
function encodingOf(contentType: string | undefined): 'protobuf' | 'json' | undefined {
  const media = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (media === MEDIA_TYPES.protobuf) return 'protobuf';
  if (media === MEDIA_TYPES.json) return 'json';
  return undefined;
}

/** The whole body, or undefined (and the rest unread) once it passes `limit` bytes. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The request headers, names lower-case (as Node gives them), repeated ones joined. */
function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** An empty Export<signal>ServiceResponse in the request's encoding: an empty protobuf message is zero bytes. */
function answerExport(res: ServerResponse, status: number, encoding: 'protobuf' | 'json'): void {
  const body = encoding === 'json' ? '{}' : '';
  res.writeHead(status, { 'content-type': MEDIA_TYPES[encoding], 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** A plain-text answer (refusals and errors); when the headers are already out, only ends the response. */
function answerText(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The request as a tree in the OTLP/JSON shape, from either encoding. */
function decodeBody(signal: 'traces' | 'metrics', encoding: 'protobuf' | 'json', body: Buffer): unknown {
  if (encoding === 'json') return JSON.parse(body.toString('utf8'));
  return signal === 'traces' ? decodeTraceRequest(body) : decodeMetricsRequest(body);
}

/** Every string in a decoded tree (bytesValue also as UTF-8 text), depth first. */
function stringsIn(tree: unknown, key = ''): string[] {
  if (typeof tree === 'string') {
    return key === 'bytesValue' ? [tree, Buffer.from(tree, 'base64').toString('utf8')] : [tree];
  }
  if (Array.isArray(tree)) return tree.flatMap((item) => stringsIn(item));
  if (isObject(tree)) return Object.entries(tree).flatMap(([name, value]) => stringsIn(value, name));
  return [];
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the decoded tree: the same code for protobuf (decoded by otlp-protobuf.ts) and JSON (parsed)

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A field of a message; undefined when absent or when `message` is no message. */
function get(message: unknown, name: string): unknown {
  return isObject(message) ? message[name] : undefined;
}

/** A repeated field's elements (absent reads as empty). */
function list(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Error(`OTLP: expected a list, got ${describe(value)}`);
  return value;
}

/** A string field ('' when absent). */
function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new Error(`OTLP: expected a string, got ${describe(value)}`);
  return value;
}

/** A non-empty string field, or undefined for absent and ''. */
function optionalText(value: unknown): string | undefined {
  const s = text(value);
  return s === '' ? undefined : s;
}

/** A bool field (false when absent). */
function bool(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new Error(`OTLP: expected a boolean, got ${describe(value)}`);
  return value;
}

/** A 64-bit integer field: bigint (protobuf), or a decimal string or integral number (JSON); 0 when absent. */
function int64(value: unknown): bigint {
  if (value === undefined || value === null) return 0n;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
  throw new Error(`OTLP: expected a 64-bit integer, got ${describe(value)}`);
}

/** A 32-bit integer field (JSON: a number, or a decimal string, which proto3 JSON also allows). */
function int32(value: unknown): number {
  return Number(int64(value));
}

/** A double field: a number, or one of the strings proto3 JSON uses (NaN, Infinity, -Infinity, a decimal). */
function double(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value))) return Number(value);
  if (value === 'NaN') return Number.NaN;
  throw new Error(`OTLP: expected a double, got ${describe(value)}`);
}

/** An optional double (proto3 `optional`): undefined when absent. */
function optionalDouble(value: unknown): number | undefined {
  return value === undefined || value === null ? undefined : double(value);
}

/** A trace or span id: lower-case hex (protobuf ids are decoded to hex; OTLP/JSON's hex is case-insensitive). */
function id(value: unknown): string {
  const hex = text(value).toLowerCase();
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) throw new Error(`OTLP: expected a hex id, got ${describe(value)}`);
  return hex;
}

/** An enum field as its name in `names` (by number; JSON may also carry the proto name in `protoNames`). */
function enumName<T extends string>(value: unknown, names: readonly T[], protoNames: readonly string[]): T {
  const index = typeof value === 'string' && protoNames.includes(value) ? protoNames.indexOf(value) : int32(value);
  const name = names[index];
  if (name === undefined) throw new Error(`OTLP: enum value ${describe(value)} is not one of ${protoNames}`);
  return name;
}

function describe(value: unknown): string {
  return typeof value === 'bigint' ? `${value}n` : JSON.stringify(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Attributes, resource, scope

/** An int64 attribute: a number when it is a safe integer, else a bigint. */
function intAttribute(value: bigint): number | bigint {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

/** An AnyValue, by whichever member of its oneof is set. */
function attrValue(any: unknown): AttrValue {
  if (get(any, 'stringValue') !== undefined) return text(get(any, 'stringValue'));
  if (get(any, 'boolValue') !== undefined) return bool(get(any, 'boolValue'));
  if (get(any, 'intValue') !== undefined) return intAttribute(int64(get(any, 'intValue')));
  if (get(any, 'doubleValue') !== undefined) return double(get(any, 'doubleValue'));
  if (get(any, 'arrayValue') !== undefined) return list(get(get(any, 'arrayValue'), 'values')).map(attrValue);
  if (get(any, 'kvlistValue') !== undefined) return attributes(get(get(any, 'kvlistValue'), 'values'));
  if (get(any, 'bytesValue') !== undefined) return new Uint8Array(Buffer.from(text(get(any, 'bytesValue')), 'base64'));
  return null;
}

/** A repeated KeyValue as an object (a key sent twice keeps its last value). */
function attributes(keyValues: unknown): AttrMap {
  const map: AttrMap = {};
  for (const kv of list(keyValues)) map[text(get(kv, 'key'))] = attrValue(get(kv, 'value'));
  return map;
}

function scopeOf(scope: unknown): ReceivedScope {
  const version = optionalText(get(scope, 'version'));
  return version === undefined ? { name: text(get(scope, 'name')) } : { name: text(get(scope, 'name')), version };
}

// ---------------------------------------------------------------------------------------------------------------
// Spans

const SPAN_KINDS: readonly SpanKind[] = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const SPAN_KIND_NAMES = SPAN_KINDS.map((kind) => `SPAN_KIND_${kind.toUpperCase()}`);
const STATUS_CODES: readonly StatusCode[] = ['unset', 'ok', 'error'];
const STATUS_CODE_NAMES = STATUS_CODES.map((code) => `STATUS_CODE_${code.toUpperCase()}`);

/** The spans of an ExportTraceServiceRequest, each with its resource's attributes and its scope. */
function spansOf(request: unknown): ReceivedSpan[] {
  return list(get(request, 'resourceSpans')).flatMap((resourceSpans) => {
    const resource = attributes(get(get(resourceSpans, 'resource'), 'attributes'));
    return list(get(resourceSpans, 'scopeSpans')).flatMap((scopeSpans) => {
      const scope = scopeOf(get(scopeSpans, 'scope'));
      return list(get(scopeSpans, 'spans')).map((span) => spanOf(span, resource, scope));
    });
  });
}

function spanOf(span: unknown, resource: AttrMap, scope: ReceivedScope): ReceivedSpan {
  const parent = id(get(span, 'parentSpanId'));
  return {
    traceId: id(get(span, 'traceId')),
    spanId: id(get(span, 'spanId')),
    parentSpanId: parent === '' ? undefined : parent,
    name: text(get(span, 'name')),
    kind: enumName(get(span, 'kind'), SPAN_KINDS, SPAN_KIND_NAMES),
    startTimeUnixNano: int64(get(span, 'startTimeUnixNano')),
    endTimeUnixNano: int64(get(span, 'endTimeUnixNano')),
    attributes: attributes(get(span, 'attributes')),
    status: statusOf(get(span, 'status')),
    events: list(get(span, 'events')).map((event) => ({
      name: text(get(event, 'name')),
      timeUnixNano: int64(get(event, 'timeUnixNano')),
      attributes: attributes(get(event, 'attributes')),
    })),
    links: list(get(span, 'links')).map((link) => ({
      traceId: id(get(link, 'traceId')),
      spanId: id(get(link, 'spanId')),
      attributes: attributes(get(link, 'attributes')),
    })),
    resource,
    scope,
  };
}

function statusOf(status: unknown): ReceivedSpan['status'] {
  const code = enumName(get(status, 'code'), STATUS_CODES, STATUS_CODE_NAMES);
  const message = optionalText(get(status, 'message'));
  return message === undefined ? { code } : { code, message };
}

// ---------------------------------------------------------------------------------------------------------------
// Metrics

const METRIC_KINDS: readonly MetricKind[] = ['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary'];
const TEMPORALITIES: readonly Temporality[] = ['unspecified', 'delta', 'cumulative'];
const TEMPORALITY_NAMES = TEMPORALITIES.map((t) => `AGGREGATION_TEMPORALITY_${t.toUpperCase()}`);

/** The data points of an ExportMetricsServiceRequest, each with its metric, resource and scope. */
function metricsOf(request: unknown): ReceivedMetric[] {
  return list(get(request, 'resourceMetrics')).flatMap((resourceMetrics) => {
    const resource = attributes(get(get(resourceMetrics, 'resource'), 'attributes'));
    return list(get(resourceMetrics, 'scopeMetrics')).flatMap((scopeMetrics) => {
      const scope = scopeOf(get(scopeMetrics, 'scope'));
      return list(get(scopeMetrics, 'metrics')).flatMap((metric) => pointsOf(metric, resource, scope));
    });
  });
}

/** One entry per data point of `metric`, whichever of the five data kinds it has. */
function pointsOf(metric: unknown, resource: AttrMap, scope: ReceivedScope): ReceivedMetric[] {
  const kind = METRIC_KINDS.find((k) => get(metric, k) !== undefined);
  if (kind === undefined) return [];
  const data = get(metric, kind);
  return list(get(data, 'dataPoints')).map((point) => ({
    name: text(get(metric, 'name')),
    description: text(get(metric, 'description')),
    unit: text(get(metric, 'unit')),
    kind,
    attributes: attributes(get(point, 'attributes')),
    startTimeUnixNano: int64(get(point, 'startTimeUnixNano')),
    timeUnixNano: int64(get(point, 'timeUnixNano')),
    ...POINT_READERS[kind](point, data),
    resource,
    scope,
  }));
}

/** The kind-specific fields of a data point (`data` is the Gauge, Sum, ... message that holds it). */
type PointFields = Partial<ReceivedMetric>;
const POINT_READERS: Readonly<Record<MetricKind, (point: unknown, data: unknown) => PointFields>> = {
  gauge: (point) => numberValue(point),
  sum: (point, data) => ({ ...numberValue(point), isMonotonic: bool(get(data, 'isMonotonic')), ...temporality(data) }),
  histogram: (point, data) => ({
    ...temporality(data),
    ...countAndSum(point),
    bucketCounts: list(get(point, 'bucketCounts')).map((n) => Number(int64(n))),
    explicitBounds: list(get(point, 'explicitBounds')).map(double),
  }),
  exponentialHistogram: (point, data) => ({
    ...temporality(data),
    ...countAndSum(point),
    scale: int32(get(point, 'scale')),
    zeroCount: Number(int64(get(point, 'zeroCount'))),
    positive: buckets(get(point, 'positive')),
    negative: buckets(get(point, 'negative')),
  }),
  summary: (point) => ({
    count: Number(int64(get(point, 'count'))),
    sum: double(get(point, 'sum')),
    quantileValues: list(get(point, 'quantileValues')).map((q) => ({
      quantile: double(get(q, 'quantile')),
      value: double(get(q, 'value')),
    })),
  }),
};

/** A NumberDataPoint's value, as_double or as_int (absent when it has neither). */
function numberValue(point: unknown): PointFields {
  if (get(point, 'asDouble') !== undefined) return { value: double(get(point, 'asDouble')) };
  if (get(point, 'asInt') !== undefined) return { value: Number(int64(get(point, 'asInt'))) };
  return {};
}

function temporality(data: unknown): PointFields {
  return { temporality: enumName(get(data, 'aggregationTemporality'), TEMPORALITIES, TEMPORALITY_NAMES) };
}

/** A histogram point's count, and its optional sum, min and max when sent. */
function countAndSum(point: unknown): PointFields {
  const fields: PointFields = { count: Number(int64(get(point, 'count'))) };
  for (const name of ['sum', 'min', 'max'] as const) {
    const value = optionalDouble(get(point, name));
    if (value !== undefined) fields[name] = value;
  }
  return fields;
}

function buckets(value: unknown): { offset: number; bucketCounts: number[] } {
  return {
    offset: int32(get(value, 'offset')),
    bucketCounts: list(get(value, 'bucketCounts')).map((n) => Number(int64(n))),
  };
}
