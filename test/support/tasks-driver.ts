/**
 * What the MCP tasks suites share: test/support/tasks-client.mjs (the official v2 client with the official Tasks
 * package) run for one step in a process of its own, so that the client goes away after it; results compared less
 * what differs from run to run; and raw JSON-RPC in each revision's words.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

import { postMcp, type RawResponse } from './http';
import { messagesOf, openSession, rpc } from './raw-session';
import type { StartedServer } from './server';

const DRIVER = resolve(__dirname, 'tasks-client.mjs');
const MODERN = '2026-07-28';
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

// biome-ignore lint/suspicious/noExplicitAny: the driver prints JSON of several shapes.
export type DriverOutput = any;

/** One client process: connects, does `plan.op`, goes away; what it printed. A client that threw throws here. */
export async function runTasksClient(plan: Record<string, unknown>, timeoutMs = 240_000): Promise<DriverOutput> {
  const { stdout } = await promisify(execFile)(process.execPath, [DRIVER, JSON.stringify(plan)], {
    timeout: timeoutMs,
    encoding: 'utf8',
  });
  const out = JSON.parse(stdout.trim().split('\n').at(-1) as string);
  // Said here, rather than as a missing field in a later assertion.
  if (out.error !== undefined) throw new Error(`the client's ${String(plan.op)} failed: ${JSON.stringify(out.error)}`);
  return out;
}

/**
 * What a run_command result says, less what differs from run to run: its duration, and its sandbox's handle (a
 * 2026-07-28 result names it in structuredContent and in its text, a new sandbox's for each call without one).
 */
export function comparableResult(result: DriverOutput) {
  const { duration_ms: _ms, sandbox, ...structured } = result.structuredContent;
  const text: string = result.content.map((c: DriverOutput) => c.text).join('\n');
  return {
    structured,
    text: typeof sandbox === 'string' ? text.replaceAll(sandbox, '<sandbox>') : text,
    isError: result.isError ?? false,
  };
}

/** A 2026-07-28 request, with the tasks extension named in its client capabilities unless `declare` is false. */
export function modernPost(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
  declare = true,
) {
  const name = method === 'tools/call' ? params.name : params.taskId;
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'tasks-raw', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': declare ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  };
  return postMcp(url, rpc(method, 1, { ...params, _meta: meta }), {
    authorization: `Bearer ${token}`,
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(typeof name === 'string' && { 'mcp-name': name }),
  });
}

/** The result of an answer's response (a notification may come before it, as `tasks/result`'s status does). */
export const resultOf = (res: RawResponse): DriverOutput =>
  (messagesOf(res).find((m) => 'result' in m || 'error' in m) as { result?: unknown } | undefined)?.result;

/** A 2025 session on `server` for `token`, and a JSON-RPC call inside it. */
export async function legacySession(server: StartedServer, token: string) {
  const { headers } = await openSession(server.url, token);
  let id = 10;
  return (method: string, params?: Record<string, unknown>) => postMcp(server.url, rpc(method, id++, params), headers);
}
