/**
 * Telemetry through OpenTelemetry (telemetry.ts's interface): a server span per HTTP request, an MCP server span
 * per JSON-RPC message (named and attributed as the semantic conventions for MCP say, mcp-messages.ts), and child
 * spans for the work they start; the client's trace is continued from the `traceparent` header or from the
 * message's `params._meta`. Metrics: metrics.ts. This file is the deferred module telemetry.js of the bundle,
 * loaded only when telemetry is on.
 */
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';

import type { Logger } from '../../log';
import { SERVER_INFO } from '../../version';
import {
  type McpMessageFacts,
  mcpMessagesOf,
  mcpSpanName,
  mcpStartAttributes,
  requestEndAttributes,
} from '../mcp-messages';
import { redactorOf } from '../redact';
import type { TelemetrySettings } from '../settings';
import type { HeldCounts, RequestTrace, SpanAttributes, SpanNote, Telemetry } from '../telemetry';
import { clean } from './attributes';
import { createMetrics, type Metrics } from './metrics';
import { createProviders, type ResourceFacts } from './providers';

export interface OtelTelemetryOptions {
  readonly settings: TelemetrySettings;
  readonly resource: ResourceFacts;
  readonly logger: Logger;
  /** What the instance holds now, read when metrics are collected. */
  readonly held: () => HeldCounts;
}

/** Longest a flush may hold an answer (on FC) or the shutdown; the export timeout when shorter. */
const FLUSH_MAX_MS = 2_000;

const headerGetter = {
  get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
  keys: (carrier: Headers) => [...carrier.keys()],
};

/** Starts the SDK and returns telemetry that traces and measures through it. */
export function createOtelTelemetry(options: OtelTelemetryOptions): Telemetry {
  const { settings, logger } = options;
  let diagnosed = 0;
  const redact = redactorOf(settings);
  const providers = createProviders(settings, options.resource, (message) => {
    // The SDK repeats a failing export every few seconds: the first few are enough to say why.
    if (++diagnosed <= 5) logger.warn('telemetry export problem', { detail: redact(message) });
  });
  const tracer: Tracer = (providers.tracerProvider ?? trace).getTracer(SERVER_INFO.name, SERVER_INFO.version);
  const metrics = createMetrics(providers.meterProvider, options.held);
  const flushMs = Math.min(FLUSH_MAX_MS, settings.traces?.timeoutMs ?? FLUSH_MAX_MS);
  /** The tool outcome recorded on an MCP span while its call ran (annotate), read when it ends. */
  const outcomes = new WeakMap<Span, { errorType?: string }>();

  return {
    enabled: true,
    startRequest: (method, route, headers) => startRequest({ tracer, metrics, outcomes }, method, route, headers),
    span: (name, attributes, fn) => inSpan(tracer, name, SpanKind.INTERNAL, attributes, fn),
    async clientCall(service, operation, fn) {
      const started = nowMs();
      let errorType: string | undefined;
      try {
        return await inSpan(
          tracer,
          `${service} ${operation}`,
          SpanKind.CLIENT,
          { [`${service}.operation`]: operation },
          fn,
        );
      } catch (err: unknown) {
        errorType = errorTypeOf(err);
        throw err;
      } finally {
        metrics.e2bCall(nowMs() - started, { 'e2b.operation': operation, 'error.type': errorType });
      }
    },
    annotate(attributes) {
      const span = trace.getActiveSpan();
      if (span === undefined) return;
      span.setAttributes(clean(attributes));
      const outcome = outcomes.get(span);
      if (outcome !== undefined && typeof attributes['error.type'] === 'string')
        outcome.errorType = attributes['error.type'];
    },
    flush: () => providers.flush(flushMs),
    async shutdown() {
      await providers.flush(flushMs);
      await providers.shutdown();
    },
  };
}

/** `fn` in an active span of its own; an error marks it failed with the error's class, never its message. */
function inSpan<T>(
  tracer: Tracer,
  name: string,
  kind: SpanKind,
  attributes: SpanAttributes,
  fn: (note: SpanNote) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(name, { kind, attributes: clean(attributes) }, async (span) => {
    try {
      return await fn({ set: (more) => span.setAttributes(clean(more)) });
    } catch (err: unknown) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', errorTypeOf(err));
      throw err;
    } finally {
      span.end();
    }
  });
}

