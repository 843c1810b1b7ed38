/** dist/stdio.js: the same tools over stdio; bad lines get JSON-RPC errors and serving goes on. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { pollUntil, SETTLE_MS } from '../support/processes';
import { workspacesIn } from '../support/server';

const STDIO_BUNDLE = resolve(__dirname, '../../dist/stdio.js');

/** A raw line-oriented stdio session with the bundle. */
function startRaw(root: string): {
  child: ChildProcessWithoutNullStreams;
  next: () => Promise<Record<string, unknown>>;
  send: (line: string) => void;
} {
  const child = spawn(process.execPath, [STDIO_BUNDLE], {
    env: { PATH: process.env.PATH ?? '', LOCAL_SANDBOX_ROOT: root },
  });
  const lines: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const waiter = waiters.shift();
    if (waiter !== undefined) waiter(line);
    else lines.push(line);
  });
  return {
    child,
    send: (line) => child.stdin.write(`${line}\n`),
    next: () =>
      new Promise((resolveLine, reject) => {
        const timer = setTimeout(() => reject(new Error('no answer on stdout')), 30_000);
        const take = (line: string): void => {
          clearTimeout(timer);
          resolveLine(JSON.parse(line) as Record<string, unknown>);
        };
        const queued = lines.shift();
        if (queued !== undefined) take(queued);
        else waiters.push(take);
      }),
  };
}

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'stdio-root-'));
  chmodSync(root, 0o711);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

it('answers malformed and non-object lines with JSON-RPC errors and keeps serving', async () => {
  const raw = startRaw(root);
  raw.send('{not json');
  expect(await raw.next()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  raw.send('42');
  expect(await raw.next()).toMatchObject({ id: null, error: { code: -32600 } });
  raw.send('{"jsonrpc":"2.0","id":7,"foo":1}');
  expect(await raw.next()).toMatchObject({ id: 7, error: { code: -32600 } });
  raw.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  );
  expect(await raw.next()).toMatchObject({
    id: 1,
    result: { protocolVersion: '2024-11-05', serverInfo: { name: 'sandbox-mcp-fc' } },
  });
  raw.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  raw.send('[1,2');
  expect(await raw.next()).toMatchObject({ error: { code: -32700 } });
  raw.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }));
  const list = await raw.next();
  expect((list.result as { tools: unknown[] }).tools).toHaveLength(10);
  const exited = new Promise((r) => raw.child.once('exit', r));
  raw.child.stdin.end();
  await exited;
});

it.each(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'])('negotiates %s', async (version) => {
  const raw = startRaw(root);
  raw.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  );
  expect(await raw.next()).toMatchObject({ result: { protocolVersion: version } });
  const exited = new Promise((r) => raw.child.once('exit', r));
  raw.child.stdin.end();
  await exited;
});

it('serves the tools to the official client, and kills the sandbox when the client leaves', async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [STDIO_BUNDLE],
    env: { PATH: process.env.PATH ?? '', LOCAL_SANDBOX_ROOT: root },
  });
  const client = new Client({ name: 'stdio-e2e', version: '1.0.0' });
  await client.connect(transport);
  const result = await client.callTool({
    name: 'run_command',
    arguments: { command: 'echo $((6*7)) > answer.txt && cat answer.txt' },
  });
  expect(result.structuredContent).toMatchObject({ exit_code: 0, stdout: '42\n' });
  const read = await client.callTool({ name: 'read_file', arguments: { path: 'answer.txt' } });
  expect(read.structuredContent).toMatchObject({ content: '42\n' });
  await client.close();
  // The workspace goes with the process.
  expect(
    await pollUntil(
      () => workspacesIn(root),
      (names) => names.length === 0,
      SETTLE_MS,
    ),
  ).toEqual([]);
});
