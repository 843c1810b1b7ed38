/**
 * Named sandboxes through the built bundle, as `npm start` runs it on a laptop: a per-process secret (none
 * configured), the local backend with bubblewrap, real time. Day 1 opens a named sandbox and leaves files and a
 * running process; idle, it falls asleep and no process of it is left; the server stops; a new server on the same
 * root serves day 2, whose session lists the sandbox, opens it by name and finds its files, told which process was
 * stopped. Rules that need a clock are test/core/sleeping-local.test.ts.
 */
import { rmSync } from 'node:fs';

import { connectClient, type TestClient, type ToolResult } from '../support/clients';
import { SANDBOX_HANDLE } from '../support/interop';
import { connectModelLike } from '../support/model-loop';
import { needs } from '../support/needs';
import { markedSleep, pollUntil, processesWithCmdline, SETTLE_MS } from '../support/processes';
import { makeSandboxRoot, startServer, stopAllServers } from '../support/server';

const TOKEN = 'e2e-sleeping-token-0123456789abcdef';

const out = <T>(result: ToolResult): T => {
  if (result.isError === true) throw new Error(`tool failed: ${result.content[0]?.text ?? ''}`);
  return result.structuredContent as T;
};

let root: string;
beforeEach(() => {
  root = makeSandboxRoot();
});
afterEach(async () => {
  await stopAllServers();
  rmSync(root, { recursive: true, force: true });
});

needs('bubblewrap').it(
  'keeps a named sandbox asleep, with no process left, across a server restart with a new secret, and wakes it by ' +
    'name with its files',
  async () => {
    const env = { MCP_AUTH_TOKENS: TOKEN, MCP_SESSION_IDLE_TTL_S: '1' };
    const day1 = await startServer({ sandboxRoot: root, env });
    const clients: TestClient[] = [];
    const connect = async (url: string): Promise<TestClient> => {
      const client = await connectClient('v2', url, { token: TOKEN });
      clients.push(client);
      return client;
    };
    const a = await connect(day1.url);
    out(await a.callTool('open_sandbox', { name: 'proj' }));
    out(await a.callTool('write_file', { path: 'notes.txt', content: 'day one' }));
    const server = markedSleep(1000);
    out(await a.callTool('run_command', { command: server, background: true }));
    expect(processesWithCmdline(server)).toHaveLength(1);
    // Past the idle TTL a request that touches no sandbox sweeps: the sandbox falls asleep.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    await connect(day1.url);
    await pollUntil(
      () => day1.logs().filter((l) => l.msg === 'sandbox asleep'),
      (lines) => lines.length > 0,
      SETTLE_MS,
    );
    expect(processesWithCmdline(server)).toEqual([]);
    for (const client of clients.splice(0)) await client.close();
    await day1.stop();

    const day2 = await startServer({ sandboxRoot: root, env });
    const b = await connect(day2.url);
    const listed = out<{ sandboxes: Array<Record<string, unknown>> }>(await b.callTool('list_sandboxes'));
    expect(listed.sandboxes).toEqual([expect.objectContaining({ name: 'proj', state: 'sleeping' })]);
    expect(out(await b.callTool('open_sandbox', { name: 'proj' }))).toMatchObject({
      state: 'woken',
      kept: ['files'],
      stopped_processes: [{ process_id: 'p1', command: server }],
    });
    expect(out<{ content: string }>(await b.callTool('read_file', { path: 'notes.txt' })).content).toBe('day one');
    const processes = out<{ processes: Array<Record<string, unknown>> }>(
      await b.callTool('manage_process', { action: 'list' }),
    ).processes;
    expect(processes).toEqual([expect.objectContaining({ process_id: 'p1', command: server, state: 'exited' })]);
    for (const client of clients) await client.close();
  },
);

needs('bubblewrap').it(
  'keeps a named sandbox for a model-like 2026-07-28 client: day 2, without the old handle, it lists the sandbox, ' +
    'opens it by name and goes on with the handle the result gives',
  async () => {
    const env = { MCP_AUTH_TOKENS: TOKEN, MCP_SESSION_IDLE_TTL_S: '1' };
    const day1 = await startServer({ sandboxRoot: root, env });
    const a = await connectModelLike(day1.url, TOKEN);
    out(await a.call('open_sandbox', { name: 'proj' }));
    const named = a.handle;
    out(await a.call('write_file', { path: 'notes.txt', content: 'day one' }));
    expect(a.handle).toBe(named);
    await a.close();
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    await (await connectModelLike(day1.url, TOKEN)).call('list_sandboxes');
    await pollUntil(
      () => day1.logs().filter((l) => l.msg === 'sandbox asleep'),
      (lines) => lines.length > 0,
      SETTLE_MS,
    );
    await day1.stop();

    const day2 = await startServer({ sandboxRoot: root, env });
    const b = await connectModelLike(day2.url, TOKEN);
    const listed = out<{ sandboxes: Array<Record<string, unknown>> }>(await b.call('list_sandboxes'));
    expect(listed.sandboxes).toEqual([expect.objectContaining({ name: 'proj', state: 'sleeping' })]);
    expect(out<{ state: string }>(await b.call('open_sandbox', { name: 'proj' })).state).toBe('woken');
    expect(b.handle).toMatch(SANDBOX_HANDLE);
    expect(out<{ content: string }>(await b.call('read_file', { path: 'notes.txt' })).content).toBe('day one');
    await b.close();
  },
);
