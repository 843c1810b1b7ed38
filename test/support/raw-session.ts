/** Raw-HTTP helpers shared by the status-table, auth-origin and bad-input suites. */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';

import { openRawSession, postMcp, type RawResponse } from './http';
import { SETTLE_MS } from './processes';
import type { StartedServer } from './server';

/** Headers for an authenticated request, optionally inside a session. */
export function authed(token: string | undefined, sessionId?: string, version = '2025-11-25'): Record<string, string> {
  return {
    ...(token !== undefined && { authorization: `Bearer ${token}` }),
    ...(sessionId !== undefined && { 'mcp-session-id': sessionId, 'mcp-protocol-version': version }),
  };
}

/** A JSON-RPC request body. */
export function rpc(
  method: string,
  id: number | string = 1,
  params?: Record<string, unknown>,
): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method, ...(params !== undefined && { params }) };
}

/** Opens a session with `token` and returns its id, the negotiated version and headers for later requests. */
export async function openSession(
  url: string,
  token: string | undefined,
  version = '2025-11-25',
): Promise<{ sessionId: string; version: string; headers: Record<string, string> }> {
  const opened = await openRawSession(url, authed(token), version);
  return { ...opened, headers: authed(token, opened.sessionId, opened.version) };
}

/** Every JSON-RPC message of an answer: all SSE `data:` lines, a JSON array's items, or the one JSON object. */
export function messagesOf(res: RawResponse): Array<Record<string, unknown>> {
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    return res.text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
  }
  if (Array.isArray(res.json)) return res.json as Array<Record<string, unknown>>;
  return res.json === undefined ? [] : [res.json as Record<string, unknown>];
}

/** The JSON-RPC error of an answer's first message, if any. */
export function errorOf(res: RawResponse): { code: number; message: string } | undefined {
  return (messagesOf(res)[0] as { error?: { code: number; message: string } } | undefined)?.error;
}

/** The JSON-RPC error code of an answer's first message, if any. */
export function errorCodeOf(res: RawResponse): number | undefined {
  return errorOf(res)?.code;
}

/** Proves the server still serves: a fresh session lists the tools. */
export async function expectServing(url: string, token: string | undefined): Promise<void> {
  const { headers } = await openSession(url, token);
  const res = await postMcp(url, rpc('tools/list', 77), headers);
  expect(res.status).toBe(200);
  const tools = (messagesOf(res)[0] as { result?: { tools?: Array<{ name: string }> } }).result?.tools ?? [];
  expect(tools.map((t) => t.name)).toContain('run_command');
}

export interface NodeHttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * A request through `node:http`, which (unlike fetch) lets a test set the `Host` header, so that
 * DNS-rebinding checks can be exercised while still connecting to 127.0.0.1.
 */
export function nodeHttp(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<NodeHttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Resolves once the server's JSON log holds lines matching `predicate` (or rejects after `timeoutMs`). */
export function waitForLogs(
  server: StartedServer,
  predicate: (logs: Array<Record<string, unknown>>) => boolean,
  timeoutMs = SETTLE_MS,
): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const stdout = server.child.stdout;
    const check = (): boolean => {
      const logs = server.logs();
      if (!predicate(logs)) return false;
      clearTimeout(timer);
      stdout?.off('data', check);
      resolve(logs);
      return true;
    };
    const timer = setTimeout(() => {
      stdout?.off('data', check);
      reject(new Error(`log lines did not appear within ${timeoutMs} ms:\n${server.stdout()}`));
    }, timeoutMs);
    if (!check()) stdout?.on('data', check);
  });
}

/** Sends `head` (request line and header lines, CRLF-separated, no blank line) and `body` over a raw socket; resolves
 * with the status code. */
export function rawHttpStatus(url: string, head: string, body = ''): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.end(`${head}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}
