/**
 * A 90-second command as an MCP task, in both revisions' words, on two instances of one deployment: the official
 * v2 client with the official Tasks package (test/support/tasks-client.mjs) starts it on the first instance and goes
 * away; the second reports it working for the whole run, then completed, and gives the result a plain call of the
 * same command gives (that call runs meanwhile, beside it). The short version of each step is tasks-clients.test.ts.
 */
import { postMcp } from '../support/http';
import { comparableResult, runTasksClient } from '../support/tasks-driver';
import { messagesOf, openSession, rpc } from '../support/raw-session';
import { type StartedServer, useInstances } from '../support/server';

const TOKEN = 'tasks-long-token-0123456789abcdef';
const ENV = { MCP_AUTH_TOKENS: TOKEN, MCP_SESSION_SECRET: 'tasks-long-secret-0123456789abcdef0123456789' };
const COMMAND = 'sleep 90; echo built; echo careful >&2';
const ARGS = { command: COMMAND, timeout_ms: 150_000 };

// biome-ignore lint/suspicious/noExplicitAny: the driver prints JSON of several shapes.
type Json = any;

const deployment = useInstances(ENV);

it.each(['2025', '2026'] as const)(
  'in %s words: a 90-second task outlives its client, and another instance follows it to its result',
  async (era) => {
    const at = (server: StartedServer) => ({ url: server.url, token: TOKEN, era });
    const plain = runTasksClient({ op: 'call', ...at(deployment.second), tool: 'run_command', args: ARGS });
    const started = await runTasksClient({ op: 'start', ...at(deployment.first), tool: 'run_command', args: ARGS });
    expect(started.kind).toBe('task');

    // Asked every 10 s on the second instance, by raw JSON-RPC in the era's words.
    const statuses: string[] = [];
    const { headers } = await openSession(deployment.second.url, TOKEN);
    for (;;) {
      const task =
        era === '2025'
          ? (
              messagesOf(
                await postMcp(deployment.second.url, rpc('tasks/get', 1, { taskId: started.taskId }), headers),
              )[0] as Json
            ).result
          : (await runTasksClient({ op: 'snapshot', ...at(deployment.second), taskId: started.taskId })).task;
      statuses.push(task.status);
      if (task.status !== 'working' || statuses.length > 30) break;
      await new Promise((r) => setTimeout(r, 10_000));
    }
    // Working at every look but the last (at least five looks over the 90 s), then completed.
    expect(statuses.length).toBeGreaterThanOrEqual(6);
    expect(new Set(statuses.slice(0, -1))).toEqual(new Set(['working']));
    expect(statuses.at(-1)).toBe('completed');

    const resumed = await runTasksClient({ op: 'resume', ...at(deployment.second), reference: started.reference });
    expect(resumed.outcome.status).toBe('completed');
    const answered = await plain;
    expect(comparableResult(resumed.outcome.result)).toEqual(comparableResult(answered.result));
    expect(comparableResult(answered.result).structured).toMatchObject({ exit_code: 0, stdout: 'built\n' });
  },
  300_000,
);
