/**
 * Everything past a client's handshake: the sandbox backend, the tools, both MCP lanes and the web-standard
 * app, behind one Node listener. index.ts loads it on first need (core-modules.ts), so that start-up compiles
 * none of it.
 */
import type { Config } from './config';
import { createApp } from './http/app';
import type { BearerVerifier } from './http/auth';
import { createHealthReport } from './http/health';
import { createNodeListener, type NodeListener } from './http/node-listener';
import type { OriginPolicy } from './http/origin';
import type { Logger } from './log';
import { createLegacyLane } from './protocol/legacy-lane';
import type { LegacySession } from './protocol/legacy-session';
import { createMcpEndpoint } from './protocol/mcp-endpoint';
import { createModernLane } from './protocol/modern-lane';
import { HTTP_PROTOCOL_VERSIONS } from './protocol/versions';
import { createSandboxProvider } from './sandbox/create-provider';
import type { FreshSessions } from './sessions/fresh-sessions';
import type { SignedIdCodec } from './sessions/session-id';
import { createMemorySessionStore } from './sessions/store';
import { createToolCatalog } from './tools';

/** What the entry made before the core was needed; the core shares it rather than making its own. */
export interface CoreDeps {
  config: Config;
  logger: Logger;
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  /** Origin and Host rules (from config). */
  policy: OriginPolicy;
  ids: SignedIdCodec;
  /** Sessions whose `initialize` was answered before the core was loaded. */
  fresh: FreshSessions;
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader: string;
  startedAtMs: number;
}

export interface Core {
  /** Serves every request once the core is loaded. */
  listener: NodeListener;
  /** Probes the sandbox backend (bubblewrap); a sandbox needed sooner probes at once. */
  ready(): Promise<void>;
  /**
   * Ends the sessions at shutdown: sandboxes kept for them to come back to (`keepSandboxes`) or destroyed;
   * calls still running end with a result, given `flushMs` to be written.
   */
  shutdown(options: { keepSandboxes: boolean; flushMs: number }): Promise<void>;
  /** Sessions the 2025 lane holds as SDK sessions (not counting those held as data). */
  heldSessions(): number;
}

/** Wires the layers of DESIGN.md for the HTTP entry. */
export function createCore({ config, logger, verifier, policy, ids, fresh, requestIdHeader, startedAtMs }: CoreDeps): Core {
  const { provider, ready } = createSandboxProvider(config, logger);
  const catalog = createToolCatalog(logger);
  const limits = { idleTtlMs: config.sessionIdleTtlS * 1000, toolTimeoutMaxMs: config.toolTimeoutMaxS * 1000 };
  const lane = createLegacyLane({
    store: createMemorySessionStore<LegacySession>(limits.idleTtlMs),
    ids,
    catalog,
    provider,
    maxSessions: config.maxSessions,
    ...limits,
    logger,
    fresh,
  });
  const modern = createModernLane({ catalog, provider, ids, maxSandboxes: config.maxSessions, ...limits, logger });
  const app = createApp({
    mcp: createMcpEndpoint({ legacy: lane, modern, maxBodyBytes: config.maxBodyBytes }),
    health: createHealthReport({
      backend: () => provider.status(),
      counts: () => {
        const held = lane.counts();
        return { sessions: held.sessions, sandboxes: held.sandboxes + modern.count() };
      },
      authMode: config.auth.mode,
      versions: HTTP_PROTOCOL_VERSIONS,
      startedAtMs,
    }),
    preStop: () => logger.flush(),
    verifier,
    policy,
    logger,
  });
  return {
    listener: createNodeListener(app, {
      requestIdHeader,
      maxBodyBytes: config.maxBodyBytes,
      onError: (err, clientGone) => {
        const error = err instanceof Error ? err.message : 'unknown';
        // A client that hangs up mid-request is routine, not a server fault.
        if (clientGone) logger.info('request aborted by the client', { error });
        else logger.error('response failed', { error });
      },
    }),
    ready,
    heldSessions: () => lane.heldSessions(),
    async shutdown({ keepSandboxes, flushMs }) {
      await Promise.all([lane.shutdown({ keepSandboxes, flushMs }), keepSandboxes ? modern.releaseAll() : modern.closeAll()]);
    },
  };
}
