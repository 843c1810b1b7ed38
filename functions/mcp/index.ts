/**
 * The HTTP entry (FC custom runtime, or `npm start`): read config, listen, and hand every request to the core
 * (core.ts: SDK, tools, sandboxes), which is loaded on the first request that needs it, right after a cold
 * instance's first `initialize` (answered without it, early-initialize.ts), or 2 s after listening.
 * The only module besides config.ts that knows it may be running on FC.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

import { loadConfig, type Config } from './config';
import type { Core } from './core';
import { codeCacheState, loadCore } from './core-modules';
import { installCrashGuards } from './crash-guard';
import { createEntryDeps } from './entry-deps';
import { describeError } from './errors';
import { createClientAddresses } from './http/client-address';
import { guardConnections, serverTimeouts } from './http/connection-guard';
import { writeErrorAnswer } from './http/refusals';
import { createEarlyListener } from './early-initialize';
import { createLogger, createProcessLogSink, type Logger } from './log';
import { installStackMaps } from './stack-maps';
import { stateDirProblem } from './sandbox/state-dir-mount';
import { RecentSet } from './sessions/recent-set';
import { SERVER_INFO } from './version';

/** How long after the core is loaded the sandbox backend is probed (a sandbox needed sooner probes at once). */
const STARTUP_PROBE_DELAY_MS = 500;
/**
 * An instance that no request made load its core loads it this long after listening, so that the backend's
 * start-up findings (no bubblewrap, no isolation) are logged at start-up.
 */
const IDLE_CORE_LOAD_DELAY_MS = 2_000;
/** Ids of sessions answered early that the core has not opened yet; more than this many are opened as recovered. */
const EARLY_IDS_REMEMBERED = 4_096;

/** On SIGTERM, how long calls in flight may take to finish before their sandboxes are stopped. */
const SHUTDOWN_GRACE_MS = 10_000;
/** Time for the answers of calls stopped at shutdown to be written before the connections close. */
const SHUTDOWN_FLUSH_MS = 300;

/** FC adds this header to every request it forwards. */
const FC_REQUEST_ID_HEADER = 'x-fc-request-id';

/** On FC, E2B_STATE_DIR on no mount of its own is said once at start-up (sandbox/state-dir-mount.ts). */
function reportStateDir(config: Config, logger: Logger): void {
  const stateDir = config.e2b.stateDir;
  if (config.sandboxBackend !== 'e2b' || stateDir === undefined) return;
  let mountinfo: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return;
  }
  const problem = stateDirProblem(stateDir, mountinfo);
  if (problem !== undefined) logger.warn('state directory not shared', { code: 'state_dir_not_shared', problem });
}

function main(): void {
  // Logged stacks name functions/…/*.ts through the maps beside the bundle (read only when a stack is formatted).
  installStackMaps(__filename);
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err: unknown) {
    process.stderr.write(`${describeError(err)}\n`);
    process.exitCode = 1;
    return;
  }
  const logger = createLogger(createProcessLogSink(process.stdout, process.stderr, 'stdout'), config.logLevel);
  const startedAtMs = Date.now();
  const shared = createEntryDeps(config);
  const { verifier, ids, policy, initializeRate } = shared;
  // The sessions whose `initialize` was answered before the core was loaded: the core opens each as new, once.
  const mintedEarly = new RecentSet(EARLY_IDS_REMEMBERED);

  let core: Core | undefined;
  const theCore = (): Core => {
    if (core === undefined) {
      const started = performance.now();
      core = loadCore().createCore({
        ...shared,
        config,
        logger,
        requestIdHeader: FC_REQUEST_ID_HEADER,
        startedAtMs,
        mintedEarly: (id) => mintedEarly.delete(id),
      });
      logger.info('core loaded', { load_ms: Math.round(performance.now() - started), code_cache: codeCacheState() });
      // The backend's probes (bubblewrap) a moment later, off the path of the request that needed the core.
      const loaded = core;
      setTimeout(() => void loaded.ready(), STARTUP_PROBE_DELAY_MS).unref();
    }
    return core;
  };
  const early = createEarlyListener({
    ids,
    verifier,
    policy,
    maxBodyBytes: config.maxBodyBytes,
    initializeRate,
    onMinted: (id) => mintedEarly.add(id),
    requestIdHeader: FC_REQUEST_ID_HEADER,
    tasks: config.taskRoot !== undefined,
    logger,
  });
  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    if (core !== undefined) {
      core.listener(req, res);
      return;
    }
    void early(req, res)
      .then((outcome) => {
        if (!outcome.answered) theCore().listener(req, res, outcome.body);
        // The client reads the answer and sends its next request meanwhile: load the core now.
        else if (core === undefined) setImmediate(theCore);
      })
      .catch((err: unknown) => {
        const error = describeError(err);
        if (req.destroyed || res.destroyed) logger.info('request aborted by the client', { error });
        else logger.error('request failed before the core was loaded', { error });
        if (res.headersSent) res.end();
        else writeErrorAnswer(res, { kind: 'internal_plain' });
      });
  };

  // On FC every connection is the platform's own (pooled, idle between requests): no first-request or idle deadline.
  const connectionLimits = {
    maxConnections: config.maxConnections,
    maxPerPeer: config.maxConnectionsPerPeer,
    firstRequestMs: config.onFc ? 0 : undefined,
    keepAliveMs: config.onFc ? 0 : undefined,
  };
  const server = createServer(serverTimeouts(connectionLimits));
  // The caps sit in front of both the early path and the core: a connection over one is answered 503 on either.
  const clients = createClientAddresses({ trustedProxies: config.trustedProxies, socketPeerIsClient: !config.onFc });
  guardConnections(server, { limits: connectionLimits, clients, logger, serve });
  // CONNECT never reaches the request handler: answer it rather than drop the connection.
  server.on('connect', (_req, socket: Socket) => {
    socket.end(
      'HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, POST, DELETE, OPTIONS\r\n' +
        'Content-Length: 0\r\nConnection: close\r\n\r\n',
    );
  });
  if (config.onFc) server.timeout = 0;
  server.on('error', (err: NodeJS.ErrnoException) => {
    process.stderr.write(
      `Cannot listen on ${config.host}:${config.port}: ${err.code ?? err.message}. Set PORT or HOST.\n`,
    );
    process.exitCode = 1;
  });
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    logger.info('listening', {
      host: config.host,
      port,
      auth: config.auth.mode,
      backend: config.sandboxBackend,
      version: SERVER_INFO.version,
      on_fc: config.onFc,
    });
    if (!config.onFc) process.stderr.write(toBanner(config, port));
    if (config.onFc) reportStateDir(config, logger);
    setTimeout(theCore, IDLE_CORE_LOAD_DELAY_MS).unref();
  });

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal, grace_ms: SHUTDOWN_GRACE_MS });
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      // With a configured secret the sessions can go on elsewhere (or here after a restart): keep their
      // sandboxes. With a per-process secret nobody can come back to them: clean up. Either way their
      // processes stop, so calls still running end with a clean result, written before the connections close.
      // Without the core there are no sandboxes yet.
      const keepSandboxes = config.sessionSecretSource === 'configured';
      const ending =
        core === undefined ? Promise.resolve() : core.shutdown({ keepSandboxes, flushMs: SHUTDOWN_FLUSH_MS });
      void ending
        .then(() => new Promise((resolve) => setTimeout(resolve, SHUTDOWN_FLUSH_MS)))
        .then(() => {
          server.closeAllConnections();
          return logger.flush();
        })
        .finally(() => process.exit(0));
    };
    // No new connections; calls in flight get the grace period to finish.
    server.close(finish);
    setTimeout(finish, SHUTDOWN_GRACE_MS).unref();
  };
  installCrashGuards(logger);
  // Test only (test/e2e/source-maps.test.ts): one uncaught error thrown inside the core, whose stack the crash guard
  // logs. Safe: read once from the process's own environment (no request can set it), it loads the core early and
  // logs one error; the process carries on.
  if (process.env.MCP_TEST_FAULT === 'uncaught-in-core') setImmediate(() => loadCore().raiseTestFault());
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  warnAboutAuth(config, logger);
}

