/** One JSON log line per request, and the boundary that turns anything unexpected into a plain 500. */
import type { Logger } from '../log';
import type { FetchHandler } from './context';
import { jsonRpcError, RPC } from './json-rpc-error';

/** Logs method, path, status, duration and the MCP fields once the response head is ready. */
export function withRequestLog(next: FetchHandler, logger: Logger, now: () => number = () => performance.now()): FetchHandler {
  return async (req, ctx) => {
    const started = now();
    const res = await next(req, ctx);
    const path = ctx.path;
    if (path !== '/health') {
      logger.info('request', {
        request_id: ctx.requestId,
        method: req.method,
        path,
        status: res.status,
        duration_ms: Math.round((now() - started) * 10) / 10,
        ...ctx.log,
      });
    }
    return res;
  };
}

/** Outermost wrapper: an unexpected error is logged with its stack and answered with a generic 500. */
export function withErrorBoundary(next: FetchHandler, logger: Logger): FetchHandler {
  return async (req, ctx) => {
    try {
      return await next(req, ctx);
    } catch (err: unknown) {
      logger.error('unhandled error', {
        request_id: ctx.requestId,
        error: err instanceof Error ? `${err.name}: ${err.message}` : 'non-error thrown',
        stack: err instanceof Error ? err.stack : undefined,
      });
      return jsonRpcError({ status: 500, code: RPC.INTERNAL_ERROR, message: 'Internal server error' });
    }
  };
}
