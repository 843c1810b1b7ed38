/**
 * A request of a 2025 session served over its own exchange (protocol/legacy-exchange.ts) must be answered as the
 * SDK's stateless fallback answers it: the same status, headers and bytes, the same keep-alives while a call runs,
 * and the same aborted signal when the client goes away; the servers it borrows (`createServerSlots`) serve
 * one request at a time, each for its own binding, and one whose request was left is not used again.
 */
import {
  type CallToolResult,
  createMcpHandler,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
} from '@modelcontextprotocol/server';

import { webBodyOf } from '../../../functions/mcp/http/node-listener';
import { createServerSlots, exchangeableRequest, serveExchange } from '../../../functions/mcp/protocol/legacy-exchange';
import { createProtocolServer } from '../../../functions/mcp/protocol/server-factory';
import { HTTP_PROTOCOL_VERSIONS } from '../../../functions/mcp/protocol/versions';

const KEEP_ALIVE_MS = 20;

/** What the tool calls of these servers do, by tool name. */
const CALLS: Record<string, (args: unknown, ctx: ServerContext) => Promise<CallToolResult>> = {
  echo: async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }], structuredContent: { args } }),
  failing: async () => ({ content: [{ type: 'text', text: 'no' }], isError: true }),
  unknown: async () => {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Unknown tool: unknown.');
  },
  broken: async () => {
    throw new Error('plain failure');
  },
  odd: async () => ({ content: 'not a list' }) as unknown as CallToolResult,
  chatty: async (_args, ctx) => {
    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: 7, progress: 1 } });
    await ctx.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', data: 'hi' } });
    return { content: [{ type: 'text', text: 'done' }] };
  },
  slow: async () => {
    await new Promise((resolve) => setTimeout(resolve, KEEP_ALIVE_MS * 5));
    return { content: [{ type: 'text', text: 'late' }] };
  },
};

/** Signals of the calls that hang until the test lets them go. */
const hanging: AbortSignal[] = [];

/** Every server built for these tests, in order. */
const built: Array<ReturnType<typeof createProtocolServer>> = [];

function server(binding: () => string = () => 'none') {
  const made = createProtocolServer({
    tools: [{ name: 'echo', inputSchema: { type: 'object' } }],
    versions: HTTP_PROTOCOL_VERSIONS,
    call: (name, args, ctx) => {
      if (name === 'hang') {
        hanging.push(ctx.mcpReq.signal);
        return new Promise(() => undefined);
      }
      if (name === 'whose') return Promise.resolve({ content: [{ type: 'text', text: binding() }] });
      const call = CALLS[name];
      if (call === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `No ${name}`);
      return call(args, ctx);
    },
    resources: {
      templates: [{ name: 'files', uriTemplate: 'sandbox://session/{+path}' }],
      list: async () => ({ resources: [] }),
      read: async (uri) => ({ contents: [{ uri, text: 'x' }] }),
    },
  });
  built.push(made);
  return made;
}

const fallback = createMcpHandler(() => server(), {
  legacy: 'stateless',
  responseMode: 'sse',
  keepAliveMs: KEEP_ALIVE_MS,
});

function post(body: unknown, headers: Record<string, string> = {}): Request {
  return new Request('http://localhost/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...headers,
    },
  });
}

async function viaFallback(body: unknown, headers?: Record<string, string>): Promise<Response> {
  return fallback.fetch(post(body, headers), { parsedBody: body });
}

const newSlots = () => createServerSlots((binding: () => string) => server(binding), 4);
const slots = newSlots();

async function viaExchange(
  body: unknown,
  headers?: Record<string, string>,
  { binding = 'none', from = slots } = {},
): Promise<Response> {
  const req = post(body, headers);
  const message = exchangeableRequest(req, body, HTTP_PROTOCOL_VERSIONS);
  if (message === undefined) throw new Error(`not exchangeable: ${JSON.stringify(body)}`);
  return serveExchange(from, binding, message, KEEP_ALIVE_MS);
}

async function answer(res: Response) {
  return { status: res.status, headers: [...res.headers], body: await new Response(webBodyOf(res)).text() };
}

const call = (name: string, args?: unknown, id: string | number = 3) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: args === undefined ? { name } : { name, arguments: args },
});

