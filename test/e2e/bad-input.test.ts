/** Bad input gets a clear error, and the server keeps serving afterwards. (The session cap and idle expiry:
 * test/core/session-table.test.ts.) */
import { connect } from 'node:net';

import { ACCEPT_BOTH, initializeBody, postMcp, request } from '../support/http';
import {
  authed,
  errorCodeOf,
  errorOf,
  expectServing,
  messagesOf,
  openSession,
  rawHttpStatus,
  rpc,
} from '../support/raw-session';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'bad-input-token-0123456789abcdef';
const MAX_BODY = 65_536;

afterAll(stopAllServers);

/**
 * POSTs a chunked body (no Content-Length) of `chunks` × 10 KB inside a JSON string; when `hold` is given,
 * the stream stalls after 70 KB until it settles. Resolves with the status, or with how fetch failed.
 */
async function postStreamed(
  url: string,
  headers: Record<string, string>,
  chunks: number,
  hold?: Promise<void>,
): Promise<number | string> {
  const encoder = new TextEncoder();
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'));
    },
    async pull(controller) {
      if (hold !== undefined && sent === 7) await hold;
      if (sent >= chunks) {
        controller.enqueue(encoder.encode('"}}'));
        controller.close();
        return;
      }
      sent += 1;
      controller.enqueue(encoder.encode('x'.repeat(10_000)));
    },
  });
  const init: RequestInit & { duplex: 'half' } = {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: ACCEPT_BOTH },
    body,
    duplex: 'half',
  };
  return request(url, init).then(
    (res) => res.status,
    (err: unknown) => `fetch failed: ${String((err as { cause?: { code?: unknown } }).cause?.code ?? err)}`,
  );
}

