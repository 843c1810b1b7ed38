/**
 * `/mcp` after the gates: reads the POST body once, then routes by protocol era with the SDK's own
 * classifier (`isLegacyRequest`): 2025-era requests to the sessionful lane, 2026-07-28 requests to the
 * stateless modern lane. DELETE is a 2025-era session operation.
 */
import { isLegacyRequest } from '@modelcontextprotocol/server';

import { ANONYMOUS_PRINCIPAL } from '../http/auth';
import type { FetchHandler, IncomingRequest, RequestContext } from '../http/context';
import { readJsonPost } from '../http/json-body';
import { toErrorResponse } from '../http/refusals';
import { noteMcpMessage } from '../http/request-log';
import type { CallShare } from '../sessions/call-share';
import type { LegacyLane } from './legacy-lane';
import { type PostLane, webRequestOf } from './mcp-server';
import { hasMethod, jsonRpcIdOf, readPlainMessage } from './plain-message';
import { HTTP_PROTOCOL_VERSIONS } from './versions';

export interface McpEndpointOptions {
  legacy: LegacyLane;
  modern: PostLane;
  /** MCP_MAX_BODY_BYTES. */
  maxBodyBytes: number;
  /** MCP_MAX_CALLS_PER_CREDENTIAL. */
  calls: CallShare;
}

/** Creates the endpoint for POST and DELETE on `/mcp`. */
export function createMcpEndpoint({ legacy, modern, maxBodyBytes, calls }: McpEndpointOptions): FetchHandler {
  return async (req, ctx) => {
    if (req.method === 'DELETE') {
      if (req.headers.get('mcp-session-id') === null) {
        // Only a 2025-era session can be deleted (the 2026-07-28 revision has none): the request lacks its id.
        ctx.log.error_code = 'session_id_missing';
        return toErrorResponse({ kind: 'delete_without_session' });
      }
      return legacy.handleDelete(req, ctx);
    }
    const post = await readJsonPost(req, maxBodyBytes, ctx);
    if (!post.ok) return post.response;
    noteMcpMessage(post.body, ctx.log);
    const body = post.body;
    // With telemetry, the message's span is active while it is handled: the work it starts becomes its children.
    return ctx.trace === undefined
      ? handleMessage(req, body, ctx)
      : ctx.trace.mcp(body, () => handleMessage(req, body, ctx));
  };

  /** A POST's JSON-RPC message (or batch), past the per-credential cap on calls in flight, to its lane. */
  async function handleMessage(req: IncomingRequest, body: unknown, ctx: RequestContext): Promise<Response> {
    const toolCalls = countToolCalls(body);
    const admitted = toolCalls === 0 ? undefined : calls.admit(ctx.principal ?? ANONYMOUS_PRINCIPAL, toolCalls);
    if (admitted !== undefined && 'refused' in admitted) {
      ctx.log.error_code = 'credential_calls';
      return toErrorResponse({ kind: 'too_many_calls', ...admitted.refused }, jsonRpcIdOf(body));
    }
    let response: Response;
    try {
      const isLegacy = isPlainLegacyMessage(req, body) || (await isLegacyRequest(webRequestOf(req), body));
      response = await (isLegacy ? legacy.handlePost(req, body, ctx) : modern.handlePost(req, body, ctx));
    } catch (err: unknown) {
      admitted?.release();
      throw err;
    }
    // The calls hold their slots until the answer has been sent (it streams while they run).
    if (admitted !== undefined) ctx.onSent(admitted.release);
    return response;
  }
}

/**
 * The common 2025-era message, recognized without the SDK's classifier (which validates the body against
 * four zod schemas, a measurable share of each request's cost): one plain JSON-RPC request or notification
 * whose params carry no `_meta` (so no 2026-07-28 envelope claim), sent with no protocol version header or
 * a 2025-era one. `isLegacyRequest` says "legacy" for every such message (test/unit/protocol/mcp-endpoint.test.ts);
 * anything else is left to it.
 */
export function isPlainLegacyMessage(req: IncomingRequest, body: unknown): boolean {
  const header = req.headers.get('mcp-protocol-version');
  if (header !== null && !HTTP_PROTOCOL_VERSIONS.includes(header)) return false;
  const message = readPlainMessage(body);
  return message !== undefined && (message.params === undefined || !('_meta' in message.params));
}

function countToolCalls(body: unknown): number {
  const isCall = (message: unknown): boolean => hasMethod(message, 'tools/call');
  return Array.isArray(body) ? body.filter(isCall).length : Number(isCall(body));
}
