/**
 * The early `initialize` answer must be the SDK's: it takes the shapes real clients send and writes the bytes the SDK
 * server writes; what it takes is never answered otherwise than the SDK answers it.
 */
import { isInitializeRequest, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

import { earlyInitializeResponse, readEarlyInitialize } from '../../functions/mcp/early-initialize';
import { createProtocolServer } from '../../functions/mcp/protocol/server-factory';
import { LEGACY_TASKS_CAPABILITY } from '../../functions/mcp/protocol/server-identity';
import { HTTP_PROTOCOL_VERSIONS, negotiateVersion } from '../../functions/mcp/protocol/versions';

type Json = Record<string, unknown>;

const base = (params: Json = {}, extra: Json = {}): Json => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'client', version: '1.0.0' },
    ...params,
  },
  ...extra,
});

/** What official and popular clients send (SDK v1 and v2 clients, with the capabilities hosts declare). */
const CLIENT_SHAPES: Json[] = [
  base(),
  base({ protocolVersion: '2025-06-18' }),
  base({ protocolVersion: '2025-03-26' }),
  base({ protocolVersion: '2024-11-05' }),
  base({ protocolVersion: '2099-01-01' }),
  base({ capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: {} } }),
  base({ capabilities: { elicitation: { form: {}, url: {} }, sampling: { tools: {}, context: {} } } }),
  base({ capabilities: { experimental: { feature: { on: true } }, extensions: { 'io.x/y': {} } } }),
  base({
    clientInfo: {
      name: 'claude-code',
      title: 'Claude Code',
      version: '2.1.0',
      websiteUrl: 'https://example.com',
      description: 'd',
    },
  }),
  base({}, { id: 'string-id' }),
  base({}, { id: 0 }),
  base({}, { id: -7 }),
  base({ someFutureField: { x: 1 } }),
  base({ capabilities: { someFutureCapability: 42 } }),
];

/** Every field set to every kind of value, plus structural breakage. */
function mutations(): unknown[] {
  const values: unknown[] = [null, 0, 1.5, -1, 'x', '', true, false, [], [1], {}, { a: 1 }, { a: {} }];
  const paths: string[][] = [
    ['jsonrpc'],
    ['id'],
    ['method'],
    ['params'],
    ['params', 'protocolVersion'],
    ['params', 'capabilities'],
    ['params', 'clientInfo'],
    ['params', '_meta'],
    ['params', 'capabilities', 'roots'],
    ['params', 'capabilities', 'roots', 'listChanged'],
    ['params', 'capabilities', 'sampling'],
    ['params', 'capabilities', 'sampling', 'context'],
    ['params', 'capabilities', 'sampling', 'tools'],
    ['params', 'capabilities', 'elicitation'],
    ['params', 'capabilities', 'elicitation', 'form'],
    ['params', 'capabilities', 'elicitation', 'url'],
    ['params', 'capabilities', 'elicitation', 'form', 'applyDefaults'],
    ['params', 'capabilities', 'experimental'],
    ['params', 'capabilities', 'experimental', 'x'],
    ['params', 'capabilities', 'extensions'],
    ['params', 'capabilities', 'extensions', 'x'],
    ['params', 'capabilities', 'tasks'],
    ['params', 'clientInfo', 'name'],
    ['params', 'clientInfo', 'version'],
    ['params', 'clientInfo', 'title'],
    ['params', 'clientInfo', 'websiteUrl'],
    ['params', 'clientInfo', 'description'],
    ['params', 'clientInfo', 'icons'],
    ['extra'],
  ];
  const out: unknown[] = [null, [], [base()], 'initialize', 1];
  for (const path of paths) {
    for (const value of [...values, undefined]) {
      const message = structuredClone(
        base({
          capabilities: { elicitation: { form: {} }, sampling: {}, roots: {}, experimental: {}, extensions: {} },
        }),
      );
      let node = message;
      for (const key of path.slice(0, -1)) node = node[key] as Json;
      const last = path[path.length - 1] as string;
      if (value === undefined) delete node[last];
      else node[last] = value;
      out.push(message);
    }
  }
  return out;
}

