/**
 * A protobuf wire-format decoder and the OTLP message maps that the test receiver (otlp-receiver.ts) needs, so that
 * tests can read what an OTLP/HTTP exporter sends as application/x-protobuf without a protobuf dependency.
 *
 * A message decodes to the shape OTLP/JSON gives the same message: lowerCamelCase field names, trace and span ids
 * as lower-case hex, other bytes as base64, enums as integers. Two differences: 64-bit integers are bigint (JSON
 * carries them as decimal strings), and fields left at their default are absent (proto3 does not send them). The
 * receiver then reads both encodings with one normalizer.
 *
 * Wire format: https://protobuf.dev/programming-guides/encoding/
 * Field numbers and types: the official definitions in https://github.com/open-telemetry/opentelemetry-proto
 * (read at commit ac2c4b5d1f3a6079de62f9afec860158ecc8af09), the files
 *   https://github.com/open-telemetry/opentelemetry-proto/blob/main/opentelemetry/proto/common/v1/common.proto
 *   https://github.com/open-telemetry/opentelemetry-proto/blob/main/opentelemetry/proto/resource/v1/resource.proto
 *   https://github.com/open-telemetry/opentelemetry-proto/blob/main/opentelemetry/proto/trace/v1/trace.proto
 *   https://github.com/open-telemetry/opentelemetry-proto/blob/main/opentelemetry/proto/metrics/v1/metrics.proto
 * and, under https://github.com/open-telemetry/opentelemetry-proto/blob/main/opentelemetry/proto/collector/,
 *   trace/v1/trace_service.proto (ExportTraceServiceRequest), metrics/v1/metrics_service.proto
 *   (ExportMetricsServiceRequest).
 */

/** A decoded value: what OTLP/JSON would carry, with 64-bit integers as bigint. */
export type OtlpValue = string | number | boolean | bigint | OtlpValue[] | OtlpMessage;
/** A decoded message: field name (lowerCamelCase) to value; repeated fields are arrays. */
export interface OtlpMessage {
  [field: string]: OtlpValue;
}

// ---------------------------------------------------------------------------------------------------------------
// The wire format

/** Wire types: varint, 64-bit, length-delimited, group start and end (deprecated), 32-bit. */
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const SGROUP = 3;
const EGROUP = 4;
const I32 = 5;

/** One field as it is on the wire: a varint's value, or the bytes of a fixed-size or length-delimited field. */
export type WireField =
  | { number: number; wireType: typeof VARINT; varint: bigint }
  | { number: number; wireType: typeof I64 | typeof LEN | typeof I32; bytes: Uint8Array };

/** Reads fields from a buffer, front to back; throws on anything truncated or malformed. */
class WireReader {
  private pos = 0;

  constructor(private readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /** A base-128 varint of up to ten bytes, as an unsigned 64-bit bigint. */
  varint(): bigint {
    let value = 0n;
    for (let i = 0; i < 10; i++) {
      const byte = this.buf[this.pos++];
      if (byte === undefined) throw new Error('protobuf: truncated varint');
      value |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) return BigInt.asUintN(64, value);
    }
    throw new Error('protobuf: varint longer than ten bytes');
  }

  /** The next `length` bytes (a view, not a copy). */
  take(length: number): Uint8Array {
    if (length < 0 || this.pos + length > this.buf.length) throw new Error('protobuf: truncated field');
    const bytes = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return bytes;
  }

  /** The next field, or undefined for a group (skipped whole: OTLP has none). */
  field(): WireField | undefined {
    return this.fieldWithKey(this.varint());
  }

  /** The field whose key (field number and wire type) was just read. */
  private fieldWithKey(key: bigint): WireField | undefined {
    const number = Number(key >> 3n);
    const wireType = Number(key & 7n);
    if (number < 1 || number > 0x1fffffff) throw new Error(`protobuf: invalid field number ${number}`);
    switch (wireType) {
      case VARINT:
        return { number, wireType, varint: this.varint() };
      case I64:
        return { number, wireType, bytes: this.take(8) };
      case LEN:
        return { number, wireType, bytes: this.take(Number(this.varint())) };
      case I32:
        return { number, wireType, bytes: this.take(4) };
      case SGROUP:
        this.skipGroup(number);
        return undefined;
      default:
        throw new Error(`protobuf: unexpected wire type ${wireType} (field ${number})`);
    }
  }

