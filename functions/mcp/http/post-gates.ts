/**
 * The header gates of a POST to `/mcp`, as plain functions: the early path (a cold instance's `initialize`,
 * protocol/early-listener.ts) and the core (http/json-body.ts) both use these, so that they refuse alike. Host,
 * Origin and the token are the same kind of function, in http/origin.ts and http/auth.ts; the body's size limit is
 * `readBody` in http/node-listener.ts.
 */

/** Streamable HTTP: the client must accept both JSON and an event stream (else 406). Media types are
 * case-insensitive. */
export function acceptsMcpAnswers(accept: string | null | undefined): boolean {
  return accept != null && /application\/json/i.test(accept) && /text\/event-stream/i.test(accept);
}

/**
 * The body must be `application/json` (else 415): the media type before any parameters, case-insensitive,
 * parameters (`charset=utf-8`) ignored; a list of types is not one type.
 */
export function isJsonContentType(contentType: string | null | undefined): boolean {
  if (contentType == null) return false;
  const semicolon = contentType.indexOf(';');
  const essence = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return essence === 'application/json';
}
