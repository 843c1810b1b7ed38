/**
 * OpenTelemetry through the built bundle (docs/observability.md): a `run_command` call from the official v2 client
 * carrying a `traceparent` in `_meta` reaches a loopback OTLP receiver, over http/protobuf and over http/json, as
 * one trace that continues the client's: the HTTP span, the MCP span of `tools/call run_command`, and the sandbox's
 * spans under it, with the conventions' attributes. Metrics arrive with their documented names. Nothing secret is
 * exported: no token, session secret, command text, output or file content. On FC, the last answer in flight ends
 * only once its spans are exported.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver';
import { initializeBody } from '../support/http';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { findFreePort, type StartedServer, startServer, stopAllServers } from '../support/server';

const TOKEN = 'telemetry-test-token-0123456789abcdef';
const SESSION_SECRET = 'telemetry-session-secret-0123456789abcdef0123';
/** Text that must never leave the server: in the command, its output and a file. */
const COMMAND_SECRET = 'cmd-secret-7f3a9c';
const FILE_SECRET = 'file-content-secret-51d2e8';

afterAll(() => stopAllServers());

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'telemetry-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }),
  );
  return client;
}

/** A W3C trace context of the client's own: the server's spans must join this trace. */
function clientTraceContext() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

const named = (spans: ReceivedSpan[], name: string) => spans.filter((span) => span.name === name);

/**
 * A cold instance answers its first initialize before its core (and telemetry) is loaded (early-initialize.ts), then
 * loads it: this waits for that, so that the next request is the core's, and traced.
 */
const coreLoaded = (server: StartedServer) =>
  pollUntil(() => server.logs().some((line) => line.msg === 'core loaded'), Boolean, SETTLE_MS);

describe.each([['http/protobuf'], ['http/json']])('telemetry exported over %s', (protocol) => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());

  it('a run_command call with a traceparent in _meta is one trace with the HTTP, MCP and sandbox spans', async () => {
    const server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        MCP_SESSION_SECRET: SESSION_SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=collector-key-9b7e',
        OTEL_BSP_SCHEDULE_DELAY: '20',
        OTEL_METRIC_EXPORT_INTERVAL: '50',
        OTEL_SERVICE_NAME: 'telemetry-e2e',
      },
    });
    const client = await connect(server.url);
    const { traceId, spanId, traceparent } = clientTraceContext();
    const result = await client.callTool({
      name: 'run_command',
      arguments: { command: `echo ${COMMAND_SECRET}; printf ${FILE_SECRET} > notes.txt` },
      _meta: { traceparent },
    });
    expect(JSON.stringify(result)).toContain(COMMAND_SECRET);
    await client.callTool({ name: 'read_file', arguments: { path: 'notes.txt' } });
    await client.close();

    const inTrace = () => receiver.spans().filter((span) => span.traceId === traceId);
    await receiver.waitFor(
      () => named(inTrace(), 'sandbox.run_command').length === 1 && named(inTrace(), 'POST /mcp').length === 1,
      'the trace of the run_command call',
      SETTLE_MS,
    );
    const spans = inTrace();
    const [http] = named(spans, 'POST /mcp');
    const [mcp] = named(spans, 'tools/call run_command');
    const [run] = named(spans, 'sandbox.run_command');
    // The client's span is the HTTP span's parent; the MCP span is the HTTP span's child; the sandbox's under it.
    expect(http).toMatchObject({ parentSpanId: spanId, kind: 'server' });
    expect(mcp).toMatchObject({
      parentSpanId: http?.spanId,
      kind: 'server',
      attributes: expect.objectContaining({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'run_command',
        'gen_ai.operation.name': 'execute_tool',
        'mcp.protocol.version': '2025-11-25',
        'jsonrpc.request.id': expect.any(String),
        'mcp.session.id': expect.stringMatching(/^[0-9a-f]{12}$/),
      }),
    });
    expect(run).toMatchObject({
      parentSpanId: mcp?.spanId,
      attributes: expect.objectContaining({ 'process.exit.code': 0, 'sandbox_mcp.timed_out': false }),
    });
    expect(named(spans, 'sandbox.create')).toEqual([expect.objectContaining({ parentSpanId: mcp?.spanId })]);
    expect(http?.attributes).toMatchObject({ 'http.response.status_code': 200, 'http.route': '/mcp' });
    expect(http?.resource).toMatchObject({ 'service.name': 'telemetry-e2e' });
    // The collector's key went to the collector, as a header.
    expect(receiver.requests[0]?.headers['x-api-key']).toBe('collector-key-9b7e');

    await receiver.waitFor(
      (r) => r.metrics().some((m) => m.name === 'mcp.server.operation.duration' && m.attributes['gen_ai.tool.name']),
      'the MCP operation duration of the tool calls',
      SETTLE_MS,
    );
    const names = new Set(receiver.metrics().map((m) => m.name));
    for (const name of ['mcp.server.operation.duration', 'sandbox_mcp.sessions', 'sandbox_mcp.sandboxes'])
      expect({ name, exported: names.has(name) }).toEqual({ name, exported: true });

    // Nothing secret anywhere in what was exported (attribute keys and values, names, resources, metrics).
    const exported = receiver.allText();
    for (const secret of [TOKEN, SESSION_SECRET, COMMAND_SECRET, FILE_SECRET, 'collector-key-9b7e', 'notes.txt'])
      expect({ secret, found: exported.includes(secret) }).toEqual({ secret, found: false });
  });
});

