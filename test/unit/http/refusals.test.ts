/** The one table from refusal to wire (functions/mcp/http/refusals.ts): status, body, headers, Retry-After. */
import { type HttpRefusal, toErrorAnswer, toErrorResponse } from '../../../functions/mcp/http/refusals';

const rpcBody = (code: number, message: string, id: string | number | null = null): string =>
  JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id });

describe('JSON-RPC refusals', () => {
  it.each<[HttpRefusal, number, number, string]>([
    [{ kind: 'host_not_allowed' }, 403, -32000, 'Forbidden: this Host is not allowed (MCP_ALLOWED_HOSTS)'],
    [{ kind: 'origin_not_allowed' }, 403, -32000, 'Forbidden: this Origin is not allowed (MCP_ALLOWED_ORIGINS)'],
    [
      { kind: 'mcp_method_not_allowed', method: 'GET' },
      405,
      -32000,
      'Method not allowed: GET /mcp; use POST (and DELETE to end a session)',
    ],
    [
      { kind: 'not_acceptable' },
      406,
      -32000,
      'Not Acceptable: the Accept header must list application/json and text/event-stream',
    ],
    [{ kind: 'unsupported_media_type' }, 415, -32000, 'Unsupported Media Type: send Content-Type: application/json'],
    [
      { kind: 'body_too_large', maxBytes: 1024 },
      413,
      -32000,
      'Payload Too Large: request bodies are limited to 1024 bytes (MCP_MAX_BODY_BYTES)',
    ],
    [{ kind: 'parse_error' }, 400, -32700, 'Parse error: the body is not valid JSON'],
    [
      { kind: 'session_not_found' },
      404,
      -32001,
      'Session not found: it expired, was deleted, or was never issued to this credential. Send initialize to ' +
        'start a new session.',
    ],
    [
      { kind: 'session_id_required' },
      400,
      -32000,
      'Bad Request: the Mcp-Session-Id header is required; send initialize first to start a session',
    ],
    [
      { kind: 'not_json_rpc' },
      400,
      -32600,
      'Invalid Request: the body is not a JSON-RPC 2.0 message (or a batch of them)',
    ],
    [
      { kind: 'initialize_params' },
      400,
      -32602,
      'Invalid params: initialize needs params.protocolVersion, params.capabilities and params.clientInfo {name, ' +
        'version}',
    ],
    [
      { kind: 'batch_not_allowed', allowed: '2025-03-26', version: '2025-11-25' },
      400,
      -32600,
      'Invalid Request: JSON-RPC batches are only allowed with protocol version 2025-03-26; this session uses ' +
        '2025-11-25',
    ],
    [
      { kind: 'batch_not_allowed', allowed: '2025-03-26', version: undefined },
      400,
      -32600,
      'Invalid Request: JSON-RPC batches are only allowed with protocol version 2025-03-26; this session uses an ' +
        'unknown version',
    ],
    [{ kind: 'client_gone' }, 400, -32600, 'The client went away'],
    [{ kind: 'internal' }, 500, -32603, 'Internal server error'],
  ])('answers %j with its status, JSON-RPC code and message', (refusal, status, code, message) => {
    const answer = toErrorAnswer(refusal);
    expect(answer).toEqual({
      status,
      headers: expect.objectContaining({ 'content-type': 'application/json' }),
      body: rpcBody(code, message),
    });
  });

  it('echoes the id of the request it refuses', () => {
    expect(toErrorAnswer({ kind: 'already_initialized' }, 'req-7').body).toBe(
      rpcBody(
        -32600,
        'Invalid Request: this session is already initialized; to start a new one, send initialize without ' +
          'Mcp-Session-Id',
        'req-7',
      ),
    );
    expect(JSON.parse(toErrorAnswer({ kind: 'line_not_json_rpc' }, 7).body)).toMatchObject({
      id: 7,
      error: { code: -32600 },
    });
  });

  it('challenges a missing or wrong token with WWW-Authenticate, naming the error only for a wrong one', () => {
    const missing = toErrorAnswer({ kind: 'unauthorized', reason: 'missing' });
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="mcp"');
    expect(JSON.parse(missing.body)).toMatchObject({
      error: { code: -32000, message: expect.stringContaining('MCP_AUTH_TOKENS') },
    });
    const invalid = toErrorAnswer({ kind: 'unauthorized', reason: 'invalid' });
    expect(invalid.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(JSON.parse(invalid.body)).toMatchObject({
      error: { message: 'Unauthorized: the bearer token is not valid for this server' },
    });
  });
});

describe('Retry-After', () => {
  it('is sent, in seconds, with every refusal that says when to retry', () => {
    const room = toErrorAnswer(
      { kind: 'no_room', status: 503, message: 'Server at capacity. Retry in 30 s.', retryAfterS: 30 },
      3,
    );
    expect(room).toEqual({
      status: 503,
      headers: { 'content-type': 'application/json', 'retry-after': '30' },
      body: rpcBody(-32000, 'Server at capacity. Retry in 30 s.', 3),
    });
    const calls = toErrorAnswer({ kind: 'too_many_calls', running: 2, max: 2, retryAfterS: 1 });
    expect(calls.status).toBe(429);
    expect(calls.headers['retry-after']).toBe('1');
    expect(JSON.parse(calls.body)).toMatchObject({
      error: {
        code: -32000,
        message:
          'Too many tool calls at once: this credential has 2 running (MCP_MAX_CALLS_PER_CREDENTIAL=2). Retry in ' +
          '1 s, once one has finished.',
      },
    });
  });

  it('is not sent with a refusal that has no retry time', () => {
    for (const refusal of [
      { kind: 'internal' },
      { kind: 'session_not_found' },
      { kind: 'no_route', path: '/x' },
    ] as const) {
      expect(toErrorAnswer(refusal).headers['retry-after']).toBeUndefined();
    }
  });

  it('reaches the web Response', () => {
    const res = toErrorResponse({ kind: 'no_room', status: 429, message: 'full', retryAfterS: 30 });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('30');
  });
});

describe('plain refusals (routes other than /mcp, and the Node shell)', () => {
  it.each<[HttpRefusal, number, string, Record<string, string>]>([
    [
      { kind: 'no_route', path: '/nope' },
      404,
      '{"error":"not_found","message":"No route for /nope; the MCP endpoint is /mcp"}',
      {},
    ],
    [
      { kind: 'route_method_not_allowed', allow: 'GET' },
      405,
      '{"error":"method_not_allowed","message":"Use GET"}',
      { allow: 'GET' },
    ],
    [
      { kind: 'method_unsupported', allow: 'POST, DELETE, OPTIONS' },
      405,
      '{"error":"method_not_allowed","message":"Use POST (and DELETE to end a session)"}',
      { allow: 'POST, DELETE, OPTIONS' },
    ],
    [
      { kind: 'duplicate_host' },
      400,
      '{"error":"bad_request","message":"The request carries more than one Host header."}',
      {},
    ],
    [{ kind: 'bad_target' }, 400, '{"error":"bad_request","message":"The request target is not a valid path."}', {}],
    [{ kind: 'internal_plain' }, 500, '{"error":"internal_error","message":"Internal server error"}', {}],
  ])('answers %j with its status, body and headers', (refusal, status, body, headers) => {
    expect(toErrorAnswer(refusal)).toEqual({
      status,
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
  });

  it('tells OAuth clients, in error_description too, to send a bearer token', async () => {
    const res = toErrorResponse({ kind: 'no_oauth' });
    expect(res.status).toBe(404);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, string>;
    expect(Object.keys(body)).toEqual(['error', 'error_description', 'message']);
    expect(body).toMatchObject({ error: 'not_found', error_description: body.message });
    expect(body.message).toContain('Authorization: Bearer <token>');
  });
});