  /** Skips to the end of the group `number` began, nested groups included. */
  private skipGroup(number: number): void {
    for (;;) {
      if (this.done) throw new Error(`protobuf: group ${number} has no end`);
      const key = this.varint();
      if (Number(key & 7n) !== EGROUP) {
        this.fieldWithKey(key);
      } else if (Number(key >> 3n) === number) {
        return;
      } else {
        throw new Error(`protobuf: group ${number} ends as group ${key >> 3n}`);
      }
    }
  }
}

/** Every field of a message, in wire order (groups skipped). */
export function wireFields(bytes: Uint8Array): WireField[] {
  const reader = new WireReader(bytes);
  const fields: WireField[] = [];
  while (!reader.done) {
    const field = reader.field();
    if (field !== undefined) fields.push(field);
  }
  return fields;
}

/** A DataView over exactly `bytes`. */
function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// ---------------------------------------------------------------------------------------------------------------
// Scalar types: how each is on the wire and what it decodes to

/** The proto scalar types OTLP uses, plus `id` (bytes shown as hex, as OTLP/JSON does for trace and span ids). */
type Scalar =
  | 'string'
  | 'bytes'
  | 'id'
  | 'bool'
  | 'int32'
  | 'uint32'
  | 'sint32'
  | 'enum'
  | 'int64'
  | 'uint64'
  | 'fixed64'
  | 'sfixed64'
  | 'double'
  | 'fixed32';

/** A message type: field number to field. */
type Schema = Readonly<Record<number, FieldSpec>>;
interface FieldSpec {
  readonly name: string;
  /** A scalar, or (lazily, for recursive messages) the schema of an embedded message. */
  readonly type: Scalar | (() => Schema);
  readonly repeated?: boolean;
  /** The oneof this field is a member of: setting it clears the others. */
  readonly oneof?: string;
}

/** The wire type of each numeric scalar (the rest are length-delimited). */
const NUMERIC_WIRE_TYPE: Readonly<Partial<Record<Scalar, number>>> = {
  bool: VARINT,
  int32: VARINT,
  uint32: VARINT,
  sint32: VARINT,
  enum: VARINT,
  int64: VARINT,
  uint64: VARINT,
  fixed64: I64,
  sfixed64: I64,
  double: I64,
  fixed32: I32,
};

/** The value of a varint-encoded scalar. */
function fromVarint(type: Scalar, raw: bigint): OtlpValue {
  switch (type) {
    case 'bool':
      return raw !== 0n;
    case 'int32':
    case 'enum':
      return Number(BigInt.asIntN(32, raw));
    case 'uint32':
      return Number(BigInt.asUintN(32, raw));
    case 'sint32': {
      const n = BigInt.asUintN(32, raw);
      return Number((n >> 1n) ^ -(n & 1n));
    }
    case 'int64':
      return BigInt.asIntN(64, raw);
    default:
      return raw;
  }
}

/** The value of a fixed-size scalar (little-endian). */
function fromFixed(type: Scalar, bytes: Uint8Array): OtlpValue {
  const data = view(bytes);
  switch (type) {
    case 'double':
      return data.getFloat64(0, true);
    case 'sfixed64':
      return data.getBigInt64(0, true);
    case 'fixed32':
      return data.getUint32(0, true);
    default:
      return data.getBigUint64(0, true);
  }
}

/** The value of a length-delimited scalar. */
function fromBytes(type: Scalar, bytes: Uint8Array): OtlpValue {
  switch (type) {
    case 'string':
      return new TextDecoder().decode(bytes);
    case 'id':
      return Buffer.from(bytes).toString('hex');
    default:
      return Buffer.from(bytes).toString('base64');
  }
}

/** The values of a packed repeated numeric field: its elements back to back. */
function unpack(type: Scalar, wireType: number, bytes: Uint8Array): OtlpValue[] {
  if (wireType === VARINT) {
    const reader = new WireReader(bytes);
    const values: OtlpValue[] = [];
    while (!reader.done) values.push(fromVarint(type, reader.varint()));
    return values;
  }
  const size = wireType === I64 ? 8 : 4;
  if (bytes.length % size !== 0) throw new Error(`protobuf: packed ${type} of ${bytes.length} bytes`);
  const values: OtlpValue[] = [];
  for (let at = 0; at < bytes.length; at += size) values.push(fromFixed(type, bytes.subarray(at, at + size)));
  return values;
}

