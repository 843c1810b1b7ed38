/** Reads a JSON-RPC POST the way Streamable HTTP asks: Accept (406), Content-Type (415), size (413), JSON (400). */
import { isJsonContentType, readRequestBody } from '@modelcontextprotocol/server';

import type { RequestContext } from './context';
import { jsonRpcError, RPC } from './json-rpc-error';

export type JsonPost = { ok: true; body: unknown } | { ok: false; response: Response };

/** Checks the headers, reads at most `maxBytes` and parses the body; a refusal comes as a ready response. */
export async function readJsonPost(req: Request, maxBytes: number, ctx: RequestContext): Promise<JsonPost> {
  const accept = req.headers.get('accept') ?? '';
  if (!/application\/json/i.test(accept) || !/text\/event-stream/i.test(accept)) {
    return refuse(406, RPC.SERVER_ERROR, 'Not Acceptable: the Accept header must list application/json and text/event-stream');
  }
  if (!isJsonContentType(req.headers.get('content-type'))) {
    return refuse(415, RPC.SERVER_ERROR, 'Unsupported Media Type: send Content-Type: application/json');
  }
  const read = (await ctx.readBody?.()) ?? (await readRequestBody(req, maxBytes));
  if (read.tooLarge) {
    ctx.log.error_code = 'body_too_large';
    return refuse(413, RPC.SERVER_ERROR, `Payload Too Large: request bodies are limited to ${maxBytes} bytes (MCP_MAX_BODY_BYTES)`);
  }
  try {
    return { ok: true, body: JSON.parse(read.text) as unknown };
  } catch {
    return refuse(400, RPC.PARSE_ERROR, 'Parse error: the body is not valid JSON');
  }
}

function refuse(status: number, code: number, message: string): JsonPost {
  return { ok: false, response: jsonRpcError({ status, code, message }) };
}
