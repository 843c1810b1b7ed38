/**
 * The core in-process: `createCoreApp` built from a real Config with fake dependencies (a fake clock, a
 * logger that keeps its lines, the E2B backend over the in-memory SDK stub) and driven with web `Request`s,
 * with no process spawned and no port opened. One harness is one server instance; harnesses that share an
 * `sdk` (the "E2B" that outlives instances) and a `clock` are instances of one deployment.
 *
 * What only the real process shows (start-up, signals, the Node shell, FC hooks, the cold instance's early initialize)
 * is tested through the bundle in test/e2e.
 */
import { randomUUID } from 'node:crypto';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { type Config, loadConfig } from '../../functions/mcp/config';
import { type CoreApp, createCoreApp } from '../../functions/mcp/core';
import { createEntryDeps } from '../../functions/mcp/entry-deps';
import type { RequestBody } from '../../functions/mcp/http/context';
import { webBodyOf } from '../../functions/mcp/http/node-listener';
import type { OAuthVerifierOptions } from '../../functions/mcp/http/oauth/token-verifier';
import { createLogger, type Logger } from '../../functions/mcp/log';
import { type SelectedProvider, toRetentionPolicy, toSecretTag } from '../../functions/mcp/sandbox/create-provider';
import { createE2BSandboxProvider } from '../../functions/mcp/sandbox/e2b/provider';
import { connectClient, type TestClient } from './clients';
import { StubSdk } from './e2b-stub';
import { createFakeClock, type FakeClock } from './fake-clock';
import { type ClientFetch, initializeBody, postMcp, type RawResponse } from './http';

export const HARNESS_TOKEN = 'harness-token-0123456789abcdef0123';
export const HARNESS_OTHER_TOKEN = 'harness-other-token-fedcba98765432';
export const HARNESS_SECRET = 'harness-secret-0123456789abcdef0123456789';
/** The URL the harness answers (any path works; the host passes the loopback Host check). */
export const HARNESS_URL = 'http://127.0.0.1:9000/mcp';

/** The environment every harness starts from; `HarnessOptions.env` goes over it. */
const BASE_ENV: Record<string, string> = {
  MCP_AUTH_TOKENS: `${HARNESS_TOKEN},${HARNESS_OTHER_TOKEN}`,
  MCP_SESSION_SECRET: HARNESS_SECRET,
  SANDBOX_BACKEND: 'e2b',
  E2B_API_KEY: 'e2b_harness_key_0123456789abcdef',
  // The creation gate is tested on its own; here it would only stretch fake time.
  E2B_MAX_CREATES_PER_S: '100',
  LOG_LEVEL: 'debug',
};

export interface HarnessOptions {
  /** Environment for `loadConfig`, over the base (two tokens, a secret, the E2B backend). */
  env?: Record<string, string>;
  /** The SDK stub behind the (real) E2B provider, shared by the instances of a test. @default a new one on the harness
   * clock */
  sdk?: StubSdk;
  /** @default a new fake clock */
  clock?: FakeClock;
  /** Another sandbox backend altogether, made from the harness's config, logger and clock (replaces the E2B
   * provider). */
  sandboxes?: (deps: { config: Config; logger: Logger; clock: FakeClock }) => SelectedProvider;
  /** How OAuth access tokens are checked (with MCP_OAUTH_ISSUER in `env`). @default the verifier's defaults on the
   * harness clock */
  oauth?: OAuthVerifierOptions;
  /** The client address of a request (`ctx.peer`, which the Node shell takes from the socket). @default none, as
   * behind FC */
  peerOf?: (req: Request) => string | undefined;
}

export interface Harness {
  readonly url: string;
  readonly clock: FakeClock;
  /** The stub "E2B" (unused when `sandboxes` gave another backend). */
  readonly sdk: StubSdk;
  readonly core: CoreApp;
  /** Serves one request through the core, as the Node shell would (the body read first, a signal for hang-ups). */
  readonly fetch: ClientFetch;
  /** The JSON log lines written so far. */
  logs(): Array<Record<string, unknown>>;
  /** An official client (v2 by default) connected through `fetch` (or `options.fetch`, which may wrap it). */
  connect(options?: { kind?: 'v1' | 'v2'; token?: string; fetch?: ClientFetch }): Promise<TestClient>;
  /** A v2 client pinned to 2026-07-28 (the modern lane), connected through `fetch`. */
  connectModern(options?: { token?: string; fetch?: ClientFetch }): Promise<Client>;
  /** POSTs a JSON-RPC body (or raw text) to /mcp with the usual headers, `headers` over them. */
  post(body: unknown, headers?: Record<string, string>): Promise<RawResponse>;
  /** Opens a 2025-era session over raw requests; `headers` carry the token, id and version for later requests. */
  openSession(options?: {
    token?: string;
    version?: string;
  }): Promise<{ sessionId: string; headers: Record<string, string> }>;
  /** The instance goes away keeping its sandboxes (a restart elsewhere can re-attach them). */
  close(): Promise<void>;
}

