/**
 * `mcp-remote` (the stdio-to-remote proxy desktop hosts run) against the built bundle, spawned as a host spawns it:
 * the official v2 client's stdio transport, the URL, and `--header "Authorization:${AUTH_HEADER}"` with the token
 * in the env (the form its README gives for hosts that mangle spaces in arguments). Its OAuth store goes to a
 * temp MCP_REMOTE_CONFIG_DIR and its HOME to another, both checked and removed after; it is run from the install
 * with node (no npx, so no registry lookup), under a preload that reports and refuses any connection off loopback
 * (test/support/loopback-only.cjs), and the suite checks it reached the server under test only.
 *
 * By default it passes the stdio client's initialize through: 2025-11-25 with a session, no handle. With
 * `--protocol auto` it probes `server/discover`, answers the handshake itself and bridges every call to 2026-07-28:
 * the stdio client then sees the `sandbox` handles and has to carry them. Either way a tool error comes back as a
 * CallToolResult with isError, as the server sent it.
 */
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { type ToolResult, textOf } from '../support/clients';
import {
  INTEROP_TOKEN,
  loggedRequests,
  loggedToolCalls,
  MISSING_FILE,
  protocolsOf,
  SANDBOX_HANDLE,
  SERVER_TOOLS,
  startInteropServer,
} from '../support/interop';
import { stopAllServers, type StartedServer } from '../support/server';

const PROXY = require.resolve('mcp-remote/dist/proxy.js');
const LOOPBACK_ONLY = resolve(__dirname, '../support/loopback-only.cjs');

let server: StartedServer;
beforeAll(async () => {
  server = await startInteropServer();
});
afterAll(stopAllServers);

/** Tool calls made so far in this file: the server logs one line each, in order (support/interop.ts). */
let callsMade = 0;

