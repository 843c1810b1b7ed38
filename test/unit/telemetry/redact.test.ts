/** The SDK's messages, as logged (functions/mcp/telemetry/redact.ts): no header value, no endpoint path. */
import { redactorOf } from '../../../functions/mcp/telemetry/redact';
import { readTelemetrySettings } from '../../../functions/mcp/telemetry/settings';

describe('redacting the telemetry SDK’s messages', () => {
  it('removes header values and endpoint paths, keeping the endpoint’s origin', () => {
    const settings = readTelemetrySettings(
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tracing.example/adapt_tok3n_abc/api/otlp/traces',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://tracing.example/adapt_tok3n_abc/api/otlp/metrics',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k3y-value-123',
      },
      [],
    );
    if (settings === undefined) throw new Error('telemetry should be on');
    const redact = redactorOf(settings);
    const said = redact(
      'Export to http://tracing.example/adapt_tok3n_abc/api/otlp/traces failed; header x-api-key: k3y-value-123',
    );
    expect(said).not.toMatch(/tok3n|k3y-value/);
    expect(said).toContain('http://tracing.example/<redacted>');
  });
});
