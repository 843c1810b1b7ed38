/**
 * Everything but a cold instance's first `initialize`: the sandbox backend, the tools, both MCP lanes and the
 * web-standard app, behind one Node listener. index.ts loads it on first need (core-modules.ts), so that
 * start-up compiles none of it.
 */
import { type Clock, SYSTEM_CLOCK } from './clock';
import type { Config } from './config';
import type { EntryDeps } from './entry-deps';
import { policyFor, secretsFor } from './egress/egress-config';
import { summarize } from './egress/policy';
import { summarizeSecrets } from './egress/secrets';
import { describeError } from './errors';
import { createFileUrlSigner } from './files/file-url-token';
import { createFileUrlFactory } from './files/file-urls';
import { createApp } from './http/app';
import { createFileRoute } from './http/file-route';
import { createOAuthGate } from './http/oauth/oauth-gate';
import type { OAuthVerifierOptions } from './http/oauth/token-verifier';
import type { FetchHandler } from './http/context';
import { createClientAddresses } from './http/client-address';
import { createHealthReport } from './http/health';
import { createNodeListener, type NodeListener } from './http/node-listener';
import type { Logger } from './log';
import { createCallShare } from './sessions/call-share';
import { createLegacyCall, createLegacyLane, createLegacyResources } from './protocol/legacy-lane';
import { createMcpEndpoint } from './protocol/mcp-endpoint';
import { createMcpServing } from './protocol/mcp-server';
import { createModernCall, createModernLane, createModernResources } from './protocol/modern-lane';
import { withSandboxArgument } from './protocol/sandbox-argument';
import { legacyTaskMethods, modernTaskMethods, taskToolsOf, withoutTaskSupport } from './protocol/task-methods';
import { MODERN_SERVER_INSTRUCTIONS } from './protocol/server-identity';
import { HTTP_PROTOCOL_VERSIONS, PROTOCOL_VERSIONS_BY_TRANSPORT } from './protocol/versions';
import { createSandboxProvider, type SelectedProvider } from './sandbox/create-provider';
import { createSandboxAccess } from './sessions/sandbox-access';
import { createSandboxTable } from './sessions/sandbox-table';
import { createTaskRunner } from './tasks/task-runner';
import { createTaskStore } from './tasks/task-store';
import { createToolCatalog } from './tools/registry';
import { traceToolCatalog } from './tools/traced-catalog';
import { createTelemetry } from './telemetry/load-telemetry';
import type { Telemetry } from './telemetry/telemetry';

/** What enforces a sandbox's egress policy, by backend. */
const ENFORCED_BY = {
  local: 'the server (an HTTP proxy outside the sandbox)',
  e2b: "E2B's egress rules, set when the sandbox is created",
} as const;

/** A task's ttl when its client asks none: an hour (capped by MCP_SESSION_MAX_AGE_S). */
const DEFAULT_TASK_TTL_MS = 3_600_000;

