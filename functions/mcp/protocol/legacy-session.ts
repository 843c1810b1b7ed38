/**
 * One 2025-era session: its SDK server and sessionful transport, its lazy sandbox, and its owner.
 *
 * One sessionful transport per session. The SDK's transport cannot adopt a session id minted elsewhere, so a
 * session this instance does not hold (its id verified, its sandbox tagged) is rebuilt with a fresh transport
 * brought to the initialized state by a synthetic `initialize` at the client's protocol version. Chosen over the
 * other way (stateless transports, with `sessions/` owning the `Mcp-Session-Id` lifecycle) because it keeps the
 * SDK's own session checks and SSE handling per session. The same rebuild opens a session whose `initialize` a
 * cold instance answered before its core was loaded (protocol/early-listener.ts).
 */
import { type Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

import type { LazySandbox } from '../sandbox/lazy-sandbox';
import type { BackendStatus } from '../sandbox/types';
import type { StoredSession } from '../sessions/store';
import type { ToolCatalog } from '../tools';
import { SSE_KEEP_ALIVE_MS } from './keep-alive';
import { createCatalogServer } from './server-factory';
import { toToolContext } from './tool-context';
import { HTTP_PROTOCOL_VERSIONS } from './versions';

/** A session as the store and the lane see it. */
export interface LegacySession extends StoredSession {
  /** Short hash of the id, for logs. */
  readonly tag: string;
  /** The credential that created the session (see `toPrincipal`). */
  readonly principal: string;
  readonly server: Server;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly sandbox: LazySandbox;
  /** True while a tool call or a background process runs: such a session is not evicted. */
  readonly busy: () => boolean;
  /** True while a tool call runs: such a session does not expire either. */
  readonly inCall: () => boolean;
  /** The version negotiated in `initialize`, once it has been answered. */
  protocolVersion(): string | undefined;
  /** Closes the transport and kills the sandbox. */
  close(): Promise<void>;
  /** Closes the transport and lets go of the sandbox, which stays for the session to come back to. */
  release(): Promise<void>;
  /** Idle expiry here: closes the transport; destroys the sandbox unless another instance used it lately. */
  expire(idleTtlMs: number, nowMs: number): Promise<boolean>;
}

export interface OpenLegacySessionOptions {
  id: string;
  tag: string;
  principal: string;
  nowMs: number;
  catalog: ToolCatalog;
  sandbox: LazySandbox;
  backendStatus: () => BackendStatus;
  idleTtlMs: number;
  toolTimeoutMaxMs: number;
  /** Called when the transport accepted `initialize`: the session joins the store. */
  onInitialized: (session: LegacySession) => void;
  /** Called when the client sent DELETE; the DELETE is answered once this settles. */
  onDeleted: (session: LegacySession) => Promise<void>;
  /** Called when a tool call ended: the session counts as used then (its idle time starts). */
  onCallEnded: (session: LegacySession) => void;
}

/** Builds a session around a fresh transport whose id generator returns the pre-minted `id`. */
export function openLegacySession(options: OpenLegacySessionOptions): LegacySession {
  const { id, sandbox, idleTtlMs, toolTimeoutMaxMs } = options;
  let calls = 0;
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => id,
    keepAliveMs: SSE_KEEP_ALIVE_MS,
    onsessioninitialized: () => options.onInitialized(session),
    onsessionclosed: () => options.onDeleted(session),
  });
  const server = createCatalogServer({
    catalog: options.catalog,
    versions: HTTP_PROTOCOL_VERSIONS,
    toolContext: (ctx) =>
      toToolContext(ctx, {
        sandbox,
        backend: options.backendStatus,
        expiresAt: () => new Date(session.lastUsedMs + idleTtlMs),
        toolTimeoutMaxMs,
      }),
    async trackCall(run) {
      calls += 1;
      try {
        return await run();
      } finally {
        calls -= 1;
        options.onCallEnded(session);
      }
    },
  });
  const session: LegacySession = {
    id,
    tag: options.tag,
    principal: options.principal,
    lastUsedMs: options.nowMs,
    server,
    transport,
    sandbox,
    busy: () => calls > 0 || sandbox.current()?.hasRunningBackground() === true,
    inCall: () => calls > 0,
    protocolVersion: () => server.getNegotiatedProtocolVersion(),
    // The sandbox stops first: a call still running then ends with a result instead of a cut stream.
    async close() {
      await sandbox.kill();
      await transport.close();
    },
    async release() {
      await sandbox.release();
      await transport.close();
    },
    async expire(ttlMs, nowMs) {
      await transport.close();
      return sandbox.expire(ttlMs, nowMs);
    },
  };
  return session;
}

/**
 * Stands in for the client of a session rebuilt from its id alone. The tools ask nothing of the client's
 * capabilities, so none are needed.
 */
const UNKNOWN_CLIENT = { capabilities: {}, clientInfo: { name: 'recovered-session', version: '0' } };

/**
 * Brings a session's fresh transport and server to the initialized state at `protocolVersion`, as if the
 * client's `initialize` had reached them. The answers are discarded.
 */
export async function primeSession(session: LegacySession, protocolVersion: string): Promise<void> {
  const post = (extra: Record<string, string> = {}): Request =>
    new Request('http://localhost/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...extra },
    });
  const initialize = {
    jsonrpc: '2.0',
    id: 'mcp-session-recovery',
    method: 'initialize',
    params: { protocolVersion, ...UNKNOWN_CLIENT },
  };
  await session.server.connect(session.transport);
  const answer = await (await session.transport.handleRequest(post(), { parsedBody: initialize })).text();
  if (!answer.includes('"result"')) throw new Error('the SDK refused the primed initialize');
  const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
  const sessionHeaders = { 'mcp-session-id': session.id, 'mcp-protocol-version': protocolVersion };
  await (await session.transport.handleRequest(post(sessionHeaders), { parsedBody: initialized })).text();
}
