/**
 * MCP tasks through the bundle, two instances of one deployment (one secret, one LOCAL_SANDBOX_ROOT), driven by the
 * official v2 client with the official Tasks package (test/support/tasks-client.mjs, one process per client, so each
 * goes away after its step) in both revisions' words: a task started on one instance is reported and resumed on the
 * other with what a plain call gives, and a cancel on the other ends its process group. Here rather than in npm test
 * for its half minute of commands; npm test has the same steps in raw JSON-RPC (test/e2e/tasks-raw.test.ts). A
 * 90-second command: tasks-long.test.ts.
 */
import { markedSleep, pollUntil, processesWithCmdline, RUN_MARK, waitUntilGone } from '../support/processes';
import { type StartedServer, useInstances } from '../support/server';
import { comparableResult, runTasksClient } from '../support/tasks-driver';

const TOKEN = 'tasks-token-a-0123456789abcdef';
const ENV = { MCP_AUTH_TOKENS: TOKEN, MCP_SESSION_SECRET: 'tasks-secret-0123456789abcdef0123456789abcdef' };

type Era = '2025' | '2026';

const deployment = useInstances(ENV);

describe.each(['2025', '2026'] as const)('in %s words', (era: Era) => {
  const at = (server: StartedServer, token = TOKEN) => ({ url: server.url, token, era });

  it('a task outlives its client: another instance reports it working, then what a plain call gives', async () => {
    // Long enough to be seen working from the other instance; in 2026-07-28, past the grace (2 s) that makes a task.
    const command = `sleep ${era === '2025' ? 3 : 5}; echo built; echo careful >&2`;
    const started = await runTasksClient({
      op: 'start',
      ...at(deployment.first),
      tool: 'run_command',
      args: { command },
    });
    expect(started).toMatchObject({ kind: 'task', reference: { generation: era === '2025' ? 'v1' : 'v2' } });
    // The client that started it is gone; the other instance answers for the task.
    const seen = await runTasksClient({ op: 'snapshot', ...at(deployment.second), taskId: started.taskId });
    expect(seen.task).toMatchObject({ taskId: started.taskId, status: 'working', retentionMs: 3_600_000 });

    const resumed = await runTasksClient({ op: 'resume', ...at(deployment.second), reference: started.reference });
    expect(resumed.outcome.status).toBe('completed');
    const plain = await runTasksClient({
      op: 'call',
      ...at(deployment.second),
      tool: 'run_command',
      args: { command },
    });
    // Both answered by the tool (a failure to answer would show here whole).
    expect([resumed.outcome.result, plain.result]).toEqual([
      expect.objectContaining({ structuredContent: expect.any(Object) }),
      expect.objectContaining({ structuredContent: expect.any(Object) }),
    ]);
    expect(comparableResult(resumed.outcome.result)).toEqual(comparableResult(plain.result));
    expect(comparableResult(plain.result).structured).toMatchObject({
      exit_code: 0,
      stdout: 'built\n',
      stderr: 'careful\n',
    });
    expect(
      (await runTasksClient({ op: 'snapshot', ...at(deployment.first), taskId: started.taskId })).task.status,
    ).toBe('completed');
  }, 120_000);

  it('a cancel on another instance ends the command and everything it started', async () => {
    const [one, two] = era === '2025' ? [300, 301] : [302, 303];
    const command = `${markedSleep(one)} & ${markedSleep(two)} & wait`;
    const started = await runTasksClient({
      op: 'start',
      ...at(deployment.first),
      tool: 'run_command',
      args: { command },
    });
    expect(started.kind).toBe('task');
    // The two sleeps themselves (the shell that started them names them too, and goes with them).
    const mine = () =>
      processesWithCmdline(`.${RUN_MARK}`).filter((p) => [one, two].some((n) => p.cmdline.startsWith(`sleep ${n}.`)));
    expect((await pollUntil(mine, (list) => list.length === 2, 20_000)).length).toBe(2);

    expect(await runTasksClient({ op: 'cancel', ...at(deployment.second), taskId: started.taskId })).toEqual({
      cancelled: true,
    });
    // The instance that runs it sees the cancel within seconds and kills the command's process group.
    expect(await waitUntilGone(mine, 30_000)).toEqual([]);
    expect(
      (await runTasksClient({ op: 'snapshot', ...at(deployment.first), taskId: started.taskId })).task.status,
    ).toBe('cancelled');
  }, 120_000);
});
