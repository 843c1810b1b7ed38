/**
 * What the interop suites (test/interop/) share: the built bundle with one static bearer token, the tools every
 * client must see, the shape of a 2026-07-28 sandbox handle, and the server's own record of the protocol a
 * client spoke (its request log, so the check is the same for every client, whatever it exposes).
 */
import { pollUntil, SETTLE_MS } from './processes';
import { startServer, type StartedServer } from './server';

export const INTEROP_TOKEN = 'interop-token-0123456789abcdef';

/** The fifteen tools, in the order the server lists them (test/e2e/clients.test.ts checks the same list). */
export const SERVER_TOOLS = [
  'run_code',
  'run_command',
  'read_file',
  'write_file',
  'list_files',
  'edit_file',
  'sandbox_status',
  'manage_process',
  'get_preview_url',
  'get_file_url',
  'reset_sandbox',
  'open_sandbox',
  'list_sandboxes',
  'name_sandbox',
  'delete_sandbox',
];

/** A sandbox handle as 2026-07-28 results carry it (test/e2e/modern-lane.test.ts). */
export const SANDBOX_HANDLE = /^[A-Za-z0-9_-]{16}\.[0-9a-z]+\.[A-Za-z0-9_-]{16}$/;

/** What `read_file` of a path that does not exist answers, as the text of its tool error. */
export const MISSING_FILE = /No such file or directory: \S*\/missing\.txt$/;

/** Starts the bundle for one interop file: bearer auth with INTEROP_TOKEN only. */
export function startInteropServer(): Promise<StartedServer> {
  return startServer({ env: { MCP_AUTH_TOKENS: INTEROP_TOKEN } });
}

/** How the server logged one MCP request: its method, the era and version of the protocol, the session if any. */
export interface LoggedRequest {
  readonly mcp_method: string;
  /** The tool, for tools/call. */
  readonly tool?: string;
  readonly era: 'legacy' | 'modern';
  readonly protocol_version: string;
  readonly session?: string;
}

/** The MCP requests the server logged so far, oldest first (the log is in order: once a line is seen, all before it
 * are). */
export function loggedRequests(server: StartedServer): LoggedRequest[] {
  return server
    .logs()
    .filter((line) => line.msg === 'request' && typeof line.mcp_method === 'string')
    .map((line) => line as unknown as LoggedRequest);
}

/**
 * The tools/call requests the server logged, oldest first, once there are at least `count` (a request's log
 * line is written as its answer ends, so it can reach the test a moment after the client has the answer).
 */
export function loggedToolCalls(server: StartedServer, count: number): Promise<LoggedRequest[]> {
  const calls = (): LoggedRequest[] => loggedRequests(server).filter((request) => request.mcp_method === 'tools/call');
  return pollUntil(calls, (seen) => seen.length >= count, SETTLE_MS);
}

/** The distinct `<version> (<era>)` of some logged requests: one entry when a client kept to one protocol. */
export function protocolsOf(requests: readonly LoggedRequest[]): string[] {
  return [...new Set(requests.map((request) => `${request.protocol_version} (${request.era})`))];
}

/** That the client spoke 2026-07-28 from its first request on: `server/discover`, never `initialize`. */
export function expectModernFromTheStart(server: StartedServer): void {
  const requests = loggedRequests(server);
  expect(requests[0]?.mcp_method).toBe('server/discover');
  expect(requests.map((r) => r.mcp_method)).not.toContain('initialize');
  expect(protocolsOf(requests)).toEqual(['2026-07-28 (modern)']);
}
