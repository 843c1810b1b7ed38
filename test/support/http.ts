/** Raw HTTP helpers for the status-table and bad-input suites. */

export const ACCEPT_BOTH = 'application/json, text/event-stream';

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The JSON body, or the first `data:` of an SSE body, parsed; `undefined` when neither. */
  json: unknown;
}

/** Sends a request and reads the whole answer (SSE bodies included, which end after the response). */
export async function request(
  url: string,
  init: RequestInit = {},
  fetchImpl: ClientFetch = fetch,
): Promise<RawResponse> {
  return readAnswer(await fetchImpl(url, init));
}

/** Reads a whole answer (SSE bodies included, which end after the response). */
async function readAnswer(res: Response): Promise<RawResponse> {
  const text = await res.text();
  let json: unknown;
  const type = res.headers.get('content-type') ?? '';
  try {
    if (type.includes('text/event-stream')) {
      const data = text.split('\n').find((line) => line.startsWith('data: '));
      json = data === undefined ? undefined : JSON.parse(data.slice(6));
    } else if (text.length > 0) {
      json = JSON.parse(text);
    }
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** POSTs a JSON-RPC body to /mcp with the right headers (override any with `headers`), through `fetchImpl`. */
export function postMcp(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  fetchImpl: ClientFetch = fetch,
): Promise<RawResponse> {
  return request(
    url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    },
    fetchImpl,
  );
}

/** An `initialize` request body. */
export function initializeBody(protocolVersion: string | undefined = '2025-11-25', id: number | string = 1): unknown {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      ...(protocolVersion !== undefined && { protocolVersion }),
      capabilities: {},
      clientInfo: { name: 'raw-test', version: '1.0.0' },
    },
  };
}

/** Initializes a session over raw HTTP; returns its id and the negotiated version. */
export async function openRawSession(
  url: string,
  headers: Record<string, string> = {},
  protocolVersion = '2025-11-25',
): Promise<{ sessionId: string; version: string }> {
  const res = await postMcp(url, initializeBody(protocolVersion), headers);
  const sessionId = res.headers.get('mcp-session-id');
  if (res.status !== 200 || sessionId === null) throw new Error(`initialize failed: ${res.status} ${res.text}`);
  const version = (res.json as { result: { protocolVersion: string } }).result.protocolVersion;
  await postMcp(
    url,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': version },
  );
  return { sessionId, version };
}

/** The fetch the official clients' transports call (their `fetch` option). */
export type ClientFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/** A fetch for the official clients that also shows the test every tools/call answer's body. */
export interface ToolCallTee {
  fetch: ClientFetch;
  /** One per tools/call answer, in order: its text so far, growing as the stream flows. */
  readonly texts: string[];
  /** One per tools/call answer, in order: its whole text, once its stream has ended. */
  readonly bodies: Array<Promise<string>>;
}

/** Creates a tee over `fetchImpl` (the global fetch by default). */
export function teeToolCallBodies(fetchImpl: ClientFetch = fetch): ToolCallTee {
  const texts: string[] = [];
  const bodies: Array<Promise<string>> = [];
  return {
    texts,
    bodies,
    async fetch(input, init) {
      const res = await fetchImpl(input, init);
      if (typeof init?.body !== 'string' || !init.body.includes('"tools/call"') || res.body === null) return res;
      const [forClient, forTest] = res.body.tee();
      const index = texts.push('') - 1;
      bodies.push(
        (async () => {
          const decoder = new TextDecoder();
          for await (const chunk of forTest) texts[index] += decoder.decode(chunk, { stream: true });
          return texts[index] ?? '';
        })(),
      );
      return new Response(forClient, { status: res.status, headers: res.headers });
    },
  };
}