/** What the entry made before the core was needed; the core shares it rather than making its own. */
export interface CoreDeps extends EntryDeps {
  config: Config;
  logger: Logger;
  /** Header that carries the platform's request id (FC: `x-fc-request-id`). */
  requestIdHeader: string;
  startedAtMs: number;
  /** True, once, for a session id whose `initialize` the entry answered before loading the core. @default none */
  mintedEarly?: (id: string) => boolean;
  /** The sandbox backend. @default the one SANDBOX_BACKEND names */
  sandboxes?: SelectedProvider;
  /** Time for session expiry, id signing and the E2B backend. @default SYSTEM_CLOCK */
  clock?: Clock;
  /**
   * How OAuth access tokens are checked, with MCP_OAUTH_ISSUER (http/oauth/token-verifier.ts).
   * @default its defaults
   */
  oauth?: OAuthVerifierOptions;
  /** FC's variables, which describe the process in telemetry's exports. @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
}

/** The core as a web-standard handler, before the Node shell (what the in-process tests drive). */
export interface CoreApp {
  /** Serves every request that reaches the core. */
  handle: FetchHandler;
  /** Probes the sandbox backend (bubblewrap); a sandbox needed sooner probes at once. */
  ready(): Promise<void>;
  /**
   * Ends the sessions at shutdown: sandboxes kept for them to come back to (`keepSandboxes`) or destroyed;
   * calls still running end with a result, given `flushMs` to be written.
   */
  shutdown(options: { keepSandboxes: boolean; flushMs: number }): Promise<void>;
  /** Spans and metrics (telemetry/telemetry.ts): NO_TELEMETRY without OTEL_* settings. */
  telemetry: Telemetry;
}

/** The core behind its Node shell. */
export interface Core extends Omit<CoreApp, 'handle'> {
  /** Serves every request once the core is loaded. */
  listener: NodeListener;
}

/** Wires the layers (HTTP gates, the two lanes, tools, the sandbox backend) into one web-standard handler. */
export function createCoreApp({
  config,
  logger,
  verifier,
  policy,
  ids,
  initializeRate,
  mintedEarly,
  startedAtMs,
  sandboxes,
  clock = SYSTEM_CLOCK,
  oauth,
  env = process.env,
}: CoreDeps): CoreApp {
  // Telemetry first: the backend traces through it. What it reports as held is read from the table, made below.
  const telemetry = createTelemetry(config.telemetry, {
    logger,
    env,
    held: () => ({ sessions: table.counts().sessions, sandboxesByCredential: table.sandboxesByPrincipal() }),
  });
  const { provider, ready } = sandboxes ?? createSandboxProvider(config, logger, clock, telemetry);
  const now = (): number => clock.now();
  const tools = createToolCatalog(logger);
  const catalog = telemetry.enabled ? traceToolCatalog(tools, telemetry) : tools;
  const idleTtlMs = config.sessionIdleTtlS * 1000;
  const table = createSandboxTable({
    provider,
    idleTtlMs,
    firstLeaseMs: config.sandboxFirstLeaseS * 1000,
    maxAgeMs: config.sessionMaxAgeS * 1000,
    caps: {
      session: {
        perCredential: { max: config.perCredential.sessions, setting: 'MCP_MAX_SESSIONS_PER_CREDENTIAL' },
        total: { max: config.maxSessions, setting: 'MCP_MAX_SESSIONS' },
      },
      handle: {
        perCredential: { max: config.perCredential.sandboxes, setting: 'MCP_MAX_SANDBOXES_PER_CREDENTIAL' },
        total: { max: config.maxSessions, setting: 'MCP_MAX_SESSIONS' },
      },
    },
    sandboxesPerCredential: { max: config.perCredential.sandboxes, setting: 'MCP_MAX_SANDBOXES_PER_CREDENTIAL' },
    logger,
    now,
  });
  const enforcedBy = ENFORCED_BY[config.sandboxBackend];
  const context = {
    backend: () => provider.status(),
    toolTimeoutMaxMs: config.toolTimeoutMaxS * 1000,
    egressOf: (principal: string) => ({
      ...summarize(policyFor(config.egress, principal)),
      enforcedBy,
      secrets: summarizeSecrets(secretsFor(config.egress, principal)),
    }),
  };
  const directory = {
    table,
    provider,
    ids,
    maxAgeMs: config.sessionMaxAgeS * 1000,
    retentionMs: config.sleeping.retentionS * 1000,
    now,
    logger,
  };
  const signer = createFileUrlSigner(config.sessionSecret);
  // Tool calls and file transfers in flight share one count per credential.
  const calls = createCallShare(config.perCredential.calls);
  const fileUrls = createFileUrlFactory({ signer, config: config.fileUrls, now });
  const { taskRoot } = config;
  const maxTaskTtlMs = config.sessionMaxAgeS * 1000;
  const tasks = createTaskRunner({
    store: taskRoot === undefined ? undefined : createTaskStore(taskRoot),
    offReason: 'on E2B they are kept in E2B_STATE_DIR, which is not set',
    ids,
    clock,
    maxRunningPerCredential: config.perCredential.tasks,
    maxTtlMs: maxTaskTtlMs,
    defaultTtlMs: Math.min(DEFAULT_TASK_TTL_MS, maxTaskTtlMs),
    logger,
  });
  const taskTools = taskToolsOf(catalog.list);
  const serve = createMcpServing(
    {
      legacy: {
        tools: catalog.list,
        versions: HTTP_PROTOCOL_VERSIONS,
        call: createLegacyCall({ table, catalog, context, idleTtlMs, directory, fileUrls }),
        resources: createLegacyResources({ table, now }),
        tasks: (principal) => legacyTaskMethods({ runner: tasks, principal, taskTools }),
      },
      modern: {
        tools: withoutTaskSupport(withSandboxArgument(catalog.list)),
        versions: HTTP_PROTOCOL_VERSIONS,
        instructions: MODERN_SERVER_INSTRUCTIONS,
        call: createModernCall({ table, ids, catalog, context, idleTtlMs, now, directory, provider, fileUrls }),
        resources: createModernResources({ table, ids, idleTtlMs, now, provider }),
        tasks: (principal) => modernTaskMethods({ runner: tasks, principal, taskTools }),
      },
    },
    logger,
  );
  const legacy = createLegacyLane({
    table,
    ids,
    catalog: provider.catalog,
    serve,
    initializeRate,
    mintedEarly,
    logger,
    now,
  });
  const modern = createModernLane({ table, ids, serve, now });
  const handle = createApp({
    mcp: createMcpEndpoint({
      legacy,
      modern,
      maxBodyBytes: config.maxBodyBytes,
      calls,
    }),
    files: createFileRoute({
      signer,
      access: createSandboxAccess(table),
      now,
      onFc: config.onFc,
      calls,
      maxTransfers: config.fileUrls.maxTransfers,
      logger,
    }),
    health: createHealthReport({
      backend: () => provider.status(),
      counts: () => table.counts(),
      authMode: config.auth.mode,
      versions: HTTP_PROTOCOL_VERSIONS,
      byTransport: PROTOCOL_VERSIONS_BY_TRANSPORT,
      startedAtMs,
      now,
    }),
    // FC calls PreStop before it reclaims the instance: what telemetry still holds goes out first.
    preStop: async () => {
      await telemetry.flush();
      await logger.flush();
    },
    verifier,
    oauth:
      config.auth.oauth === undefined
        ? undefined
        : createOAuthGate(config.auth.oauth, { now, sleep: (ms) => clock.sleep(ms), ...oauth }),
    policy,
    logger,
    telemetry,
    flushTelemetryWhenIdle: config.onFc,
  });
  return {
    handle,
    ready,
    shutdown: async (options) => {
      await tasks.stopAll();
      await table.shutdown(options);
      await telemetry.shutdown();
    },
    telemetry,
  };
}

/**
 * Test only: throws, from the core's own code, so that a test sees the stack the crash guard logs (index.ts calls
 * it when started with MCP_TEST_FAULT=uncaught-in-core; test/e2e/source-maps.test.ts).
 */
export function raiseTestFault(): never {
  throw new Error('MCP_TEST_FAULT: a deliberate error from the core');
}

/** Wires the core for the HTTP entry: the web-standard app behind the Node shell. */
export function createCore(deps: CoreDeps): Core {
  const { handle, ...rest } = createCoreApp(deps);
  const { logger, config, requestIdHeader } = deps;
  return {
    ...rest,
    listener: createNodeListener(handle, {
      requestIdHeader,
      maxBodyBytes: config.maxBodyBytes,
      // On FC every socket's peer is the platform's front end: no client address unless a trusted proxy names it.
      clientOf: createClientAddresses({ trustedProxies: config.trustedProxies, socketPeerIsClient: !config.onFc })
        .clientOf,
      onError: (err, clientGone) => {
        const error = describeError(err);
        // A client that hangs up mid-request is routine, not a server fault.
        if (clientGone) logger.info('request aborted by the client', { error });
        else logger.error('response failed', { error });
      },
    }),
  };
}
