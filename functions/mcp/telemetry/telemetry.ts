/**
 * What the server asks of telemetry, whichever implementation serves it: none (NO_TELEMETRY, the default, which
 * costs nothing), or OpenTelemetry (otel/otel-telemetry.ts, loaded only when OTEL_* settings ask for it:
 * load-telemetry.ts). Nothing here imports OpenTelemetry. What goes into spans and metrics, and what never does:
 * docs/observability.md.
 */
/** What the request log learned of a request (http/context.ts RequestLogFields), as the spans read it. */
export interface RequestFacts {
  readonly mcp_method?: string;
  readonly tool?: string;
  /** The non-reversible tag of the session (2025) or of the sandbox handle (2026-07-28), never either itself. */
  readonly session?: string;
  readonly protocol_version?: string;
  readonly era?: 'legacy' | 'modern';
  /** The refusal's code, when the request was refused. */
  readonly error_code?: string;
  /** The credential's principal (principals.ts): a non-reversible id, never the token. */
  readonly principal?: string;
}

/** What the instance holds when metrics are collected. */
export interface HeldCounts {
  readonly sessions: number;
  /** Running sandboxes by the principal of the credential that holds them. */
  readonly sandboxesByCredential: ReadonlyMap<string, number>;
}

/** Span attribute values: what OpenTelemetry takes, without arrays of mixed types. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** What a running span's code may add to it. */
export interface SpanNote {
  set(attributes: SpanAttributes): void;
}

const NO_NOTE: SpanNote = { set: () => undefined };

/** The trace of one HTTP request: its span, and the MCP span of each JSON-RPC message it carries. */
export interface RequestTrace {
  /**
   * Runs `fn`, the handling of the JSON-RPC message(s) in `body`, inside their MCP span: work it starts (a sandbox,
   * a command, an E2B call) is traced as that span's children. A trace context in the message's `params._meta`
   * (`traceparent`, `tracestate`) is continued.
   */
  mcp<T>(body: unknown, fn: () => Promise<T>): Promise<T>;
  /** Ends the request's spans with the answer's status and what the request log learned. Idempotent. */
  end(status: number, facts: RequestFacts): void;
}

export interface Telemetry {
  /** False for NO_TELEMETRY: callers skip building what only telemetry would read. */
  readonly enabled: boolean;
  /**
   * Starts the trace of a request that arrived now, to `route` (a path, or a few paths' name: `/files/*`, `other`);
   * `headers` may carry the client's `traceparent`.
   */
  startRequest(method: string, route: string, headers: Headers): RequestTrace;
  /**
   * Runs `fn` in a span of its own, a child of whatever span is active (a sandbox operation): `fn` may add what it
   * learns (an exit code, a size) through the note. An error thrown marks the span failed with the error's class.
   */
  span<T>(name: string, attributes: SpanAttributes, fn: (note: SpanNote) => Promise<T>): Promise<T>;
  /**
   * A call to another service (E2B's API or envd): a client span, and its duration in the service's metric by
   * operation and outcome.
   */
  clientCall<T>(service: 'e2b', operation: string, fn: (note: SpanNote) => Promise<T>): Promise<T>;
  /** Adds attributes to the active span (the tool call's outcome, say); nothing when none is active. */
  annotate(attributes: SpanAttributes): void;
  /** Exports what has been recorded; resolves when done or after the export timeout, never rejects. */
  flush(): Promise<void>;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

const NO_TRACE: RequestTrace = {
  mcp: (_body, fn) => fn(),
  end: () => undefined,
};

/** Telemetry off: every method does nothing but run what it is given. */
export const NO_TELEMETRY: Telemetry = {
  enabled: false,
  startRequest: () => NO_TRACE,
  span: (_name, _attributes, fn) => fn(NO_NOTE),
  clientCall: (_service, _operation, fn) => fn(NO_NOTE),
  annotate: () => undefined,
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};