/** The SDK server's answer to `message`, as the `data:` line of its SSE response; with tasks as the core's says. */
async function sdkAnswer(message: unknown, tasks = false): Promise<string> {
  const server = createProtocolServer({
    tools: [],
    call: async () => ({ content: [] }),
    resources: { templates: [], list: async () => ({ resources: [] }), read: async () => ({ contents: [] }) },
    versions: HTTP_PROTOCOL_VERSIONS,
    ...(tasks && {
      tasks: { capabilities: LEGACY_TASKS_CAPABILITY, call: () => undefined, install: () => undefined },
    }),
  });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 'session' });
  await server.connect(transport);
  const request = new Request('http://localhost/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  });
  const text = await (await transport.handleRequest(request, { parsedBody: message })).text();
  await transport.close();
  const data = text.split('\n').find((line) => line.startsWith('data: '));
  if (data === undefined) throw new Error(`no data line in: ${text}`);
  return data.slice('data: '.length);
}

it('takes the initialize requests real clients send', () => {
  for (const message of CLIENT_SHAPES) expect(readEarlyInitialize(message)).toBeDefined();
});

it(
  'takes what the SDK accepts, and where it takes what the SDK would' +
    ' refuse, answers as for the same request made valid',
  async () => {
    // The early answer reads only the id and the version, and keeps nothing (the core never sees this message), so a
    // malformed optional member it does not check (a capability, a title) cannot change an answer or a later one.
    const cases = [...CLIENT_SHAPES, ...mutations()];
    let taken = 0;
    let takenThoughRefused = 0;
    for (const message of cases) {
      const request = readEarlyInitialize(message);
      if (request === undefined) {
        // Left to the core: only what lacks a member the answer needs or that the SDK requires.
        expect({ message, sdkAccepts: isInitializeRequest(message) && isAnswerable(message) }).toEqual({
          message,
          sdkAccepts: false,
        });
        continue;
      }
      taken += 1;
      if (isInitializeRequest(message)) continue;
      takenThoughRefused += 1;
      const valid = structuredClone(message) as Json;
      const params = valid.params as Json;
      params.capabilities = {};
      params.clientInfo = { name: 'client', version: '1.0.0' };
      expect(isInitializeRequest(valid)).toBe(true);
      expect(earlyInitializeResponse(request, false)).toBe(await sdkAnswer(valid));
    }
    // The mutations leave many valid requests and many refused ones: the check is exercised on every side.
    expect(taken).toBeGreaterThan(60);
    expect(takenThoughRefused).toBeGreaterThan(5);
    expect(cases.length - taken).toBeGreaterThan(40);
  },
);

/**
 * A JSON-RPC 2.0 envelope with only its standard members and a string or safe-integer id (the SDK's transport checks
 * these), and no `_meta` in params (which may claim the 2026-07-28 envelope: the core decides the lane).
 */
function isAnswerable(message: unknown): boolean {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return false;
  const keys = Object.keys(message);
  const id = (message as Json).id;
  const params = (message as Json).params;
  return (
    (message as Json).jsonrpc === '2.0' &&
    !(typeof params === 'object' && params !== null && '_meta' in params) &&
    keys.every((k) => ['jsonrpc', 'id', 'method', 'params'].includes(k)) &&
    (typeof id === 'string' || Number.isSafeInteger(id))
  );
}

it('leaves to the core what it cannot answer', () => {
  expect(readEarlyInitialize(base({ _meta: {} }))).toBeUndefined();
  expect(readEarlyInitialize(base({ protocolVersion: undefined }))).toBeUndefined();
  expect(readEarlyInitialize(base({ clientInfo: { name: 'c' } }))).toBeUndefined();
  expect(readEarlyInitialize(base({ capabilities: [] }))).toBeUndefined();
  expect(readEarlyInitialize(base({}, { id: 1.5 }))).toBeUndefined();
  expect(readEarlyInitialize(base({}, { extra: 1 }))).toBeUndefined();
  expect(readEarlyInitialize([base()])).toBeUndefined();
});

it('answers byte for byte what the SDK server answers, with tasks and without', async () => {
  for (const message of CLIENT_SHAPES) {
    const request = readEarlyInitialize(message);
    if (request === undefined) throw new Error('a client shape was not taken');
    expect(earlyInitializeResponse(request, false)).toBe(await sdkAnswer(message));
    expect(earlyInitializeResponse(request, true)).toBe(await sdkAnswer(message, true));
    expect(earlyInitializeResponse(request, true)).toContain('"tasks":{"list":{},"cancel":{}');
  }
});

it('negotiates like the SDK: a served version is echoed, any other gets the preferred one', () => {
  for (const version of HTTP_PROTOCOL_VERSIONS) expect(negotiateVersion(version)).toBe(version);
  expect(negotiateVersion('2024-11-05')).toBe(HTTP_PROTOCOL_VERSIONS[0]);
  expect(negotiateVersion('')).toBe(HTTP_PROTOCOL_VERSIONS[0]);
});