function warnAboutAuth(config: Config, logger: Logger): void {
  if (config.sessionSecretSource === 'generated') {
    logger.warn(
      'MCP_SESSION_SECRET is not set: session ids are signed with a key made for this process, ' +
        'so sessions cannot move to another instance or survive a restart',
    );
  }
  if (config.auth.mode === 'none') {
    logger.warn('auth is off: anyone who can reach this address can run commands in the sandbox', {
      host: config.host,
    });
  } else if (config.auth.tokens.length === 0 && config.auth.oauth === undefined) {
    logger.warn('the configured token list is empty: every /mcp request will be refused', {
      source: config.auth.source,
    });
  } else if (config.auth.tokens.some((t) => t.length < 16)) {
    logger.warn('an auth token is shorter than 16 characters; use long random tokens (openssl rand -hex 32)');
  }
}

function toBanner(config: Config, port: number): string {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/mcp`;
  const bearer = config.auth.mode === 'bearer';
  const { oauth } = config.auth;
  // With OAuth a client signs in from the URL alone; a static token is the operator's own business.
  const withHeader = bearer && oauth === undefined;
  const authLine = !bearer
    ? 'none (loopback only; set MCP_AUTH_TOKENS to require a token)'
    : [
        ...(oauth === undefined ? [] : [`OAuth (tokens of ${oauth.issuer} for ${oauth.resource})`]),
        ...(config.auth.tokens.length === 0 && oauth !== undefined
          ? []
          : [`bearer token (${config.auth.source}; ${config.auth.tokens.length} configured)`]),
      ].join(' and ');
  const clientConfig = {
    mcpServers: {
      // With OAuth, the URL its tokens are for (MCP_PUBLIC_URL), which a client must use for them to be accepted.
      sandbox: {
        type: 'http',
        url: oauth?.resource ?? url,
        ...(withHeader && { headers: { Authorization: 'Bearer ${MCP_TOKEN}' } }),
      },
    },
  };
  const domain = config.e2b.domain === undefined ? '' : `, ${config.e2b.domain}`;
  const sandboxes =
    config.sandboxBackend === 'e2b'
      ? `E2B (template ${config.e2b.template}${domain})`
      : `local (workspaces under ${config.local.root})`;
  return [
    '',
    `  ${SERVER_INFO.name} ${SERVER_INFO.version} — MCP endpoint: ${url}`,
    `  auth: ${authLine}`,
    `  sandboxes: ${sandboxes}`,
    withHeader
      ? '  client configuration (replace ${MCP_TOKEN} with your token):'
      : oauth !== undefined
        ? '  client configuration (the client signs in with OAuth):'
        : '  client configuration:',
    ...JSON.stringify(clientConfig, null, 2)
      .split('\n')
      .map((line) => `    ${line}`),
    '',
    '',
  ].join('\n');
}

main();
