/** Reads a JSON-RPC POST past the gates (http/mcp-gates.ts checked its headers): size (413), JSON (400). */
import { readRequestBody } from '@modelcontextprotocol/server';

import type { IncomingRequest, RequestContext } from './context';
import { type HttpRefusal, toErrorResponse } from './refusals';

export type JsonPost = { ok: true; body: unknown } | { ok: false; response: Response };

/** What a request that carries no body reads as. */
const NO_BODY = { tooLarge: false, text: '' } as const;

/**
 * Reads at most `maxBytes` and parses the body; a refusal comes as a ready response. The body is the shell's
 * (`ctx.readBody`), or else a web `Request`'s own; a request with neither has none.
 */
export async function readJsonPost(req: IncomingRequest, maxBytes: number, ctx: RequestContext): Promise<JsonPost> {
  const read = (await ctx.readBody?.()) ?? (req instanceof Request ? await readRequestBody(req, maxBytes) : NO_BODY);
  if (read.tooLarge) {
    ctx.log.error_code = 'body_too_large';
    return refuse({ kind: 'body_too_large', maxBytes });
  }
  try {
    return { ok: true, body: JSON.parse(read.text) as unknown };
  } catch {
    return refuse({ kind: 'parse_error' });
  }
}

function refuse(refusal: HttpRefusal): JsonPost {
  return { ok: false, response: toErrorResponse(refusal) };
}
