/**
 * Failing cases the fuzz suite found (seeds 20260728, 1, 2, 3, 5), kept as explicit tests of the behaviour
 * docs/protocol.md and the status table (docs/platform-facts.md) promise. Each names the fuzz family and note it came
 * from. Each failed when it was found; the server was fixed, and these keep it so.
 */
import { connect } from 'node:net';

import { ACCEPT_BOTH } from '../support/http';
import { authed, messagesOf, openSession, rpc } from '../support/raw-session';
import { freshPostMcp, freshRequest } from '../support/reliability';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'fuzz-regression-token-0123456789abcdef';

let server: StartedServer;
let headers: Record<string, string>;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
  ({ headers } = await openSession(server.url, TOKEN));
});
afterAll(stopAllServers);

/** The JSON-RPC answer to a tools/call in the base session. */
async function callTool(
  name: string,
  args: Record<string, unknown>,
): Promise<{
  result?: { isError?: boolean; content?: Array<{ text?: string }> };
  error?: { code: number; message: string };
}> {
  const res = await freshPostMcp(server.url, rpc('tools/call', 7, { name, arguments: args }), headers);
  expect(res.status).toBe(200);
  return messagesOf(res).find((m) => m.id === 7) as never;
}

/** Invalid input is a tool error that names the problem (docs/protocol.md, "Results"), never the generic -32603. */
function expectRefusedByName(answer: Awaited<ReturnType<typeof callTool>>, named: RegExp): void {
  expect(answer.error).toBeUndefined();
  expect(answer.result?.isError).toBe(true);
  expect(answer.result?.content?.[0]?.text).toMatch(named);
}

const unexpectedFailures = (): unknown[] =>
  server
    .logs()
    .filter((l) => l.msg === 'tool failed unexpectedly')
    .map((l) => l.error);

describe('tool arguments that node:child_process refuses (fuzz: tool-args, utf8, huge)', () => {
  // Found as: [tool-args] run_command.command = "a\u0000b"; [utf8] escape \u0000 in run_command.
  // Now: JSON-RPC -32603 "Internal error in run_command", logged "tool failed unexpectedly" (spawn:
  // ERR_INVALID_ARG_VALUE).
  it('answers a command with a NUL byte with an isError result naming the NUL byte', async () => {
    expectRefusedByName(await callTool('run_command', { command: 'echo a\u0000b' }), /NUL|null (byte|character)|\\0/i);
  });

  // Found as: [tool-args] run_command.env = {"A":"\u0000"}. Now: -32603, "tool failed unexpectedly".
  it('answers an environment value with a NUL byte with an isError result naming the NUL byte', async () => {
    expectRefusedByName(
      await callTool('run_command', { command: 'true', env: { A: 'x\u0000y' } }),
      /NUL|null (byte|character)|\\0/i,
    );
  });

  // Found as: [huge] 140000-byte command. The schema allows 1,000,000 characters, but one argv string may hold at
  // most 128 KiB on Linux (MAX_ARG_STRLEN): spawn fails with E2BIG. Now: -32603, "tool failed unexpectedly".
  it('runs a 140 KB command, or refuses it by name; never the generic internal error', async () => {
    const answer = await callTool('run_command', { command: `: ${'x'.repeat(140_000)}`, timeout_ms: 5_000 });
    expect(answer.error).toBeUndefined();
    if (answer.result?.isError === true)
      expect(answer.result.content?.[0]?.text).toMatch(/long|size|limit|bytes|E2BIG/i);
  });

  it('logged none of the above as an unexpected failure', () => {
    expect(unexpectedFailures()).toEqual([]);
  });
});

describe('initialize sent again inside a session (fuzz: method "request initialize")', () => {
  // Found as: {"jsonrpc":"2.0","method":"initialize","id":91} in a session. Now: HTTP 200 with JSON-RPC -32603 whose
  // message is a raw zod issue dump. A valid second initialize gets 400 / -32600 "Server already initialized".
  it(
    'answers an initialize without params in an initialized session like any invalid request, not with -32603 and ' +
      'a schema dump',
    async () => {
      for (const params of [undefined, { level: 'debug' }, { protocolVersion: 5 }]) {
        const res = await freshPostMcp(server.url, rpc('initialize', 91, params), headers);
        const answer = messagesOf(res)[0] as { error?: { code: number; message: string } } | undefined;
        expect({ params, status: res.status, code: answer?.error?.code }).toEqual({
          params,
          status: expect.any(Number),
          code: expect.any(Number),
        });
        expect([200, 400]).toContain(res.status);
        expect([-32600, -32602]).toContain(answer?.error?.code);
        expect(answer?.error?.message).not.toMatch(/"code":\s*"invalid_type"/);
      }
    },
  );
});

describe('HTTP methods outside POST/DELETE/OPTIONS/GET (fuzz: http-method)', () => {
  // Found as: TRACE /mcp. Now: 400 {"error":"bad_request","message":"The request target is not a valid path."}, because
  // `new Request()` refuses TRACE (a forbidden method in the Fetch spec) and node-listener.ts reports every failure of
  // it as a bad path. A method the endpoint does not serve gets 405 with Allow (RFC 9110 §15.5.6).
  it('answers TRACE /mcp with 405 and an Allow header', async () => {
    const res = await freshRequest(server.url, { method: 'TRACE', headers: authed(TOKEN) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/POST/);
  });

  // Found as: CONNECT 127.0.0.1:<port>. Now: the connection is closed without any answer (node:http emits 'connect',
  // which the server does not handle, so Node destroys the socket).
  it('answers CONNECT with an HTTP status (405) instead of dropping the connection', async () => {
    const status = await new Promise<number>((resolve) => {
      const socket = connect(server.port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
      socket.on('error', () => undefined);
      socket.end(
        `CONNECT 127.0.0.1:${server.port} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ` +
          `${TOKEN}\r\n\r\n`,
      );
    });
    expect(status).toBe(405);
  });
});

describe('Accept media types in upper case (fuzz: headers "accept variant")', () => {
  // Found as: Accept: APPLICATION/JSON, TEXT/EVENT-STREAM. Now: 406 "Client must accept both application/json and
  // text/event-stream" (the SDK transport compares case-sensitively). Media types are case-insensitive (RFC 9110
  // §8.3.1),
  // and the server's own gate (json-body.ts) already accepts them.
  it('accepts a POST whose Accept lists both types in upper case', async () => {
    const res = await freshPostMcp(server.url, rpc('ping', 5), { ...headers, accept: ACCEPT_BOTH.toUpperCase() });
    expect(res.status).toBe(200);
  });
});
