/**
 * The JSON-RPC messages of a request body as the OpenTelemetry semantic conventions for MCP name them: the span
 * name (`{mcp.method.name} {target}`, the target being the tool's name) and the attributes known before the message
 * is handled. Argument values are never read: only the method, the tool's name, the request id and the trace
 * context the client put in `params._meta`. Pure.
 */
import type { RequestFacts, SpanAttributes } from './telemetry';

/** What one JSON-RPC message says of itself, for its span. */
export interface McpMessageFacts {
  readonly method: string;
  /** tools/call's `params.name`. */
  readonly tool?: string;
  /** The JSON-RPC id, as text; undefined for a notification. */
  readonly requestId?: string;
  /** `params._meta.traceparent` and `tracestate`, when the client sent them as strings. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** Longest method or tool name kept (the log keeps as much): a client cannot inflate every span. */
const NAME_MAX = 64;
/** W3C trace context headers are short; anything longer is not one. */
const TRACE_HEADER_MAX = 512;

/** The messages of `body` (one, or each of a batch), skipping what is not a JSON-RPC message with a method. */
export function mcpMessagesOf(body: unknown): McpMessageFacts[] {
  const messages = Array.isArray(body) ? body : [body];
  const facts: McpMessageFacts[] = [];
  for (const message of messages) {
    const one = factsOf(message);
    if (one !== undefined) facts.push(one);
  }
  return facts;
}

function factsOf(message: unknown): McpMessageFacts | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const { method, id, params } = message as { method?: unknown; id?: unknown; params?: unknown };
  if (typeof method !== 'string') return undefined;
  const p = typeof params === 'object' && params !== null ? (params as { name?: unknown; _meta?: unknown }) : {};
  const meta = typeof p._meta === 'object' && p._meta !== null ? (p._meta as Record<string, unknown>) : {};
  return {
    method: method.slice(0, NAME_MAX),
    ...(method === 'tools/call' && typeof p.name === 'string' && { tool: p.name.slice(0, NAME_MAX) }),
    ...((typeof id === 'string' || typeof id === 'number') && { requestId: String(id).slice(0, NAME_MAX) }),
    ...traceContextOf(meta),
  };
}

function traceContextOf(meta: Record<string, unknown>): Pick<McpMessageFacts, 'traceparent' | 'tracestate'> {
  const { traceparent, tracestate } = meta;
  if (typeof traceparent !== 'string' || traceparent.length > TRACE_HEADER_MAX) return {};
  return {
    traceparent,
    ...(typeof tracestate === 'string' && tracestate.length <= TRACE_HEADER_MAX && { tracestate }),
  };
}

/** `{mcp.method.name} {target}`: the tool's name is the target of tools/call; other methods have none. */
export function mcpSpanName(facts: McpMessageFacts): string {
  return facts.tool === undefined ? facts.method : `${facts.method} ${facts.tool}`;
}

/** The attributes a message's span starts with. */
export function mcpStartAttributes(facts: McpMessageFacts): SpanAttributes {
  return {
    'mcp.method.name': facts.method,
    'jsonrpc.request.id': facts.requestId,
    'gen_ai.tool.name': facts.tool,
    'gen_ai.operation.name': facts.tool === undefined ? undefined : 'execute_tool',
  };
}

/**
 * What the request learned while it was handled, for its spans: the session's tag (never its id), the protocol
 * version, and a refusal's code as `error.type` (the HTTP status is the request span's own).
 */
export function requestEndAttributes(facts: RequestFacts): SpanAttributes {
  const modern = facts.era === 'modern';
  return {
    // A 2026-07-28 call has no session: the tag names its sandbox handle instead.
    'mcp.session.id': modern ? undefined : facts.session,
    'sandbox_mcp.handle': modern ? facts.session : undefined,
    'mcp.protocol.version': facts.protocol_version,
    'error.type': facts.error_code,
    'sandbox_mcp.era': facts.era,
  };
}
