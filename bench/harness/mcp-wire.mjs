// Streamable HTTP (2025 era) spoken by hand, for setup and load: the load generator must not carry a full
// client's cost, and the same bytes go to every server.
import { Agent, request } from 'undici';

/** The protocol version every server here is asked for. */
export const PROTOCOL_VERSION = '2025-11-25';

/** One keep-alive agent for setup requests (sessions, sandboxes). */
export const SETUP_AGENT = new Agent({ connections: 64, keepAliveTimeout: 30_000 });

/** Request headers of a JSON-RPC POST, in session `sessionId` when given. */
export function mcpHeaders(sessionId) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
  };
  if (sessionId !== undefined) headers['mcp-session-id'] = sessionId;
  return headers;
}

/** The body of a `tools/call` request. */
export function toolCallBody(id, name, args = {}, meta) {
  const params = meta === undefined ? { name, arguments: args } : { name, arguments: args, _meta: meta };
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params });
}

/** The body of an `initialize` request. */
export function initializeBody(id = 0) {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'mcp-bench', version: '1.0.0' },
    },
  });
}

/** The JSON-RPC response in a body that is either one JSON object or an SSE stream. */
export function parseRpcResponse(text) {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed);
  const messages = trimmed
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)));
  const response = messages.find((m) => 'result' in m || 'error' in m);
  if (response === undefined) throw new Error(`no JSON-RPC response in: ${text.slice(0, 200)}`);
  return response;
}

/** POSTs one JSON-RPC message; resolves with `{ status, headers, text }`. */
export async function postRpc(url, body, sessionId, dispatcher = SETUP_AGENT) {
  const res = await request(url, { method: 'POST', headers: mcpHeaders(sessionId), body, dispatcher });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

/**
 * Opens a session as a client does (`initialize`, then `notifications/initialized`); resolves with the
 * session id, or `undefined` from a stateless server.
 */
export async function openSession(url, dispatcher = SETUP_AGENT) {
  const init = await postRpc(url, initializeBody(), undefined, dispatcher);
  if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${init.text.slice(0, 300)}`);
  parseRpcResponse(init.text);
  const sessionId = init.headers['mcp-session-id'];
  const notice = await postRpc(
    url,
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    sessionId,
    dispatcher,
  );
  if (notice.status !== 202 && notice.status !== 200)
    throw new Error(`notifications/initialized answered ${notice.status}`);
  return typeof sessionId === 'string' ? sessionId : undefined;
}

/** Ends a session as a client does (`DELETE` with its id); throws unless the server answers 2xx. */
export async function closeSession(url, sessionId, dispatcher = SETUP_AGENT) {
  const res = await request(url, { method: 'DELETE', headers: mcpHeaders(sessionId), dispatcher });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode > 299)
    throw new Error(`DELETE of a session answered ${res.statusCode}: ${text.slice(0, 300)}`);
}

/** Calls a tool and resolves with its result; throws on an HTTP or JSON-RPC error or an `isError` result. */
export async function callTool(url, sessionId, name, args = {}, dispatcher = SETUP_AGENT) {
  const res = await postRpc(url, toolCallBody(1, name, args), sessionId, dispatcher);
  if (res.status !== 200) throw new Error(`tools/call ${name} answered ${res.status}: ${res.text.slice(0, 300)}`);
  const message = parseRpcResponse(res.text);
  if (message.error !== undefined) throw new Error(`tools/call ${name}: ${JSON.stringify(message.error)}`);
  if (message.result.isError === true)
    throw new Error(`tools/call ${name} isError: ${JSON.stringify(message.result.content)}`);
  return message.result;
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` at once; resolves with the results in order. */
export async function runPool(count, concurrency, task) {
  const results = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}