/** The values one wire field gives `spec` (several for a packed repeated field); throws on a wire-type mismatch. */
function valuesOf(spec: FieldSpec, field: WireField): OtlpValue[] {
  const mismatch = () => new Error(`protobuf: ${spec.name} (field ${field.number}) has wire type ${field.wireType}`);
  if (typeof spec.type === 'function') {
    if (field.wireType !== LEN) throw mismatch();
    return [decodeMessage(field.bytes, spec.type())];
  }
  const numeric = NUMERIC_WIRE_TYPE[spec.type];
  if (numeric === undefined) {
    if (field.wireType !== LEN) throw mismatch();
    return [fromBytes(spec.type, field.bytes)];
  }
  if (field.wireType === VARINT && numeric === VARINT) return [fromVarint(spec.type, field.varint)];
  if (field.wireType === LEN && spec.repeated) return unpack(spec.type, numeric, field.bytes);
  if (field.wireType !== VARINT && field.wireType === numeric) return [fromFixed(spec.type, field.bytes)];
  throw mismatch();
}

// ---------------------------------------------------------------------------------------------------------------
// Messages

/** True for a decoded embedded message (not an array, not a scalar). */
function isMessage(value: OtlpValue | undefined): value is OtlpMessage {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Decodes `bytes` as a message of type `schema`: unknown fields are skipped, as protobuf requires. */
export function decodeMessage(bytes: Uint8Array, schema: Schema): OtlpMessage {
  const message: OtlpMessage = {};
  for (const field of wireFields(bytes)) {
    const spec = schema[field.number];
    if (spec === undefined) continue;
    const values = valuesOf(spec, field);
    if (spec.repeated) {
      const list = message[spec.name];
      message[spec.name] = Array.isArray(list) ? [...list, ...values] : values;
      continue;
    }
    if (spec.oneof !== undefined) clearOneof(message, schema, spec);
    // A singular field seen again: a scalar's last value wins, an embedded message's occurrences merge.
    const value = values[0] as OtlpValue;
    const previous = message[spec.name];
    message[spec.name] = isMessage(previous) && isMessage(value) ? mergeMessages(previous, value) : value;
  }
  return message;
}

/** Removes the members of `spec`'s oneof other than `spec` itself. */
function clearOneof(message: OtlpMessage, schema: Schema, spec: FieldSpec): void {
  for (const other of Object.values(schema)) {
    if (other.oneof === spec.oneof && other !== spec) delete message[other.name];
  }
}

/** Protobuf's merge of two occurrences of one embedded message: repeated fields concatenate, messages merge. */
function mergeMessages(a: OtlpMessage, b: OtlpMessage): OtlpMessage {
  const merged: OtlpMessage = { ...a };
  for (const [name, value] of Object.entries(b)) {
    const previous = merged[name];
    if (Array.isArray(previous) && Array.isArray(value)) merged[name] = [...previous, ...value];
    else if (isMessage(previous) && isMessage(value)) merged[name] = mergeMessages(previous, value);
    else merged[name] = value;
  }
  return merged;
}

// ---------------------------------------------------------------------------------------------------------------
// OTLP: opentelemetry/proto/common/v1/common.proto and resource/v1/resource.proto

const ANY_VALUE: Schema = {
  1: { name: 'stringValue', type: 'string', oneof: 'value' },
  2: { name: 'boolValue', type: 'bool', oneof: 'value' },
  3: { name: 'intValue', type: 'int64', oneof: 'value' },
  4: { name: 'doubleValue', type: 'double', oneof: 'value' },
  5: { name: 'arrayValue', type: () => ARRAY_VALUE, oneof: 'value' },
  6: { name: 'kvlistValue', type: () => KEY_VALUE_LIST, oneof: 'value' },
  7: { name: 'bytesValue', type: 'bytes', oneof: 'value' },
  // For the profiling signal only; the spec says other signals treat it as absent (the normalizer ignores it).
  8: { name: 'stringValueStrindex', type: 'int32', oneof: 'value' },
};
const ARRAY_VALUE: Schema = { 1: { name: 'values', type: () => ANY_VALUE, repeated: true } };
const KEY_VALUE_LIST: Schema = { 1: { name: 'values', type: () => KEY_VALUE, repeated: true } };
const KEY_VALUE: Schema = {
  1: { name: 'key', type: 'string' },
  2: { name: 'value', type: () => ANY_VALUE },
  3: { name: 'keyStrindex', type: 'int32' },
};
const ATTRIBUTES = (number: number): Schema => ({
  [number]: { name: 'attributes', type: () => KEY_VALUE, repeated: true },
});
const INSTRUMENTATION_SCOPE: Schema = {
  1: { name: 'name', type: 'string' },
  2: { name: 'version', type: 'string' },
  ...ATTRIBUTES(3),
  4: { name: 'droppedAttributesCount', type: 'uint32' },
};
const RESOURCE: Schema = {
  ...ATTRIBUTES(1),
  2: { name: 'droppedAttributesCount', type: 'uint32' },
  // 3: entity_refs (EntityRef), not needed by the tests: skipped as an unknown field.
};

// ---------------------------------------------------------------------------------------------------------------
// OTLP: opentelemetry/proto/trace/v1/trace.proto and collector/trace/v1/trace_service.proto

const SPAN_EVENT: Schema = {
  1: { name: 'timeUnixNano', type: 'fixed64' },
  2: { name: 'name', type: 'string' },
  ...ATTRIBUTES(3),
  4: { name: 'droppedAttributesCount', type: 'uint32' },
};
const SPAN_LINK: Schema = {
  1: { name: 'traceId', type: 'id' },
  2: { name: 'spanId', type: 'id' },
  3: { name: 'traceState', type: 'string' },
  ...ATTRIBUTES(4),
  5: { name: 'droppedAttributesCount', type: 'uint32' },
  6: { name: 'flags', type: 'fixed32' },
};
const STATUS: Schema = {
  2: { name: 'message', type: 'string' },
  3: { name: 'code', type: 'enum' },
};
const SPAN: Schema = {
  1: { name: 'traceId', type: 'id' },
  2: { name: 'spanId', type: 'id' },
  3: { name: 'traceState', type: 'string' },
  4: { name: 'parentSpanId', type: 'id' },
  16: { name: 'flags', type: 'fixed32' },
  5: { name: 'name', type: 'string' },
  6: { name: 'kind', type: 'enum' },
  7: { name: 'startTimeUnixNano', type: 'fixed64' },
  8: { name: 'endTimeUnixNano', type: 'fixed64' },
  ...ATTRIBUTES(9),
  10: { name: 'droppedAttributesCount', type: 'uint32' },
  11: { name: 'events', type: () => SPAN_EVENT, repeated: true },
  12: { name: 'droppedEventsCount', type: 'uint32' },
  13: { name: 'links', type: () => SPAN_LINK, repeated: true },
  14: { name: 'droppedLinksCount', type: 'uint32' },
  15: { name: 'status', type: () => STATUS },
};
const SCOPE_SPANS: Schema = {
  1: { name: 'scope', type: () => INSTRUMENTATION_SCOPE },
  2: { name: 'spans', type: () => SPAN, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const RESOURCE_SPANS: Schema = {
  1: { name: 'resource', type: () => RESOURCE },
  2: { name: 'scopeSpans', type: () => SCOPE_SPANS, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const EXPORT_TRACE_SERVICE_REQUEST: Schema = {
  1: { name: 'resourceSpans', type: () => RESOURCE_SPANS, repeated: true },
};

// ---------------------------------------------------------------------------------------------------------------
// OTLP: opentelemetry/proto/metrics/v1/metrics.proto and collector/metrics/v1/metrics_service.proto

const EXEMPLAR: Schema = {
  7: { name: 'filteredAttributes', type: () => KEY_VALUE, repeated: true },
  2: { name: 'timeUnixNano', type: 'fixed64' },
  3: { name: 'asDouble', type: 'double', oneof: 'value' },
  6: { name: 'asInt', type: 'sfixed64', oneof: 'value' },
  4: { name: 'spanId', type: 'id' },
  5: { name: 'traceId', type: 'id' },
};
/** The fields every data point has, at the numbers each type gives them. */
const POINT_TIMES: Schema = {
  2: { name: 'startTimeUnixNano', type: 'fixed64' },
  3: { name: 'timeUnixNano', type: 'fixed64' },
};
const NUMBER_DATA_POINT: Schema = {
  ...ATTRIBUTES(7),
  ...POINT_TIMES,
  4: { name: 'asDouble', type: 'double', oneof: 'value' },
  6: { name: 'asInt', type: 'sfixed64', oneof: 'value' },
  5: { name: 'exemplars', type: () => EXEMPLAR, repeated: true },
  8: { name: 'flags', type: 'uint32' },
};
const HISTOGRAM_DATA_POINT: Schema = {
  ...ATTRIBUTES(9),
  ...POINT_TIMES,
  4: { name: 'count', type: 'fixed64' },
  5: { name: 'sum', type: 'double' },
  6: { name: 'bucketCounts', type: 'fixed64', repeated: true },
  7: { name: 'explicitBounds', type: 'double', repeated: true },
  8: { name: 'exemplars', type: () => EXEMPLAR, repeated: true },
  10: { name: 'flags', type: 'uint32' },
  11: { name: 'min', type: 'double' },
  12: { name: 'max', type: 'double' },
};
const BUCKETS: Schema = {
  1: { name: 'offset', type: 'sint32' },
  2: { name: 'bucketCounts', type: 'uint64', repeated: true },
};
const EXPONENTIAL_HISTOGRAM_DATA_POINT: Schema = {
  ...ATTRIBUTES(1),
  ...POINT_TIMES,
  4: { name: 'count', type: 'fixed64' },
  5: { name: 'sum', type: 'double' },
  6: { name: 'scale', type: 'sint32' },
  7: { name: 'zeroCount', type: 'fixed64' },
  8: { name: 'positive', type: () => BUCKETS },
  9: { name: 'negative', type: () => BUCKETS },
  10: { name: 'flags', type: 'uint32' },
  11: { name: 'exemplars', type: () => EXEMPLAR, repeated: true },
  12: { name: 'min', type: 'double' },
  13: { name: 'max', type: 'double' },
  14: { name: 'zeroThreshold', type: 'double' },
};
const VALUE_AT_QUANTILE: Schema = {
  1: { name: 'quantile', type: 'double' },
  2: { name: 'value', type: 'double' },
};
const SUMMARY_DATA_POINT: Schema = {
  ...ATTRIBUTES(7),
  ...POINT_TIMES,
  4: { name: 'count', type: 'fixed64' },
  5: { name: 'sum', type: 'double' },
  6: { name: 'quantileValues', type: () => VALUE_AT_QUANTILE, repeated: true },
  8: { name: 'flags', type: 'uint32' },
};
/** Gauge, Sum, Histogram, ExponentialHistogram and Summary: data points at 1, then what each adds. */
const dataOf = (point: Schema, extra: Schema = {}): Schema => ({
  1: { name: 'dataPoints', type: () => point, repeated: true },
  ...extra,
});
const TEMPORALITY: Schema = { 2: { name: 'aggregationTemporality', type: 'enum' } };
const GAUGE = dataOf(NUMBER_DATA_POINT);
const SUM = dataOf(NUMBER_DATA_POINT, { ...TEMPORALITY, 3: { name: 'isMonotonic', type: 'bool' } });
const HISTOGRAM = dataOf(HISTOGRAM_DATA_POINT, TEMPORALITY);
const EXPONENTIAL_HISTOGRAM = dataOf(EXPONENTIAL_HISTOGRAM_DATA_POINT, TEMPORALITY);
const SUMMARY = dataOf(SUMMARY_DATA_POINT);
const METRIC: Schema = {
  1: { name: 'name', type: 'string' },
  2: { name: 'description', type: 'string' },
  3: { name: 'unit', type: 'string' },
  5: { name: 'gauge', type: () => GAUGE, oneof: 'data' },
  7: { name: 'sum', type: () => SUM, oneof: 'data' },
  9: { name: 'histogram', type: () => HISTOGRAM, oneof: 'data' },
  10: { name: 'exponentialHistogram', type: () => EXPONENTIAL_HISTOGRAM, oneof: 'data' },
  11: { name: 'summary', type: () => SUMMARY, oneof: 'data' },
  12: { name: 'metadata', type: () => KEY_VALUE, repeated: true },
};
const SCOPE_METRICS: Schema = {
  1: { name: 'scope', type: () => INSTRUMENTATION_SCOPE },
  2: { name: 'metrics', type: () => METRIC, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const RESOURCE_METRICS: Schema = {
  1: { name: 'resource', type: () => RESOURCE },
  2: { name: 'scopeMetrics', type: () => SCOPE_METRICS, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const EXPORT_METRICS_SERVICE_REQUEST: Schema = {
  1: { name: 'resourceMetrics', type: () => RESOURCE_METRICS, repeated: true },
};

/** An ExportTraceServiceRequest (the body of POST /v1/traces), in the OTLP/JSON shape. */
export function decodeTraceRequest(bytes: Uint8Array): OtlpMessage {
  return decodeMessage(bytes, EXPORT_TRACE_SERVICE_REQUEST);
}

/** An ExportMetricsServiceRequest (the body of POST /v1/metrics), in the OTLP/JSON shape. */
export function decodeMetricsRequest(bytes: Uint8Array): OtlpMessage {
  return decodeMessage(bytes, EXPORT_METRICS_SERVICE_REQUEST);
}
