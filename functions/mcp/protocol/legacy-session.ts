/** One 2025-era session: its SDK server and sessionful transport, its lazy sandbox, and its owner. */
import { type Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

import type { LazySandbox } from '../sandbox/lazy-sandbox';
import type { BackendStatus } from '../sandbox/types';
import type { StoredSession } from '../sessions/store';
import type { ToolCatalog } from '../tools';
import { createProtocolServer } from './server-factory';
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
  /** The version negotiated in `initialize`, once it has been answered. */
  protocolVersion(): string | undefined;
  /** Closes the transport and kills the sandbox. */
  close(): Promise<void>;
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
}

/** Default for a tool's `timeout_ms`. */
const DEFAULT_TOOL_TIMEOUT_MS = 60_000;

/** Builds a session around a fresh transport whose id generator returns the pre-minted `id`. */
export function openLegacySession(options: OpenLegacySessionOptions): LegacySession {
  const { id, sandbox, idleTtlMs, toolTimeoutMaxMs } = options;
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => id,
    onsessioninitialized: () => options.onInitialized(session),
    onsessionclosed: () => options.onDeleted(session),
  });
  const server = createProtocolServer({
    catalog: options.catalog,
    versions: HTTP_PROTOCOL_VERSIONS,
    toolContext: (ctx) => ({
      sandbox,
      backend: options.backendStatus,
      expiresAt: () => new Date(session.lastUsedMs + idleTtlMs),
      signal: ctx.mcpReq.signal,
      timeoutMs: (requested) => Math.min(requested ?? DEFAULT_TOOL_TIMEOUT_MS, toolTimeoutMaxMs),
    }),
  });
  const session: LegacySession = {
    id,
    tag: options.tag,
    principal: options.principal,
    lastUsedMs: options.nowMs,
    server,
    transport,
    sandbox,
    protocolVersion: () => server.getNegotiatedProtocolVersion(),
    async close() {
      await transport.close();
      await sandbox.kill();
    },
  };
  return session;
}
