/**
 * Traces each request when telemetry is on (telemetry/telemetry.ts): its span starts on arrival and ends once the
 * answer is written, with the status and what the request log learned. On FC an instance with no request in flight
 * is frozen, and nothing it buffered could be exported until the next request thaws it: there, the answer that
 * leaves no other request in flight waits for the export (at most the export timeout, capped at 2 s) before its end
 * is written (`beforeEnd`, node-listener.ts). Not composed at all when telemetry is off.
 */
import { FILES_PATH } from '../files/file-urls';
import type { RequestFacts, Telemetry } from '../telemetry/telemetry';
import type { FetchHandler, RequestContext } from './context';

export interface RequestTraceOptions {
  /** Export before the last answer in flight ends (FC). */
  readonly flushWhenIdle: boolean;
}

/** FC's health check polls this every few seconds: no span for it, as no log line (request-log.ts). */
const UNTRACED_PATH = '/health';
/** The routes a request span is named after; any other path is `other`, so that span names stay few. */
const ROUTES = new Set(['/mcp', '/initialize', '/pre-stop']);

function routeOf(path: string): string {
  return ROUTES.has(path) ? path : path.startsWith(FILES_PATH) ? `${FILES_PATH}*` : 'other';
}

export function withRequestTrace(next: FetchHandler, telemetry: Telemetry, options: RequestTraceOptions): FetchHandler {
  let inFlight = 0;
  return async (req, ctx) => {
    if (ctx.path === UNTRACED_PATH) return next(req, ctx);
    inFlight += 1;
    const trace = telemetry.startRequest(req.method, routeOf(ctx.path), req.headers);
    ctx.trace = trace;
    let status = 500;
    let ended = false;
    /** Ends the request's spans, once: when the answer is written, or (on FC) just before its end. */
    const end = (): boolean => {
      if (ended) return false;
      ended = true;
      trace.end(status, factsOf(ctx));
      inFlight -= 1;
      return true;
    };
    ctx.onSent(() => void end());
    if (options.flushWhenIdle)
      ctx.beforeEnd?.(async () => {
        if (end() && inFlight === 0) await telemetry.flush();
      });
    try {
      const res = await next(req, ctx);
      status = res.status;
      return res;
    } catch (err: unknown) {
      end();
      throw err;
    }
  };
}

function factsOf(ctx: RequestContext): RequestFacts {
  return { ...ctx.log, ...(ctx.principal !== undefined && { principal: ctx.principal }) };
}
