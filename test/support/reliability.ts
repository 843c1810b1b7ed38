/**
 * Shared helpers of the reliability suites (load, fuzz, faults): a concurrency limiter, the server's
 * process tree read from /proc, crash lines in the server's log, and a tool call over raw HTTP that
 * classifies its outcome.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';

import { ACCEPT_BOTH, type RawResponse } from './http';
import type { HostProcess } from './processes';
import { messagesOf, rpc } from './raw-session';
import type { StartedServer } from './server';

/** Runs at most `limit` of the queued tasks at once. */
export function createLimiter(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    active -= 1;
    waiting.shift()?.();
  };
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
    try {
      return await task();
    } finally {
      release();
    }
  };
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

interface ProcStat {
  pid: number;
  ppid: number;
  state: string;
}

/** pid, ppid and state of every process, from /proc/<pid>/stat (the command name may hold spaces and parentheses). */
function readStats(): ProcStat[] {
  const stats: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readOrEmpty(`/proc/${name}/stat`);
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const [state = '', ppid = '0'] = stat.slice(close + 2).split(' ');
    stats.push({ pid: Number(name), ppid: Number(ppid), state });
  }
  return stats;
}

/** Every live (non-zombie) descendant of `rootPid`, through the ppid tree. Processes that left the tree (reparented to
 * init) are not found. */
export function descendantsOf(rootPid: number): HostProcess[] {
  const stats = readStats();
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const found: HostProcess[] = [];
  const queue = [...(children.get(rootPid) ?? [])];
  while (queue.length > 0) {
    const next = queue.shift() as ProcStat;
    queue.push(...(children.get(next.pid) ?? []));
    if (next.state === 'Z') continue;
    const argv = readOrEmpty(`/proc/${next.pid}/cmdline`)
      .split('\0')
      .filter((a) => a !== '');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readOrEmpty(`/proc/${next.pid}/status`))?.[1] ?? -1);
    found.push({ pid: next.pid, uid, argv, cmdline: argv.join(' ') });
  }
  return found;
}

/** The server's log lines that report a crash the crash guard caught, or an unexpected failure. */
export function crashLines(server: StartedServer): Array<Record<string, unknown>> {
  return server
    .logs()
    .filter((line) =>
      [
        'uncaught exception',
        'unhandled rejection',
        'unhandled error',
        'tool failed unexpectedly',
        'response failed',
      ].includes(String(line.msg)),
    );
}

/** GET /health, parsed. */
export async function health(server: StartedServer): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.origin}/health`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** What a tool call over raw HTTP came back with. */
export interface CallOutcome {
  /** HTTP status. */
  status: number;
  /** The JSON-RPC result, when there was one. */
  result?: {
    content?: Array<{ type: string; text?: string }>;
    structuredContent?: Record<string, unknown>;
    isError?: boolean;
  };
  /** The JSON-RPC error, when there was one. */
  error?: { code: number; message: string };
  /** Why this is not a clean success, or `undefined` when it is. */
  problem?: string;
  raw: RawResponse;
}

/**
 * A request over its own connection (node:http, no agent, no keep-alive): under heavy load a reused
 * keep-alive socket can race the server's keep-alive timeout ("other side closed"), a client-side
 * artefact that would hide real failures.
 */
export function freshRequest(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        let json: unknown;
        try {
          if ((headers.get('content-type') ?? '').includes('text/event-stream')) {
            const data = text.split('\n').find((line) => line.startsWith('data: '));
            json = data === undefined ? undefined : JSON.parse(data.slice(6));
          } else if (text.length > 0) json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** POSTs a JSON-RPC body to /mcp over its own connection. */
export function freshPostMcp(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return freshRequest(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

let nextId = 1;

/** POSTs `tools/call` with session `headers` and classifies the answer (non-2xx, JSON-RPC error, isError). */
export async function callToolRaw(
  url: string,
  headers: Record<string, string>,
  name: string,
  args: Record<string, unknown>,
): Promise<CallOutcome> {
  const id = nextId++;
  const raw = await freshPostMcp(url, rpc('tools/call', id, { name, arguments: args }), headers);
  const message = messagesOf(raw).find((m) => m.id === id) as
    | { result?: CallOutcome['result']; error?: CallOutcome['error'] }
    | undefined;
  const outcome: CallOutcome = { status: raw.status, result: message?.result, error: message?.error, raw };
  if (raw.status !== 200) outcome.problem = `HTTP ${raw.status}: ${raw.text.slice(0, 200)}`;
  else if (message === undefined) outcome.problem = `no answer with id ${id}: ${raw.text.slice(0, 200)}`;
  else if (message.error !== undefined)
    outcome.problem = `JSON-RPC error ${message.error.code}: ${message.error.message}`;
  else if (message.result?.isError === true)
    outcome.problem = `isError: ${message.result.content?.[0]?.text?.slice(0, 200) ?? ''}`;
  return outcome;
}