const REQUESTS: Array<{ body: unknown; headers?: Record<string, string> }> = [
  { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
  { body: { jsonrpc: '2.0', id: 'x', method: 'ping' } },
  { body: call('echo', { a: [1, 'b'], n: null }) },
  { body: call('echo') },
  { body: call('echo', {}, 'string-id') },
  { body: call('failing', {}) },
  { body: call('unknown', {}) },
  { body: call('broken', {}) },
  { body: call('odd', {}) },
  { body: call('chatty', {}) },
  { body: { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { arguments: {} } } },
  { body: { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 5 } } },
  { body: { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: 'text' } } },
  { body: { jsonrpc: '2.0', id: 5, method: 'no/such/method' } },
  { body: { jsonrpc: '2.0', id: 6, method: 'resources/templates/list' } },
  { body: { jsonrpc: '2.0', id: 7, method: 'resources/list', params: {} } },
  { body: { jsonrpc: '2.0', id: 8, method: 'resources/read', params: { uri: 'sandbox://session/a' } } },
  { body: { jsonrpc: '2.0', id: 9, method: 'resources/read', params: { uri: 3 } } },
  { body: { jsonrpc: '2.0', id: 10, method: 'prompts/list' } },
  { body: call('echo', {}), headers: { 'mcp-protocol-version': '2025-03-26' } },
  { body: call('echo', {}), headers: { 'content-type': 'Application/JSON; charset=utf-8' } },
];

it('answers each request with the status, headers and bytes of the SDK stateless fallback', async () => {
  for (const { body, headers } of REQUESTS) {
    const sent = { sent: body, sentHeaders: headers };
    const expected = await answer(await viaFallback(body, headers));
    expect({ ...sent, ...(await answer(await viaExchange(body, headers))) }).toEqual({ ...sent, ...expected });
  }
});

it('sends keep-alives while a call runs, then its result, as the fallback does', async () => {
  const strip = (text: string) => text.replaceAll(': keepalive\n\n', '');
  const [expected, actual] = await Promise.all([
    viaFallback(call('slow', {})).then(answer),
    viaExchange(call('slow', {})).then(answer),
  ]);
  expect(actual.body).toContain(': keepalive\n\n');
  expect(expected.body).toContain(': keepalive\n\n');
  expect({ ...actual, body: strip(actual.body) }).toEqual({ ...expected, body: strip(expected.body) });
});

it("aborts the call's signal when the client goes away, as the fallback does", async () => {
  for (const serve of [viaFallback, viaExchange]) {
    hanging.length = 0;
    const res = await serve(call('hang', {}));
    await new Promise((resolve) => setImmediate(resolve));
    expect(hanging).toHaveLength(1);
    expect(hanging[0]?.aborted).toBe(false);
    await webBodyOf(res)?.cancel();
    await new Promise((resolve) => setImmediate(resolve));
    expect(hanging[0]?.aborted).toBe(true);
  }
});

it('lends a server to one request at a time, for its binding, and not again after a request it left', async () => {
  const from = newSlots();
  const whose = async (binding: string) =>
    answer(await viaExchange(call('whose', {}), undefined, { binding, from })).then(({ body }) => body);
  built.length = 0;
  expect(await whose('a')).toContain('"text":"a"');
  expect(await whose('b')).toContain('"text":"b"');
  expect(built).toHaveLength(1);
  // Two at once: two servers, each for its own request.
  const [c, d] = await Promise.all([whose('c'), whose('d')]);
  expect([c, d].map((text) => text.includes('"text":"c"') || text.includes('"text":"d"'))).toEqual([true, true]);
  expect(c).not.toBe(d);
  expect(built).toHaveLength(2);
  // A request left unanswered: its server is closed and the next request gets another.
  hanging.length = 0;
  const left = await viaExchange(call('hang', {}), undefined, { from });
  await new Promise((resolve) => setImmediate(resolve));
  const leftOn = built.at(-1);
  await webBodyOf(left)?.cancel();
  expect(hanging[0]?.aborted).toBe(true);
  expect(leftOn?.transport).toBeUndefined();
  expect(await whose('e')).toContain('"text":"e"');
  expect(await whose('f')).toContain('"text":"f"');
});

it('takes only plain requests the fallback would answer this way', () => {
  const exchangeable = (body: unknown, headers?: Record<string, string>) =>
    exchangeableRequest(post(body, headers), body, HTTP_PROTOCOL_VERSIONS) !== undefined;
  expect(exchangeable(call('echo', {}))).toBe(true);
  expect(exchangeable(call('echo', {}), { 'mcp-protocol-version': '2025-06-18' })).toBe(true);
  expect(exchangeable({ jsonrpc: '2.0', method: 'notifications/initialized' })).toBe(false);
  expect(exchangeable([call('echo', {})])).toBe(false);
  expect(exchangeable({ ...call('echo', {}), params: { name: 'echo', _meta: { progressToken: 1 } } })).toBe(false);
  expect(exchangeable(call('echo', {}), { 'mcp-protocol-version': '2026-07-28' })).toBe(false);
  expect(exchangeable(call('echo', {}), { 'mcp-protocol-version': '1999-01-01' })).toBe(false);
  expect(exchangeable(call('echo', {}), { 'content-type': 'application/json;a=1,b' })).toBe(false);
  expect(exchangeable({ ...call('echo', {}), extra: 1 })).toBe(false);
  expect(exchangeable({ jsonrpc: '2.0', id: 1.5, method: 'ping' })).toBe(false);
});
