/** One JSON log line per request, and the boundary that turns anything unexpected into a plain 500. */
import { describeError, toFaultFields } from '../errors';
import type { Logger } from '../log';
import type { FetchHandler, RequestLogFields } from './context';
import { toErrorResponse } from './refusals';

/** The fixed part of a request's log line. */
export interface RequestLine {
  requestId: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
}

/** Writes the one log line of a request (also for the answers given without the core, early-initialize.ts). */
export function logRequest(logger: Logger, line: RequestLine, fields: RequestLogFields = {}): void {
  logger.info('request', {
    request_id: line.requestId,
    method: line.method,
    path: line.path,
    status: line.status,
    duration_ms: Math.round(line.durationMs * 10) / 10,
    ...fields,
  });
}

/** Puts the MCP method and tool name of a single message (or `batch`) into the request's log fields. */
export function noteMcpMessage(body: unknown, log: RequestLogFields): void {
  if (Array.isArray(body)) {
    log.mcp_method = 'batch';
    return;
  }
  if (typeof body !== 'object' || body === null) return;
  const { method, params } = body as { method?: unknown; params?: { name?: unknown } };
  if (typeof method === 'string') log.mcp_method = method.slice(0, 64);
  if (method === 'tools/call' && typeof params?.name === 'string') log.tool = params.name.slice(0, 64);
}

/** Logs method, path, status, duration and the MCP fields once the response head is ready. */
export function withRequestLog(
  next: FetchHandler,
  logger: Logger,
  now: () => number = () => performance.now(),
): FetchHandler {
  return async (req, ctx) => {
    const started = now();
    const res = await next(req, ctx);
    const path = ctx.path;
    if (path !== '/health') {
      logRequest(
        logger,
        { requestId: ctx.requestId, method: req.method, path, status: res.status, durationMs: now() - started },
        ctx.log,
      );
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
      if (ctx.signal?.aborted === true) {
        // The client hung up (its body could not be read, say): routine, not a server fault.
        logger.info('request aborted by the client', { request_id: ctx.requestId, error: describeError(err) });
        return toErrorResponse({ kind: 'client_gone' });
      }
      logger.error('unhandled error', { request_id: ctx.requestId, ...toFaultFields(err) });
      return toErrorResponse({ kind: 'internal' });
    }
  };
}
