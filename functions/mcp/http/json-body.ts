/** Reads a JSON-RPC POST the way Streamable HTTP asks: Accept (406), Content-Type (415), size (413), JSON (400). */
import { readRequestBody } from '@modelcontextprotocol/server';

import type { RequestContext } from './context';
import { acceptsMcpAnswers, isJsonContentType } from './post-gates';
import { type HttpRefusal, toErrorResponse } from './refusals';

export type JsonPost = { ok: true; body: unknown } | { ok: false; response: Response };

/** Checks the headers, reads at most `maxBytes` and parses the body; a refusal comes as a ready response. */
export async function readJsonPost(req: Request, maxBytes: number, ctx: RequestContext): Promise<JsonPost> {
  if (!acceptsMcpAnswers(req.headers.get('accept'))) {
    return refuse({ kind: 'not_acceptable' });
  }
  if (!isJsonContentType(req.headers.get('content-type'))) {
    return refuse({ kind: 'unsupported_media_type' });
  }
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