interface TraceDeps {
  readonly tracer: Tracer;
  readonly metrics: Metrics;
  readonly outcomes: WeakMap<Span, { errorType?: string }>;
}

interface McpSpan {
  readonly span: Span;
  readonly facts: McpMessageFacts;
  readonly startedMs: number;
}

/**
 * One request's trace. Its span is created once its parent is known: the `traceparent` header's context, else
 * (for a single message) the message's `_meta` one, else none; it starts at the request's arrival either way.
 */
function startRequest(deps: TraceDeps, method: string, route: string, headers: Headers): RequestTrace {
  const arrivedMs = nowMs();
  const headerContext = headers.has('traceparent')
    ? propagation.extract(ROOT_CONTEXT, headers, headerGetter)
    : undefined;
  let httpSpan: Span | undefined;
  const mcpSpans: McpSpan[] = [];
  let ended = false;
  const ensureHttpSpan = (parent: Context): Span => {
    httpSpan ??= deps.tracer.startSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        startTime: arrivedMs,
        attributes: { 'http.request.method': method, 'http.route': route },
      },
      parent,
    );
    return httpSpan;
  };
  return {
    mcp(body, fn) {
      const messages = mcpMessagesOf(body);
      const only = messages.length === 1 ? messages[0] : undefined;
      const metaContext = only?.traceparent === undefined ? undefined : extractFromMeta(only);
      const http = trace.setSpan(ROOT_CONTEXT, ensureHttpSpan(headerContext ?? metaContext ?? ROOT_CONTEXT));
      // The message's own trace context wins for its span when the header named another one.
      const parent =
        metaContext !== undefined && headerContext !== undefined && differ(metaContext, headerContext)
          ? metaContext
          : http;
      for (const facts of messages) {
        const span = deps.tracer.startSpan(
          mcpSpanName(facts),
          { kind: SpanKind.SERVER, attributes: clean(mcpStartAttributes(facts)) },
          parent,
        );
        deps.outcomes.set(span, {});
        mcpSpans.push({ span, facts, startedMs: nowMs() });
      }
      const active = mcpSpans.length === 1 ? trace.setSpan(ROOT_CONTEXT, (mcpSpans[0] as McpSpan).span) : http;
      return context.with(active, fn);
    },
    end(status, facts) {
      if (ended) return;
      ended = true;
      const endAttributes = clean({ ...requestEndAttributes(facts), 'sandbox_mcp.credential': facts.principal });
      const endedMs = nowMs();
      for (const { span, facts: message, startedMs } of mcpSpans) {
        const errorType = deps.outcomes.get(span)?.errorType ?? facts.error_code;
        span.setAttributes(endAttributes);
        if (errorType !== undefined) {
          span.setAttribute('error.type', errorType);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end(endedMs);
        deps.metrics.operation(endedMs - startedMs, {
          'mcp.method.name': message.method,
          'gen_ai.tool.name': message.tool,
          'error.type': errorType,
          'mcp.protocol.version': facts.protocol_version,
          'sandbox_mcp.credential': facts.principal,
        });
      }
      // The MCP attributes are on the MCP spans; a request without one (refused before it, or not a POST) has them.
      const span = ensureHttpSpan(headerContext ?? ROOT_CONTEXT);
      if (mcpSpans.length === 0) span.setAttributes(endAttributes);
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(endedMs);
      if (facts.error_code !== undefined) deps.metrics.refusal(facts.error_code);
    },
  };
}

function extractFromMeta(facts: McpMessageFacts): Context | undefined {
  const carrier: Record<string, string> = { traceparent: facts.traceparent as string };
  if (facts.tracestate !== undefined) carrier.tracestate = facts.tracestate;
  const extracted = propagation.extract(ROOT_CONTEXT, carrier);
  return trace.getSpanContext(extracted) === undefined ? undefined : extracted;
}

function differ(a: Context, b: Context): boolean {
  return trace.getSpanContext(a)?.spanId !== trace.getSpanContext(b)?.spanId;
}

/** An error's class (and code), never its message: messages may quote a path, a command or a server's answer. */
export function errorTypeOf(err: unknown): string {
  if (typeof err !== 'object' || err === null) return 'error';
  const code = (err as { code?: unknown }).code;
  const name = (err as { name?: unknown }).name;
  const kind = typeof name === 'string' && name !== '' ? name : 'Error';
  return typeof code === 'string' || typeof code === 'number' ? `${kind}:${String(code).slice(0, 40)}` : kind;
}

function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
