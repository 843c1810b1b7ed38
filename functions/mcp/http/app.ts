/** The web-standard app: routes, in one visible order of wrappers. Knows nothing of tools or sandboxes. */
import type { Logger } from '../log';
import type { BearerVerifier, OAuthGate } from './auth';
import type { FetchHandler } from './context';
import { FILES_PATH } from '../files/file-urls';
import { isOAuthPath } from './no-oauth';
import { RESOURCE_METADATA_PATHS } from './oauth/resource-metadata';
import { withMcpGates } from './mcp-gates';
import type { OriginPolicy } from './origin';
import { toErrorResponse } from './refusals';
import { withErrorBoundary, withRequestLog } from './request-log';
import { withRequestTrace } from './request-trace';
import type { Telemetry } from '../telemetry/telemetry';

/** What `/health` reports; no secrets. */
export type HealthReport = Record<string, unknown>;

export interface AppDeps {
  /** Serves POST and DELETE on `/mcp` once the gates passed. */
  mcp: FetchHandler;
  /**
   * Serves `/files/…`: file URLs, whose signed token is their only credential (http/file-route.ts). @default none
   */
  files?: FetchHandler;
  /** Builds the `/health` body. */
  health: () => HealthReport;
  /** Runs when FC's PreStop hook calls: flush logs; never kill live sandboxes (another instance may adopt them). */
  preStop: () => Promise<void>;
  /** `undefined` when auth is off. */
  verifier: BearerVerifier | undefined;
  /** With MCP_OAUTH_ISSUER: the OAuth gate of auth.ts and the RFC 9728 document served at RESOURCE_METADATA_PATHS. */
  oauth: { gate: OAuthGate; metadata: Record<string, unknown> } | undefined;
  policy: OriginPolicy;
  logger: Logger;
  /** Spans for every request when on (http/request-trace.ts). @default none */
  telemetry?: Telemetry;
  /** Export before the last answer in flight ends, as FC freezes an idle instance. @default false */
  flushTelemetryWhenIdle?: boolean;
}

/**
 * Composes the app: (with telemetry) request trace → error boundary → request log → router → (for /mcp) the gates →
 * MCP lanes.
 */
export function createApp(deps: AppDeps): FetchHandler {
  const mcp = withMcpGates(deps.mcp, { policy: deps.policy, verifier: deps.verifier, oauth: deps.oauth?.gate });

  const router: FetchHandler = async (req, ctx) => {
    const path = ctx.path;
    switch (path) {
      case '/mcp':
        return mcp(req, ctx);
      case '/health':
        return req.method === 'GET' || req.method === 'HEAD'
          ? Response.json(deps.health(), { headers: { 'cache-control': 'no-store' } })
          : toErrorResponse({ kind: 'route_method_not_allowed', allow: 'GET' });
      case '/initialize':
        return req.method === 'POST'
          ? new Response('ok\n')
          : toErrorResponse({ kind: 'route_method_not_allowed', allow: 'POST' });
      case '/pre-stop':
        if (req.method !== 'GET') return toErrorResponse({ kind: 'route_method_not_allowed', allow: 'GET' });
        await deps.preStop();
        return new Response('ok\n');
      default:
        if (deps.files !== undefined && path.startsWith(FILES_PATH)) return deps.files(req, ctx);
        if (deps.oauth !== undefined) {
          if (!RESOURCE_METADATA_PATHS.includes(path)) return toErrorResponse({ kind: 'no_route', path });
          if (req.method !== 'GET' && req.method !== 'HEAD')
            return toErrorResponse({ kind: 'route_method_not_allowed', allow: 'GET' });
          // Public by design, and read by browser-based clients (the MCP Inspector) from another origin.
          return Response.json(deps.oauth.metadata, {
            headers: { 'cache-control': 'max-age=300', 'access-control-allow-origin': '*' },
          });
        }
        return toErrorResponse(isOAuthPath(path) ? { kind: 'no_oauth' } : { kind: 'no_route', path });
    }
  };
  const app = withErrorBoundary(withRequestLog(router, deps.logger), deps.logger);
  const telemetry = deps.telemetry;
  if (telemetry === undefined || !telemetry.enabled) return app;
  return withRequestTrace(app, telemetry, { flushWhenIdle: deps.flushTelemetryWhenIdle === true });
}