interface Proxied {
  readonly client: Client;
  /** The proxy's stderr so far. */
  stderr(): string;
  /** Calls a tool through the proxy. */
  call(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Closes the client (the proxy exits on stdin's end) and waits for the last of its stderr. */
  close(): Promise<void>;
  readonly home: string;
  readonly configDir: string;
}

async function connectThroughMcpRemote(extraArgs: string[]): Promise<Proxied> {
  const home = mkdtempSync(join(tmpdir(), 'mcp-remote-home-'));
  const configDir = mkdtempSync(join(tmpdir(), 'mcp-remote-config-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    // The header argument is literal: mcp-remote expands ${AUTH_HEADER} from its env.
    args: ['--require', LOOPBACK_ONLY, PROXY, server.url, '--header', 'Authorization:${AUTH_HEADER}', ...extraArgs],
    env: { HOME: home, MCP_REMOTE_CONFIG_DIR: configDir, AUTH_HEADER: `Bearer ${INTEROP_TOKEN}` },
    stderr: 'pipe',
  });
  let stderr = '';
  const stream = transport.stderr;
  if (!(stream instanceof Readable)) throw new Error('no stderr pipe');
  stream.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const ended = once(stream, 'end');
  const client = new Client({ name: 'interop-mcp-remote', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    home,
    configDir,
    stderr: () => stderr,
    async call(name, args) {
      callsMade += 1;
      return (await client.callTool({ name, arguments: args })) as ToolResult;
    },
    async close() {
      await client.close();
      await ended;
    },
  };
}

/** The `loopback-only:` lines of a proxy's stderr, each once. */
const connections = (stderr: string): string[] => [
  ...new Set(stderr.split('\n').filter((line) => line.startsWith('loopback-only:'))),
];

/** Checks what a closed proxy left: its store's folder in the config dir and nothing else, nothing in HOME; then
 * removes both. */
function expectNothingLeftBehind(proxied: Proxied): void {
  try {
    expect(readdirSync(proxied.configDir, { recursive: true })).toEqual(['mcp-remote-v1']);
    expect(readdirSync(proxied.home)).toEqual([]);
  } finally {
    rmSync(proxied.home, { recursive: true, force: true });
    rmSync(proxied.configDir, { recursive: true, force: true });
  }
}

describe('by default (the initialize passed through)', () => {
  let proxied: Proxied;
  let callsBefore: number;
  beforeAll(async () => {
    callsBefore = callsMade;
    proxied = await connectThroughMcpRemote([]);
  });

  it('negotiates 2025-11-25 and lists the fifteen tools', async () => {
    expect(proxied.client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect(proxied.client.getServerVersion()).toMatchObject({ name: 'sandbox-mcp-fc' });
    expect((await proxied.client.listTools()).tools.map((t) => t.name)).toEqual(SERVER_TOOLS);
  });

  it('runs run_command and returns the CallToolResult with structuredContent, over a 2025-11-25 session', async () => {
    const result = await proxied.call('run_command', { command: 'echo hi' });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ stdout: 'hi\n', exit_code: 0 });
    expect(result.structuredContent).not.toHaveProperty('sandbox');
    const calls = (await loggedToolCalls(server, callsMade)).slice(callsBefore);
    expect(protocolsOf(calls)).toEqual(['2025-11-25 (legacy)']);
    const session = calls[0]?.session;
    expect(session).toEqual(expect.any(String));
    // The session began with the stdio client's own initialize, passed through.
    expect(loggedRequests(server).filter((r) => r.session === session)[0]).toMatchObject({
      mcp_method: 'initialize',
      protocol_version: '2025-11-25',
    });
  });

  it('writes and reads back a file in the session’s sandbox', async () => {
    const written = await proxied.call('write_file', {
      path: 'notes/hello.txt',
      content: 'hello through mcp-remote\n',
    });
    expect(written.structuredContent).toMatchObject({ bytes_written: 25, created: true });
    const read = await proxied.call('read_file', { path: 'notes/hello.txt' });
    expect(read.structuredContent).toMatchObject({ content: 'hello through mcp-remote\n' });
    expect(
      new Set((await loggedToolCalls(server, callsMade)).slice(callsBefore).map((call) => call.session)).size,
    ).toBe(1);
  });

  it('passes a tool error on as a result with isError and the server’s message', async () => {
    const result = await proxied.call('read_file', { path: 'missing.txt' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(MISSING_FILE);
  });

  it('reached only the server under test, and leaves nothing behind', async () => {
    await proxied.close();
    expect(connections(proxied.stderr())).toEqual([`loopback-only: connect 127.0.0.1:${server.port}`]);
    expectNothingLeftBehind(proxied);
  });
});

describe('with --protocol auto (bridged to 2026-07-28)', () => {
  let proxied: Proxied;
  let callsBefore: number;
  beforeAll(async () => {
    callsBefore = callsMade;
    proxied = await connectThroughMcpRemote(['--protocol', 'auto']);
  });

  it(
    'answers the stdio client’s 2025-11-25 handshake itself and lists the fifteen tools, ' +
      'each taking a sandbox handle',
    async () => {
      expect(proxied.client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      expect(proxied.stderr()).toContain('Remote server speaks MCP 2026-07-28');
      const { tools } = await proxied.client.listTools();
      expect(tools.map((t) => t.name)).toEqual(SERVER_TOOLS);
      for (const tool of tools) expect(tool.inputSchema.properties).toHaveProperty('sandbox');
    },
  );

  it('runs run_command in the 2026-07-28 era: the result carries a sandbox handle', async () => {
    const result = await proxied.call('run_command', { command: 'echo hi' });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      stdout: 'hi\n',
      exit_code: 0,
      sandbox: expect.stringMatching(SANDBOX_HANDLE),
    });
    expect(protocolsOf((await loggedToolCalls(server, callsMade)).slice(callsBefore))).toEqual(['2026-07-28 (modern)']);
    // The probe that found the 2026-07-28 server (only this proxy sends one).
    expect(loggedRequests(server)).toContainEqual(
      expect.objectContaining({ mcp_method: 'server/discover', era: 'modern' }),
    );
  });

  it('writes and reads back a file in one sandbox by carrying the handle', async () => {
    const written = await proxied.call('write_file', {
      path: 'notes/hello.txt',
      content: 'hello through the bridge\n',
    });
    const sandbox = written.structuredContent?.sandbox;
    expect(sandbox).toMatch(SANDBOX_HANDLE);
    expect(textOf(written).split('\n')[0]).toBe(`sandbox: ${String(sandbox)}`);
    const read = await proxied.call('read_file', { path: 'notes/hello.txt', sandbox });
    expect(read.structuredContent).toMatchObject({ content: 'hello through the bridge\n', sandbox });
  });

  it('passes a tool error on as a result with isError and the server’s message', async () => {
    const sandbox = (await proxied.call('sandbox_status', {})).structuredContent?.sandbox;
    const result = await proxied.call('read_file', { path: 'missing.txt', sandbox });
    expect(result.isError).toBe(true);
    expect(textOf(result).split('\n')).toEqual([`sandbox: ${String(sandbox)}`, expect.stringMatching(MISSING_FILE)]);
  });

  it('reached only the server under test, and leaves nothing behind', async () => {
    await proxied.close();
    expect(connections(proxied.stderr())).toEqual([`loopback-only: connect 127.0.0.1:${server.port}`]);
    expectNothingLeftBehind(proxied);
  });
});
