/** Reads a JSON-RPC POST past the gates (http/mcp-gates.ts checked its headers): size (413), JSON (400). */
import { readRequestBody } from '@modelcontextprotocol/server';

import type { RequestContext } from './context';
import { type HttpRefusal, toErrorResponse } from './refusals';

export type JsonPost = { ok: true; body: unknown } | { ok: false; response: Response };

/** Reads at most `maxBytes` and parses the body; a refusal comes as a ready response. */
export async function readJsonPost(req: Request, maxBytes: number, ctx: RequestContext): Promise<JsonPost> {
  const read = (await ctx.readBody?.()) ?? (await readRequestBody(req, maxBytes));
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
