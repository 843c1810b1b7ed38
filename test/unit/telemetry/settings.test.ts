/**
 * OTEL_* settings (functions/mcp/telemetry/settings.ts): off unless an endpoint is given, in the specification's
 * forms.
 */
import { readTelemetrySettings } from '../../../functions/mcp/telemetry/settings';

function read(env: Record<string, string>) {
  const problems: string[] = [];
  return { settings: readTelemetrySettings(env, problems), problems };
}

describe('telemetry settings', () => {
  it('are off without an OTLP endpoint, and off with OTEL_SDK_DISABLED=true', () => {
    expect(read({})).toEqual({ settings: undefined, problems: [] });
    expect(read({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).settings).toBeUndefined();
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).settings).toBeUndefined();
  });

  it('send each signal to the endpoint with its path, in protobuf by default, or to its own URL as given', () => {
    const { settings, problems } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318/',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://metrics.example/custom',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
    });
    expect(problems).toEqual([]);
    expect(settings?.traces).toMatchObject({
      url: 'https://collector.example:4318/v1/traces',
      protocol: 'http/protobuf',
      compression: 'none',
      timeoutMs: 10_000,
    });
    expect(settings?.metrics).toMatchObject({ url: 'https://metrics.example/custom', protocol: 'http/json' });
  });

  it('decode headers and resource attributes (percent-encoded), a signal’s own headers over the shared ones', () => {
    const { settings } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authentication=Basic%20abc,x-shared=1',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-shared=2',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=from-resource',
    });
    expect(settings?.traces?.headers).toEqual({ Authentication: 'Basic abc', 'x-shared': '2' });
    expect(settings?.metrics?.headers).toEqual({ Authentication: 'Basic abc', 'x-shared': '1' });
    expect(settings?.serviceName).toBe('from-resource');
    expect(settings?.resourceAttributes).toMatchObject({ 'deployment.environment': 'prod' });
  });

  it('turn a signal off with OTEL_<SIGNAL>_EXPORTER=none, and take the sampler of the specification', () => {
    const { settings } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    expect(settings?.metrics).toBeUndefined();
    expect(settings?.sampler).toEqual({ name: 'traceidratio', parentBased: true, ratio: 0.25 });
    expect(settings?.commandText).toBe(false);
  });

  it('refuse grpc, a bad URL, number or header entry, naming the variable but never a header value', () => {
    const { problems } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'collector/adapt_token-in-path/api/otlp/metrics',
      OTEL_BSP_SCHEDULE_DELAY: 'soon',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=%E0%A4%A,secret-without-equals',
    });
    expect(problems).toEqual([
      'OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value (percent-encoded)',
      'OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value (percent-encoded)',
      expect.stringContaining('grpc is not supported'),
      expect.stringContaining('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT must be an http(s) URL'),
      expect.stringContaining('OTEL_BSP_SCHEDULE_DELAY must be a whole number'),
    ]);
    // Neither a header's text nor an endpoint's (a credential may be in its path) is quoted.
    expect(problems.join('\n')).not.toMatch(/secret-without-equals|token-in-path/);
  });
});