/** Builds one in-process instance. */
export function createHarness(options: HarnessOptions = {}): Harness {
  const clock = options.clock ?? createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const config = loadConfig({ ...BASE_ENV, ...options.env });
  const lines: string[] = [];
  const logger = createLogger(
    {
      write(chunk, callback) {
        if (chunk !== '') lines.push(chunk);
        callback?.();
        return true;
      },
    },
    config.logLevel,
    () => new Date(clock.now()),
  );
  const sdk = options.sdk ?? new StubSdk(clock);
  const sandboxes: SelectedProvider = options.sandboxes?.({ config, logger, clock }) ?? {
    provider: createE2BSandboxProvider({
      config: config.e2b,
      idleTtlMs: config.sessionIdleTtlS * 1000,
      logger,
      clock,
      loadSdk: async () => sdk,
      retention: toRetentionPolicy(config),
      secretTag: toSecretTag(config.sessionSecret),
    }),
    ready: async () => undefined,
  };
  const core = createCoreApp({
    ...createEntryDeps(config),
    config,
    logger,
    requestIdHeader: 'x-fc-request-id',
    startedAtMs: clock.now(),
    sandboxes,
    clock,
    oauth: options.oauth,
  });

  const fetchLike: ClientFetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    if (!headers.has('host')) headers.set('host', url.host);
    let body: RequestBody | undefined;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const text = await request.text();
      body = Buffer.byteLength(text) > config.maxBodyBytes ? { tooLarge: true } : { tooLarge: false, text };
    }
    // As in the Node shell: the web Request carries no body or signal; the context does.
    const bare = new Request(`http://localhost${url.pathname}${url.search}`, { method: request.method, headers });
    const hangUp = new AbortController();
    init?.signal?.addEventListener('abort', () => hangUp.abort(), { once: true });
    // What the handler left for when the answer has been written (or failed, or the client hung up).
    const sent: Array<() => void> = [];
    const settle = (): void => {
      for (const done of sent.splice(0)) done();
    };
    const ctx = {
      requestId: randomUUID(),
      path: url.pathname,
      peer: options.peerOf?.(request),
      log: {},
      readBody: async () => body,
      signal: hangUp.signal,
      onSent: (done: () => void) => void sent.push(done),
    };
    const response = await core.handle(bare, ctx).catch((err: unknown) => {
      settle();
      throw err;
    });
    // As the Node shell does, the body may be pushed by its producer (http/node-listener.ts).
    const answer = webBodyOf(response);
    if (answer === null) {
      settle();
      return response;
    }
    // A client that hangs up cancels the answer's stream, as a closed connection does.
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    void answer
      .pipeTo(writable, { signal: hangUp.signal })
      .catch(() => undefined)
      .finally(settle);
    return new Response(readable, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };

  const post = (body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> =>
    postMcp(HARNESS_URL, body, { authorization: `Bearer ${HARNESS_TOKEN}`, ...headers }, fetchLike);

  return {
    url: HARNESS_URL,
    clock,
    sdk,
    core,
    fetch: fetchLike,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    connect: ({ kind = 'v2', token = HARNESS_TOKEN, fetch = fetchLike } = {}) =>
      connectClient(kind, HARNESS_URL, { token, fetch }),
    async connectModern({ token = HARNESS_TOKEN, fetch = fetchLike } = {}) {
      const client = new Client(
        { name: 'harness-modern', version: '1.0.0' },
        { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(HARNESS_URL), {
          fetch,
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      );
      return client;
    },
    post,
    async openSession({ token = HARNESS_TOKEN, version = '2025-11-25' } = {}) {
      const auth = { authorization: `Bearer ${token}` };
      const opened = await post(initializeBody(version), auth);
      const sessionId = opened.headers.get('mcp-session-id');
      if (opened.status !== 200 || sessionId === null)
        throw new Error(`initialize failed: ${opened.status} ${opened.text}`);
      const headers = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': version };
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
      return { sessionId, headers };
    },
    close: () => core.shutdown({ keepSandboxes: true, flushMs: 0 }),
  };
}
