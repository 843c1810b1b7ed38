/**
 * Telemetry on the E2B backend, through the built bundle and the real SDK against the local E2B service: each call
 * the SDK makes to E2B is a client span under the sandbox span that made it (`e2b sandbox.create`,
 * `e2b command.start`, …), with its duration in `sandbox_mcp.e2b.api.duration`; the E2B key and the command's text
 * are in no export.
 */
import { NODES, ok, startWire, type Wire, wireDescribe } from '../support/e2b-wire';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver';
import { SETTLE_MS } from '../support/processes';

const COMMAND_SECRET = 'e2b-telemetry-secret-3c9d';

wireDescribe.each(NODES)('telemetry on E2B, server on %s', (_name, node) => {
  let receiver: OtlpReceiver;
  let wire: Wire | undefined;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    await wire?.stop();
    await receiver.close();
  });

  it('traces the SDK’s calls to E2B under the sandbox work, and measures them', async () => {
    wire = await startWire(node, {
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '20',
        OTEL_METRIC_EXPORT_INTERVAL: '50',
      },
    });
    const client = await wire.connect();
    ok(await client.callTool('run_command', { command: `echo ${COMMAND_SECRET}` }));
    await receiver.waitFor(
      (r) => r.spans().some((span) => span.name === 'sandbox.run_command'),
      'the run_command call’s sandbox span',
      SETTLE_MS,
    );
    const spans = receiver.spans();
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const parentOf = (name: string) => byId.get(spans.find((span) => span.name === name)?.parentSpanId ?? '')?.name;
    expect(parentOf('e2b sandbox.create')).toBe('sandbox.create');
    expect(parentOf('e2b command.start')).toBe('sandbox.run_command');
    expect(spans.find((span) => span.name === 'e2b sandbox.create')).toMatchObject({
      kind: 'client',
      attributes: expect.objectContaining({ 'e2b.operation': 'sandbox.create' }),
    });
    const measured = (operation: string) =>
      receiver
        .metrics()
        .some((m) => m.name === 'sandbox_mcp.e2b.api.duration' && m.attributes['e2b.operation'] === operation);
    await receiver.waitFor(
      () => measured('sandbox.create') && measured('command.start'),
      'the durations of the E2B calls that created the sandbox and started the command',
      SETTLE_MS,
    );
    const exported = receiver.allText();
    for (const secret of [wire.env.E2B_API_KEY ?? '', COMMAND_SECRET])
      expect({ secret, found: exported.includes(secret) }).toEqual({ secret, found: false });
  });
});