describe('malformed requests', () => {
  let server: StartedServer;
  let headers: Record<string, string>;
  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, MCP_MAX_BODY_BYTES: String(MAX_BODY) } });
    ({ headers } = await openSession(server.url, TOKEN));
  });
  afterEach(async () => {
    await expectServing(server.url, TOKEN);
  });

  it('answers a body that is not JSON with 400 and JSON-RPC parse error -32700', async () => {
    for (const h of [authed(TOKEN), headers]) {
      const res = await postMcp(server.url, '{"jsonrpc":"2.0","id":1,"method":', h);
      expect(res.status).toBe(400);
      expect(errorCodeOf(res)).toBe(-32700);
    }
  });

  const NOT_JSON_RPC = ['{"hello":1}', '[]', '42', '"x"', 'null', '[1,2]'];

  it.each(NOT_JSON_RPC)(
    'answers the JSON %s, which is no JSON-RPC message, with 400 and -32600 Invalid Request',
    async (body) => {
      const res = await postMcp(server.url, body, authed(TOKEN));
      expect(res.status).toBe(400);
      expect(errorCodeOf(res)).toBe(-32600);
    },
  );

  it('answers JSON that is no JSON-RPC message inside a session with 400 and -32600 Invalid Request too', async () => {
    const answers: Record<string, [number, number | undefined]> = {};
    for (const body of NOT_JSON_RPC) {
      const res = await postMcp(server.url, body, headers);
      answers[body] = [res.status, errorCodeOf(res)];
    }
    expect(answers).toEqual(Object.fromEntries(NOT_JSON_RPC.map((body) => [body, [400, -32600]])));
  });

  it('answers a body over MCP_MAX_BODY_BYTES with 413 when Content-Length announces it', async () => {
    const big = JSON.stringify(
      rpc('tools/call', 1, { name: 'write_file', arguments: { path: 'big.txt', content: 'x'.repeat(100_000) } }),
    );
    const res = await postMcp(server.url, big, headers);
    expect(res.status).toBe(413);
    expect(errorOf(res)?.message).toContain('MCP_MAX_BODY_BYTES');
  });

  it('answers a streamed body without Content-Length with 413 as soon as it passes MCP_MAX_BODY_BYTES', async () => {
    let release = (): void => undefined;
    const rest = new Promise<void>((resolve) => (release = resolve));
    const res = await postStreamed(server.url, headers, 10, rest).finally(release);
    expect(res).toBe(413);
  });

  it('lets a client that is still streaming a large body read the 413 instead of a reset connection', async () => {
    expect(await postStreamed(server.url, headers, 1_000)).toBe(413);
  });

  // Found by the fuzz ([huge], about 1 request in 30 on a 2-core machine): a client that sends its whole body at
  // once and asked for Connection: close got EPIPE instead of the 413, because the server closed the connection
  // with the body unread and the kernel reset it. Each round is one such client; the old server lost ~3 % of them.
  it(
    'answers every client that sends an oversized body at once and asked for Connection: close with a 413 it can ' +
      'read',
    async () => {
      const body = Buffer.from(JSON.stringify(rpc('ping', 9, { pad: 'x'.repeat(1_100_000) })));
      const head = [
        'POST /mcp HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        'Connection: close',
        'Content-Type: application/json',
        `Accept: ${ACCEPT_BOTH}`,
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
        `Content-Length: ${body.length}`,
      ].join('\r\n');
      const outcomes = new Map<string, number>();
      for (let round = 0; round < 150; round += 1) {
        const outcome = await new Promise<string>((resolve) => {
          const socket = connect(server.port, '127.0.0.1');
          let received = '';
          socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
          socket.on('error', (err: NodeJS.ErrnoException) =>
            resolve(received.startsWith('HTTP/1.1 ') ? received.slice(9, 12) : `error ${err.code ?? err.message}`),
          );
          socket.on('close', () => resolve(received.slice(9, 12)));
          socket.end(Buffer.concat([Buffer.from(`${head}\r\n\r\n`), body]));
        });
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
      expect(Object.fromEntries(outcomes)).toEqual({ '413': 150 });
    },
  );

  it('answers a request with two Host headers with 400 (RFC 9112 §3.2), in a session too', async () => {
    const lines = (extra: string[]): string =>
      [
        'POST /mcp HTTP/1.1',
        'Host: 127.0.0.1',
        'Host: evil.example',
        'Content-Type: application/json',
        `Accept: ${ACCEPT_BOTH}`,
        `Authorization: Bearer ${TOKEN}`,
        ...extra,
      ].join('\r\n');
    expect(await rawHttpStatus(server.url, lines([]), JSON.stringify(initializeBody()))).toBe(400);
    const inSession = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}`)
      .filter((line) => !line.startsWith('authorization'));
    expect(await rawHttpStatus(server.url, lines(inSession), JSON.stringify(rpc('tools/list')))).toBe(400);
  });

  it('answers Content-Type text/plain with 415', async () => {
    const res = await postMcp(server.url, rpc('ping'), { ...headers, 'content-type': 'text/plain' });
    expect(res.status).toBe(415);
  });

  it('answers a call of an unknown tool with JSON-RPC error -32602, not a crash', async () => {
    const res = await postMcp(server.url, rpc('tools/call', 5, { name: 'no_such_tool', arguments: {} }), headers);
    expect(res.status).toBe(200);
    expect(messagesOf(res)[0]).toMatchObject({ id: 5, error: { code: -32602 } });
    expect(errorOf(res)?.message).toContain('no_such_tool');
  });

  // Spec 2025-11-25 (SEP-1303): invalid arguments are tool execution errors, which the model can act on.
  const toolErrorText = (res: Awaited<ReturnType<typeof postMcp>>): string => {
    const result = messagesOf(res)[0]?.result as { isError?: boolean; content?: Array<{ text?: string }> } | undefined;
    expect(result?.isError).toBe(true);
    return result?.content?.[0]?.text ?? '';
  };

  it('answers an argument the schema does not declare with an isError result naming it', async () => {
    const res = await postMcp(
      server.url,
      rpc('tools/call', 6, { name: 'run_command', arguments: { command: 'true', colour: 'blue' } }),
      headers,
    );
    expect(res.status).toBe(200);
    expect(toolErrorText(res)).toMatch(/Invalid arguments for run_command.*colour/s);
  });

  it('answers an argument of the wrong type, or a missing one, with an isError result naming it', async () => {
    const wrong = await postMcp(
      server.url,
      rpc('tools/call', 7, { name: 'run_command', arguments: { command: 42 } }),
      headers,
    );
    expect(toolErrorText(wrong)).toMatch(/Invalid arguments for run_command.*command/s);
    const missing = await postMcp(server.url, rpc('tools/call', 8, { name: 'run_code', arguments: {} }), headers);
    expect(toolErrorText(missing)).toMatch(/Invalid arguments for run_code.*code/s);
  });

  it('answers an initialize inside a batch with 400 and opens no session', async () => {
    const res = await postMcp(server.url, [initializeBody(), rpc('ping', 2)], authed(TOKEN));
    expect(res.status).toBe(400);
    expect(errorCodeOf(res)).toBe(-32600);
    expect(res.headers.get('mcp-session-id')).toBeNull();
  });
});
