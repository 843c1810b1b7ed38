/**
 * MCP tasks on the E2B backend, through the built bundle and the real E2B SDK against the local E2B service: two
 * instances of one deployment (one MCP_SESSION_SECRET, one E2B_STATE_DIR, where E2B keeps its tasks) on one service,
 * driven by the official v2 client with the official Tasks package (test/support/tasks-client.mjs, one process per
 * client, so each goes away after its step) in both revisions' words. A run_command task started on one instance is
 * reported working and resumed on the other, with what a plain call gives; a cancel on the other ends the command and
 * everything it started in the sandbox; run_code runs as a task. Without E2B_STATE_DIR the server declares no tasks
 * and refuses a task with -32601, naming the setting. test/reliability/tasks-clients.test.ts is the same story on the
 * local backend.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { NODES, serviceIt, startWire, type Wire, WIRE_TOKEN, wireDescribe } from '../support/e2b-wire';
import { postMcp } from '../support/http';
import { comparableResult, modernPost, resultOf, runTasksClient } from '../support/tasks-driver';
import { markedSleep, pollUntil, processesWithCmdline, RUN_MARK, SETTLE_MS, waitUntilGone } from '../support/processes';
import { authed, errorOf, openSession, rpc } from '../support/raw-session';
import { type StartedServer, startServer } from '../support/server';

type Era = '2025' | '2026';

wireDescribe.each(NODES)('MCP tasks on E2B, two instances of one deployment, server on %s', (_name, node) => {
  const state = mkdtempSync(join(tmpdir(), 'mcp-e2b-tasks-state-'));
  let wire: Wire;
  let second: StartedServer;
  beforeAll(async () => {
    wire = await startWire(node, { env: { E2B_STATE_DIR: state } });
    // Another instance of the same deployment: the same service, secret and state directory.
    second = await startServer({ node, env: { ...wire.env } });
  }, 60_000);
  afterAll(async () => {
    await second?.stop();
    await wire?.stop();
    rmSync(state, { recursive: true, force: true });
  });

  const at = (server: StartedServer, era: Era) => ({ url: server.url, token: WIRE_TOKEN, era });

  it.each(['2025', '2026'] as const)(
    'in %s words: a run_command task outlives its client; the other instance reports it working, then gives what ' +
      'a plain call gives',
    async (era) => {
      // Longer than the 2026-07-28 grace (2 s), after which a call becomes a task.
      const command = 'sleep 5; echo built; echo careful >&2';
      // The plain call, on the other instance in a sandbox of its own, runs meanwhile.
      const plain = runTasksClient({ op: 'call', ...at(second, era), tool: 'run_command', args: { command } });
      const started = await runTasksClient({
        op: 'start',
        ...at(wire.server, era),
        tool: 'run_command',
        args: { command },
      });
      expect(started).toMatchObject({ kind: 'task', reference: { generation: era === '2025' ? 'v1' : 'v2' } });
      // The client that started it is gone; the other instance answers for the task.
      const seen = await runTasksClient({ op: 'snapshot', ...at(second, era), taskId: started.taskId });
      expect(seen.task).toMatchObject({ taskId: started.taskId, status: 'working', retentionMs: 3_600_000 });

      const resumed = await runTasksClient({ op: 'resume', ...at(second, era), reference: started.reference });
      expect(resumed.outcome.status).toBe('completed');
      const { result } = await plain;
      expect(comparableResult(result).structured).toMatchObject({
        exit_code: 0,
        stdout: 'built\n',
        stderr: 'careful\n',
      });
      expect(comparableResult(resumed.outcome.result)).toEqual(comparableResult(result));
      expect(
        (await runTasksClient({ op: 'snapshot', ...at(wire.server, era), taskId: started.taskId })).task.status,
      ).toBe('completed');
    },
    120_000,
  );

  serviceIt.each(['2025', '2026'] as const)(
    'in %s words: a cancel on the other instance ends the command and everything it started in the sandbox',
    async (era) => {
      const [one, two] = era === '2025' ? [300, 301] : [302, 303];
      const command = `${markedSleep(one)} & ${markedSleep(two)} & wait`;
      const started = await runTasksClient({
        op: 'start',
        ...at(wire.server, era),
        tool: 'run_command',
        args: { command },
      });
      expect(started.kind).toBe('task');
      // The local service runs each sandbox's processes on this host, in a namespace of their own: the two sleeps
      // themselves (the shell that started them names them too, and goes with them).
      const mine = () =>
        processesWithCmdline(`.${RUN_MARK}`).filter((p) => [one, two].some((n) => p.cmdline.startsWith(`sleep ${n}.`)));
      expect((await pollUntil(mine, (list) => list.length === 2, SETTLE_MS)).length).toBe(2);

      expect(await runTasksClient({ op: 'cancel', ...at(second, era), taskId: started.taskId })).toEqual({
        cancelled: true,
      });
      // The instance that runs it sees the cancel within seconds and kills the command's process group in the sandbox.
      expect(await waitUntilGone(mine, 30_000)).toEqual([]);
      const seen = await runTasksClient({ op: 'snapshot', ...at(wire.server, era), taskId: started.taskId });
      expect(seen.task.status).toBe('cancelled');
    },
    120_000,
  );

  it('in 2025 words: run_code runs as a task in the E2B interpreter and completes with what it printed', async () => {
    const code = 'import time\ntime.sleep(3)\nprint(6 * 7)';
    const started = await runTasksClient({ op: 'start', ...at(wire.server, '2025'), tool: 'run_code', args: { code } });
    expect(started.kind).toBe('task');
    const resumed = await runTasksClient({ op: 'resume', ...at(second, '2025'), reference: started.reference });
    expect(resumed.outcome).toMatchObject({ status: 'completed', result: { structuredContent: { stdout: '42\n' } } });
    expect(resumed.outcome.result.isError ?? false).toBe(false);
  }, 120_000);

  it('without E2B_STATE_DIR: no tasks declared; a task is refused with -32601 naming the setting (2025-11-25), and a ' +
    'client that names the extension gets a plain result (2026-07-28)', async () => {
    const { E2B_STATE_DIR: _state, ...env } = wire.env;
    const stateless = await startServer({ node, env });
    try {
      const opened = await postMcp(
        stateless.url,
        rpc('initialize', 1, {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        }),
        authed(WIRE_TOKEN),
      );
      expect(resultOf(opened).protocolVersion).toBe('2025-11-25');
      expect(resultOf(opened).capabilities).toBeDefined();
      expect(resultOf(opened).capabilities.tasks).toBeUndefined();
      const { headers } = await openSession(stateless.url, WIRE_TOKEN);
      const task = { name: 'run_command', arguments: { command: 'echo no' }, task: {} };
      const refused = errorOf(await postMcp(stateless.url, rpc('tools/call', 2, task), headers));
      expect(refused?.code).toBe(-32601);
      expect(refused?.message).toContain('E2B_STATE_DIR');

      const discovered = resultOf(await modernPost(stateless.url, WIRE_TOKEN, 'server/discover', {}));
      expect(discovered.capabilities).toBeDefined();
      expect(discovered.capabilities.extensions ?? {}).toEqual({});
      expect(discovered.capabilities.tasks).toBeUndefined();
      // Longer than the grace: with tasks on it would become one; here it is answered when it ends.
      const call = { name: 'run_command', arguments: { command: 'sleep 3; echo plain' } };
      expect(resultOf(await modernPost(stateless.url, WIRE_TOKEN, 'tools/call', call))).toMatchObject({
        resultType: 'complete',
        structuredContent: { exit_code: 0, stdout: 'plain\n' },
      });
    } finally {
      await stateless.stop();
    }
  }, 60_000);
});