/**
 * A preload that writes the name of every file Node compiles as a CommonJS module (the bundle requires its deferred
 * files this way; the core comes through its code-cache loader, which this does not see) to LOADED_FILES_LOG.
 */
function moduleLoadLog(): { preload: string; log: string; loaded: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-loaded-'));
  const preload = join(dir, 'log-loads.js');
  const log = join(dir, 'loaded.txt');
  writeFileSync(log, '');
  writeFileSync(
    preload,
    "const Module = require('node:module'); const fs = require('node:fs');\n" +
      'const compile = Module.prototype._compile;\n' +
      'Module.prototype._compile = function (content, filename) {\n' +
      '  fs.appendFileSync(process.env.LOADED_FILES_LOG, `${filename}\\n`);\n' +
      '  return compile.call(this, content, filename);\n' +
      '};\n',
  );
  return { preload, log, loaded: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

describe('the traceparent header and refusals', () => {
  it('continues a traceparent header; counts a refusal by its code, the refused token in no export', async () => {
    const receiver = await startOtlpReceiver();
    const server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '20',
        OTEL_METRIC_EXPORT_INTERVAL: '50',
      },
    });
    try {
      const post = (token: string, extra: Record<string, string> = {}) =>
        fetch(server.url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...extra,
          },
          body: JSON.stringify(initializeBody()),
        }).then(async (res) => ({ status: res.status, body: await res.text() }));
      expect((await post(TOKEN)).status).toBe(200);
      await coreLoaded(server);
      const { traceId, spanId, traceparent } = clientTraceContext();
      expect((await post(TOKEN, { traceparent })).status).toBe(200);
      const wrongToken = 'wrong-token-that-must-not-be-exported-42';
      expect((await post(wrongToken)).status).toBe(401);

      await receiver.waitFor(
        (r) => r.spans().some((span) => span.traceId === traceId && span.name === 'initialize'),
        'the initialize span in the header’s trace',
        SETTLE_MS,
      );
      const inTrace = receiver.spans().filter((span) => span.traceId === traceId);
      const http = inTrace.find((span) => span.name === 'POST /mcp');
      expect(http?.parentSpanId).toBe(spanId);
      expect(inTrace.find((span) => span.name === 'initialize')?.parentSpanId).toBe(http?.spanId);
      await receiver.waitFor(
        (r) =>
          r.metrics().some((m) => m.name === 'sandbox_mcp.refusals' && m.attributes['error.type'] === 'auth_invalid'),
        'the refusal of the wrong token, counted by its code',
        SETTLE_MS,
      );
      const refused = () => receiver.spans().find((span) => span.attributes['http.response.status_code'] === 401);
      await receiver.waitFor(() => refused() !== undefined, 'the span of the refused request', SETTLE_MS);
      expect(refused()?.attributes).toMatchObject({ 'error.type': 'auth_invalid' });
      expect(receiver.allText()).not.toContain(wrongToken);
      expect(receiver.allText()).not.toContain(TOKEN);
    } finally {
      await receiver.close();
    }
  });
});

describe('telemetry off by default', () => {
  it.each([
    ['without OTEL_* settings, no OpenTelemetry module is loaded', false],
    ['with an OTLP endpoint, telemetry.js is loaded (the check above can see it)', true],
  ])('%s', async (_name, on) => {
    const receiver = await startOtlpReceiver();
    const { preload, log, loaded } = moduleLoadLog();
    const server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        NODE_OPTIONS: `--require ${preload}`,
        LOADED_FILES_LOG: log,
        ...(on && { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }),
      },
    });
    try {
      const client = await connect(server.url);
      await client.callTool({ name: 'run_command', arguments: { command: 'true' } });
      await client.listTools();
      await client.close();
      const files = loaded().map((file) => file.split('/').at(-1));
      expect(files).toContain('index.js');
      expect({ telemetryLoaded: files.includes('telemetry.js') }).toEqual({ telemetryLoaded: on });
    } finally {
      await receiver.close();
    }
  });
});

describe('on FC, the last answer in flight ends only once its spans are exported', () => {
  it.each([
    ['on FC: exported by the time the answer has ended', true],
    ['elsewhere: left to the batch, which waits OTEL_BSP_SCHEDULE_DELAY (the check can fail)', false],
  ])('%s', async (_name, onFc) => {
    const receiver = await startOtlpReceiver();
    const port = await findFreePort();
    const server = await startServer({
      port,
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_METRICS_EXPORTER: 'none',
        // Ten minutes: nothing is exported on the batch's own schedule during the test.
        OTEL_BSP_SCHEDULE_DELAY: '600000',
        ...(onFc && { FC_FUNCTION_NAME: 'telemetry-test', FC_CUSTOM_LISTEN_PORT: String(port) }),
      },
    });
    try {
      const headers = {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      const initialize = async () => {
        const res = await fetch(server.url, { method: 'POST', headers, body: JSON.stringify(initializeBody()) });
        await res.text();
      };
      await initialize();
      await coreLoaded(server);
      await initialize();
      const initializeSpans = receiver.spans().filter((span) => span.name === 'initialize');
      expect(initializeSpans).toHaveLength(onFc ? 1 : 0);
    } finally {
      await receiver.close();
    }
  });
});
