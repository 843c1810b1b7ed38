/**
 * OpenTelemetry's settings, read from the standard `OTEL_*` variables (the specification's environment variables
 * for the SDK and the OTLP exporter, docs/observability.md). Telemetry is off unless an OTLP endpoint is given, and
 * off with `OTEL_SDK_DISABLED=true`. Pure: nothing here loads OpenTelemetry (telemetry/load-telemetry.ts does, only
 * when these settings say so). The export headers are credentials: they go to the exporter and nowhere else.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** Where one signal (traces or metrics) is exported. */
export interface SignalExport {
  /** The full URL (`…/v1/traces`, `…/v1/metrics`). */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  /** Sent with every export (an API key or token): secret. */
  readonly headers: Readonly<Record<string, string>>;
  readonly compression: 'gzip' | 'none';
  readonly timeoutMs: number;
}

/** A sampler of the specification's OTEL_TRACES_SAMPLER values. */
export interface SamplerSettings {
  readonly name: 'always_on' | 'always_off' | 'traceidratio';
  /** Whether a sampled (or unsampled) parent decides instead (the `parentbased_*` samplers). */
  readonly parentBased: boolean;
  /** The ratio of traceidratio, 0–1. */
  readonly ratio: number;
}

export interface TelemetrySettings {
  /** undefined: no traces (OTEL_TRACES_EXPORTER=none, or no endpoint for them). */
  readonly traces: SignalExport | undefined;
  /** undefined: no metrics. */
  readonly metrics: SignalExport | undefined;
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, decoded. */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerSettings;
  /** OTEL_METRIC_EXPORT_INTERVAL: how often metrics are exported, in ms. @default 60000 */
  readonly metricIntervalMs: number;
  /** OTEL_BSP_SCHEDULE_DELAY: how long finished spans wait to be exported with others, in ms. @default 5000 */
  readonly spanDelayMs: number;
  /**
   * MCP_TELEMETRY_COMMAND_TEXT=true: the text of commands and code goes into span attributes (off by default: it can
   * hold secrets a user typed).
   */
  readonly commandText: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

const DEFAULT_SERVICE_NAME = 'sandbox-mcp-fc';
const PATHS = { traces: '/v1/traces', metrics: '/v1/metrics' } as const;
const SAMPLERS = new Set(['always_on', 'always_off', 'traceidratio']);

/**
 * The telemetry settings of `env`, or undefined when telemetry is off. Problems (a bad protocol, URL or number) are
 * pushed to `problems`, in the words config.ts uses, naming the variable but never a header's value.
 */
export function readTelemetrySettings(env: Env, problems: string[]): TelemetrySettings | undefined {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const sharedHeaders = readPairs(env, 'OTEL_EXPORTER_OTLP_HEADERS', problems);
  const traces = readSignal(env, 'traces', sharedHeaders, problems);
  const metrics = readSignal(env, 'metrics', sharedHeaders, problems);
  const resourceAttributes = readPairs(env, 'OTEL_RESOURCE_ATTRIBUTES', problems);
  // Read whole, so that every problem is said at once, even when no signal is left to export.
  const settings: TelemetrySettings = {
    traces,
    metrics,
    serviceName: value(env, 'OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? DEFAULT_SERVICE_NAME,
    resourceAttributes,
    sampler: readSampler(env, problems),
    metricIntervalMs: readMs(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000, problems),
    spanDelayMs: readMs(env, 'OTEL_BSP_SCHEDULE_DELAY', 5_000, problems),
    commandText: value(env, 'MCP_TELEMETRY_COMMAND_TEXT')?.toLowerCase() === 'true',
  };
  return traces === undefined && metrics === undefined ? undefined : settings;
}

function value(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}

/** A signal's export: its own `OTEL_EXPORTER_OTLP_<SIGNAL>_*` variable first, then the shared one. */
function readSignal(
  env: Env,
  signal: 'traces' | 'metrics',
  sharedHeaders: Readonly<Record<string, string>>,
  problems: string[],
): SignalExport | undefined {
  const upper = signal.toUpperCase();
  const exporter = value(env, `OTEL_${upper}_EXPORTER`) ?? 'otlp';
  if (exporter === 'none') return undefined;
  if (exporter !== 'otlp') {
    problems.push(`OTEL_${upper}_EXPORTER must be otlp or none (got "${exporter}")`);
    return undefined;
  }
  const own = value(env, `OTEL_EXPORTER_OTLP_${upper}_ENDPOINT`);
  const shared = value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (own === undefined && shared === undefined) return undefined;
  const url = own ?? `${shared?.replace(/\/+$/, '')}${PATHS[signal]}`;
  const source = own === undefined ? 'OTEL_EXPORTER_OTLP_ENDPOINT' : `OTEL_EXPORTER_OTLP_${upper}_ENDPOINT`;
  if (!/^https?:\/\/[^/\s]+/.test(url)) {
    // Not quoted: an endpoint may carry its credential in the path (Alibaba Cloud's Managed Service for OpenTelemetry).
    problems.push(`${source} must be an http(s) URL (starting http:// or https://; its value is not shown)`);
    return undefined;
  }
  const pick = (name: string): string | undefined =>
    value(env, `OTEL_EXPORTER_OTLP_${upper}_${name}`) ?? value(env, `OTEL_EXPORTER_OTLP_${name}`);
  const protocol = pick('PROTOCOL') ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    problems.push(
      `OTEL_EXPORTER_OTLP_PROTOCOL (or OTEL_EXPORTER_OTLP_${upper}_PROTOCOL) must be http/protobuf or http/json ` +
        `(got "${protocol}"; grpc is not supported: use an OTLP/HTTP endpoint, port 4318 by convention)`,
    );
    return undefined;
  }
  const compression = pick('COMPRESSION') ?? 'none';
  if (compression !== 'gzip' && compression !== 'none') {
    problems.push(`OTEL_EXPORTER_OTLP_COMPRESSION must be gzip or none (got "${compression}")`);
    return undefined;
  }
  const headers = { ...sharedHeaders, ...readPairs(env, `OTEL_EXPORTER_OTLP_${upper}_HEADERS`, problems) };
  const ownTimeout = `OTEL_EXPORTER_OTLP_${upper}_TIMEOUT`;
  const timeoutName = value(env, ownTimeout) === undefined ? 'OTEL_EXPORTER_OTLP_TIMEOUT' : ownTimeout;
  const timeoutMs = readMs(env, timeoutName, 10_000, problems);
  return { url, protocol, headers, compression, timeoutMs };
}

/**
 * `key=value,key2=value2` with percent-encoded values (the W3C Baggage form the specification uses for
 * OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS). A malformed entry is a problem that names the variable
 * and the entry's position, not its text: header values are secrets.
 */
function readPairs(env: Env, name: string, problems: string[]): Record<string, string> {
  const raw = value(env, name);
  const pairs: Record<string, string> = {};
  if (raw === undefined) return pairs;
  raw.split(',').forEach((entry, index) => {
    if (entry.trim() === '') return;
    const at = entry.indexOf('=');
    const key = at > 0 ? entry.slice(0, at).trim() : '';
    let decoded: string | undefined;
    try {
      decoded = at > 0 ? decodeURIComponent(entry.slice(at + 1).trim()) : undefined;
    } catch {
      decoded = undefined;
    }
    if (key === '' || decoded === undefined) {
      problems.push(`${name}: entry ${index + 1} is not key=value (percent-encoded)`);
      return;
    }
    pairs[key] = decoded;
  });
  return pairs;
}

function readMs(env: Env, name: string, fallback: number, problems: string[]): number {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 1 || ms > 3_600_000) {
    problems.push(`${name} must be a whole number of milliseconds from 1 to 3600000 (got "${raw}")`);
    return fallback;
  }
  return ms;
}

/** OTEL_TRACES_SAMPLER and its argument. @default parentbased_always_on */
function readSampler(env: Env, problems: string[]): SamplerSettings {
  const raw = value(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  const parentBased = raw.startsWith('parentbased_');
  const name = parentBased ? raw.slice('parentbased_'.length) : raw;
  if (!SAMPLERS.has(name)) {
    problems.push(
      'OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio or their parentbased_ forms ' + `(got "${raw}")`,
    );
    return { name: 'always_on', parentBased: true, ratio: 1 };
  }
  let ratio = 1;
  if (name === 'traceidratio') {
    const arg = value(env, 'OTEL_TRACES_SAMPLER_ARG');
    ratio = arg === undefined ? 1 : Number(arg);
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
      problems.push(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "${arg}")`);
      ratio = 1;
    }
  }
  return { name: name as SamplerSettings['name'], parentBased, ratio };
}
