/**
 * Traces each request when telemetry is on (telemetry/telemetry.ts): its span starts on arrival and ends with the
 * last byte of the answer, with the status and what the request log learned. On FC an instance with no request in
 * flight is frozen, and nothing it buffered could be exported until the next request thaws it: there, the answer
 * that leaves no other request in flight waits for the export (at most the export timeout, capped at 2 s) before
 * its end is written. Not composed at all when telemetry is off.
 */
import type { RequestFacts, Telemetry } from '../telemetry/telemetry';
import type { FetchHandler, RequestContext } from './context';

export interface RequestTraceOptions {
  /** Export before the last answer in flight ends (FC). */
  readonly flushWhenIdle: boolean;
}

/** FC's health check polls this every few seconds: no span for it, as no log line (request-log.ts). */
const UNTRACED_PATH = '/health';

export function withRequestTrace(next: FetchHandler, telemetry: Telemetry, options: RequestTraceOptions): FetchHandler {
  let inFlight = 0;
  return async (req, ctx) => {
    if (ctx.path === UNTRACED_PATH) return next(req, ctx);
    inFlight += 1;
    const trace = telemetry.startRequest(req.method, ctx.path, req.headers);
    ctx.trace = trace;
    let status = 500;
    let finished = false;
    /** Ends the request's spans, once; on FC, the last one out exports. */
    const finish = async (): Promise<void> => {
      if (finished) return;
      finished = true;
      trace.end(status, factsOf(ctx));
      inFlight -= 1;
      if (options.flushWhenIdle && inFlight === 0) await telemetry.flush();
    };
    // A client that goes away before the end still ends the spans.
    ctx.onSent(() => void finish());
    let res: Response;
    try {
      res = await next(req, ctx);
    } catch (err: unknown) {
      await finish();
      throw err;
    }
    status = res.status;
    if (res.body === null) {
      await finish();
      return res;
    }
    const body = res.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: finish }));
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function factsOf(ctx: RequestContext): RequestFacts {
  return { ...ctx.log, ...(ctx.principal !== undefined && { principal: ctx.principal }) };
}
