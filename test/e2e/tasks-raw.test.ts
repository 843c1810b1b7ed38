/**
 * MCP tasks through the bundle in raw JSON-RPC, two instances of one deployment. The 2025-11-25 shapes and error
 * codes, a task followed and cancelled from the other instance (its process group gone), live output as progress while
 * `tasks/result` waits, a tool error as a failed task; the 2026-07-28 extension's quick, slow and undeclared paths; a
 * sandbox kept awake while its task runs; another credential and a changed id; pages of `tasks/list`; the ttl; the
 * per-credential cap. The same through the official Tasks package: test/reliability/tasks-clients.test.ts.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

import { postMcp } from '../support/http';
import { markedSleep, pollUntil, processesWithCmdline, RUN_MARK, waitUntilGone } from '../support/processes';
import { authed, errorOf, messagesOf, rpc } from '../support/raw-session';
import { startServer, useInstances } from '../support/server';
import {
  type DriverOutput as Json,
  legacySession,
  modernPost,
  resultOf,
  runTasksClient,
  TASKS_EXTENSION as EXTENSION,
} from '../support/tasks-driver';

const TOKENS = ['tasks-token-a-0123456789abcdef', 'tasks-token-b-0123456789abcdef', 'tasks-token-c-0123456789abcdef'];
const [A, B, C] = TOKENS as [string, string, string];
const LIMITED = 'tasks-token-limited-0123456789';
const SECRET = 'tasks-secret-0123456789abcdef0123456789abcdef';
const MAX_TASKS = 3;
const ENV = {
  MCP_AUTH_TOKENS: [...TOKENS, LIMITED].join(','),
  MCP_SESSION_SECRET: SECRET,
  MCP_MAX_TASKS_PER_CREDENTIAL: String(MAX_TASKS),
};

const deployment = useInstances(ENV);

describe('in raw JSON-RPC', () => {
  it('2025-11-25: declares tasks, marks run_command and run_code optional, answers with the spec shapes', async () => {
    const opened = await postMcp(
      deployment.first.url,
      rpc('initialize', 1, {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      }),
      authed(A),
    );
    expect(resultOf(opened).capabilities.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const call = await legacySession(deployment.first, A);
    const tools: Json[] = resultOf(await call('tools/list')).tools;
    expect(tools.filter((t) => t.execution !== undefined).map((t) => [t.name, t.execution])).toEqual([
      ['run_code', { taskSupport: 'optional' }],
      ['run_command', { taskSupport: 'optional' }],
    ]);

    const created = resultOf(
      await call('tools/call', { name: 'run_command', arguments: { command: 'echo raw' }, task: { ttl: 120_000 } }),
    );
    expect(created.task).toEqual({
      taskId: expect.stringMatching(/^[A-Za-z0-9_-]{16}\.[0-9a-z]+\.[A-Za-z0-9_-]{16}$/),
      status: 'working',
      createdAt: expect.any(String),
      lastUpdatedAt: expect.any(String),
      ttl: 120_000,
      pollInterval: 1_000,
    });
    const { taskId } = created.task;
    // tasks/result waits for the end, then gives the call's own result with the related task.
    const result = resultOf(await call('tasks/result', { taskId }));
    expect(result.structuredContent).toMatchObject({ exit_code: 0, stdout: 'raw\n' });
    expect(result._meta).toEqual({ 'io.modelcontextprotocol/related-task': { taskId } });
    expect(resultOf(await call('tasks/get', { taskId }))).toMatchObject({ taskId, status: 'completed', ttl: 120_000 });
    expect(errorOf(await call('tasks/cancel', { taskId }))).toEqual({
      code: -32602,
      message: "Cannot cancel task: already in terminal status 'completed'.",
    });
    // A tool that does not run as a task refuses to (its taskSupport is forbidden).
    const refused = await call('tools/call', { name: 'read_file', arguments: { path: 'x' }, task: {} });
    expect(errorOf(refused)?.code).toBe(-32601);
  }, 60_000);

  it('2025-11-25: a waiting tasks/result carries the live output as progress of the task, then its end', async () => {
    const call = await legacySession(deployment.first, A);
    const created = resultOf(
      await call('tools/call', {
        name: 'run_command',
        arguments: { command: 'for i in 1 2 3 4; do echo line$i; sleep 0.5; done' },
        task: {},
        _meta: { progressToken: 'build-1' },
      }),
    );
    const { taskId } = created.task;
    const messages = messagesOf(await call('tasks/result', { taskId }));
    const related = { 'io.modelcontextprotocol/related-task': { taskId } };
    const progress = messages.filter((m) => m.method === 'notifications/progress') as Json[];
    expect(progress.length).toBeGreaterThan(0);
    for (const note of progress) expect(note.params).toMatchObject({ progressToken: 'build-1', _meta: related });
    expect(progress.map((note) => note.params.message).join('')).toContain('line4');
    const status = messages.find((m) => m.method === 'notifications/tasks/status') as Json;
    expect(status.params).toMatchObject({ taskId, status: 'completed' });
    // The result comes last, once the task ended.
    expect(messages.at(-1)).toMatchObject({ result: { structuredContent: { exit_code: 0 }, _meta: related } });
  }, 60_000);

  it('2025-11-25: a cancel on the other instance ends the command and everything it started', async () => {
    const here = await legacySession(deployment.first, A);
    const there = await legacySession(deployment.second, A);
    const command = `${markedSleep(320)} & ${markedSleep(321)} & wait`;
    const { taskId } = resultOf(
      await here('tools/call', { name: 'run_command', arguments: { command }, task: {} }),
    ).task;
    // The two sleeps themselves (the shell that started them names them too, and goes with them).
    const sleeps = () =>
      processesWithCmdline(`.${RUN_MARK}`).filter((p) => [320, 321].some((n) => p.cmdline.startsWith(`sleep ${n}.`)));
    expect((await pollUntil(sleeps, (list) => list.length === 2, 20_000)).length).toBe(2);
    expect(resultOf(await there('tasks/get', { taskId })).status).toBe('working');
    expect(resultOf(await there('tasks/cancel', { taskId }))).toMatchObject({
      taskId,
      status: 'cancelled',
      statusMessage: 'Cancelled by the client.',
    });
    // The instance that runs it sees the cancel within seconds and kills the command's process group.
    expect(await waitUntilGone(sleeps, 30_000)).toEqual([]);
    expect(resultOf(await here('tasks/get', { taskId })).status).toBe('cancelled');
  }, 60_000);

  it('2025-11-25: a tool error is a failed task, whose result still says what happened', async () => {
    const call = await legacySession(deployment.first, A);
    const created = resultOf(
      await call('tools/call', { name: 'run_command', arguments: { command: 'sleep 5', timeout_ms: 500 }, task: {} }),
    );
    const result = resultOf(await call('tasks/result', { taskId: created.task.taskId }));
    expect(result).toMatchObject({ isError: true, structuredContent: { timed_out: true } });
    expect(resultOf(await call('tasks/get', { taskId: created.task.taskId }))).toMatchObject({
      status: 'failed',
      statusMessage: 'The tool reported an error.',
    });
  }, 60_000);

  it('2026-07-28: lists the extension, answers quick calls at once, refuses clients that did not name it', async () => {
    const discover = resultOf(await modernPost(deployment.first.url, A, 'server/discover', {}));
    expect(discover.capabilities.extensions).toEqual({ [EXTENSION]: {} });
    expect(discover.capabilities.tasks).toBeUndefined();
    const tools: Json[] = resultOf(await modernPost(deployment.first.url, A, 'tools/list', {})).tools;
    expect(tools.filter((t) => t.execution !== undefined)).toEqual([]);

    const quick = resultOf(
      await modernPost(deployment.first.url, A, 'tools/call', {
        name: 'run_command',
        arguments: { command: 'echo now' },
      }),
    );
    expect(quick).toMatchObject({ resultType: 'complete', structuredContent: { stdout: 'now\n' } });
    const slow = resultOf(
      await modernPost(deployment.first.url, A, 'tools/call', {
        name: 'run_command',
        arguments: { command: 'sleep 4' },
      }),
    );
    expect(slow).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000, pollIntervalMs: 1_000 });
    expect(slow).not.toHaveProperty('task');
    // Without the extension named: no task, and the tasks methods are refused with -32021.
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const res = await modernPost(deployment.first.url, A, method, { taskId: slow.taskId, inputResponses: {} }, false);
      expect([method, errorOf(res)?.code]).toEqual([method, -32021]);
    }
    // Past the grace too, but plain: meanwhile the task is followed on the other instance.
    const undeclared = modernPost(
      deployment.first.url,
      A,
      'tools/call',
      { name: 'run_command', arguments: { command: 'sleep 3; echo plain' } },
      false,
    );

    const done = await pollUntil(
      async () => resultOf(await modernPost(deployment.second.url, A, 'tasks/get', { taskId: slow.taskId })),
      (task) => task.status !== 'working',
      30_000,
      500,
    );
    expect(done).toMatchObject({
      status: 'completed',
      result: { resultType: 'complete', structuredContent: { exit_code: 0 } },
    });
    expect(done.result._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
    expect(resultOf(await undeclared)).toMatchObject({
      resultType: 'complete',
      structuredContent: { stdout: 'plain\n' },
    });
    expect(resultOf(await modernPost(deployment.second.url, A, 'tasks/cancel', { taskId: slow.taskId }))).toMatchObject(
      {
        resultType: 'complete',
      },
    );
    expect(errorOf(await modernPost(deployment.second.url, A, 'tasks/get', { taskId: 'not-a-task' }))?.code).toBe(
      -32602,
    );
  }, 60_000);

  it('a sandbox stays awake while its task runs, past the idle TTL', async () => {
    const server = await startServer({ env: { ...ENV, MCP_SESSION_IDLE_TTL_S: '1' } });
    const call = await legacySession(server, A);
    const { taskId } = resultOf(
      await call('tools/call', { name: 'run_command', arguments: { command: 'sleep 4; echo awake' }, task: {} }),
    ).task;
    // Every request sweeps the idle sandboxes (a sleeping local sandbox's processes are stopped): four times the
    // idle TTL goes by, asked about all the while.
    for (let i = 0; i < 4; i += 1) {
      await new Promise((r) => setTimeout(r, 1_000));
      expect(resultOf(await call('tasks/get', { taskId })).status).toMatch(/^(working|completed)$/);
    }
    const result = resultOf(await call('tasks/result', { taskId }));
    expect(result.structuredContent).toMatchObject({ exit_code: 0, stdout: 'awake\n' });
    expect(server.logs().filter((line) => line.msg === 'sandbox asleep')).toEqual([]);
  }, 60_000);

  it("a task is its credential's alone, and a changed id finds nothing", async () => {
    const mine = await legacySession(deployment.first, A);
    const { taskId } = resultOf(
      await mine('tools/call', { name: 'run_command', arguments: { command: 'sleep 2' }, task: {} }),
    ).task;
    const theirs = await legacySession(deployment.second, B);
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel'])
      expect([method, errorOf(await theirs(method, { taskId }))]).toEqual([
        method,
        { code: -32602, message: 'Task not found: unknown, expired, or not yours.' },
      ]);
    expect(resultOf(await theirs('tasks/list', {}))).toEqual({ tasks: [] });
    expect(errorOf(await modernPost(deployment.second.url, B, 'tasks/get', { taskId }))?.code).toBe(-32602);
    // One character changed: the signature no longer holds.
    const changed = `${taskId.slice(0, -1)}${taskId.endsWith('A') ? 'B' : 'A'}`;
    expect(errorOf(await mine('tasks/get', { taskId: changed }))?.code).toBe(-32602);
    expect(resultOf(await mine('tasks/get', { taskId })).status).toBe('working');
  }, 60_000);

  it('tasks/list pages through the tasks of the credential, oldest first, on any instance', async () => {
    const call = await legacySession(deployment.first, C);
    const ids: string[] = [];
    for (let i = 0; i < 22; i += 1) {
      const created = resultOf(
        await call('tools/call', { name: 'run_command', arguments: { command: 'true' }, task: {} }),
      );
      ids.push(created.task.taskId);
      // One at a time: the credential may run only MAX_TASKS at once.
      await call('tasks/result', { taskId: created.task.taskId });
    }
    const other = await legacySession(deployment.second, C);
    const page1 = resultOf(await other('tasks/list', {}));
    expect(page1.tasks).toHaveLength(20);
    expect(page1.nextCursor).toEqual(expect.any(String));
    const page2 = resultOf(await other('tasks/list', { cursor: page1.nextCursor }));
    expect(page2.nextCursor).toBeUndefined();
    expect([...page1.tasks, ...page2.tasks].map((t: Json) => t.taskId)).toEqual(ids);
    expect(errorOf(await other('tasks/list', { cursor: 'bm90IGEgY3Vyc29y' }))?.code).toBe(-32602);
    // The official client reads the same pages.
    const viaPackage = await runTasksClient({ op: 'list', url: deployment.second.url, token: C, era: '2025' });
    expect(viaPackage.tasks.map((t: Json) => t.taskId)).toEqual(ids.slice(0, 20));
  }, 120_000);

  it('a task is gone, with its files, once its ttl has passed', async () => {
    const call = await legacySession(deployment.first, B);
    const { taskId } = resultOf(
      await call('tools/call', { name: 'run_command', arguments: { command: 'true' }, task: { ttl: 1_000 } }),
    ).task;
    expect(resultOf(await call('tasks/result', { taskId })).structuredContent).toMatchObject({ exit_code: 0 });
    const gone = await pollUntil(
      async () => errorOf(await call('tasks/get', { taskId })),
      (e) => e !== undefined,
      15_000,
      200,
    );
    expect(gone?.code).toBe(-32602);
    expect(resultOf(await call('tasks/list', {})).tasks.map((t: Json) => t.taskId)).not.toContain(taskId);
    // Its files are named by a hash of the id's random part (tasks/task-store.ts): none is left.
    const tag = createHash('sha256')
      .update(`mcp-task:${taskId.split('.')[0]}`)
      .digest('hex')
      .slice(0, 32);
    const owners = join(deployment.root, '.tasks');
    const files = readdirSync(owners).flatMap((owner) => readdirSync(join(owners, owner)));
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((name) => name.startsWith(tag))).toEqual([]);
  }, 60_000);

  it(`runs at most MCP_MAX_TASKS_PER_CREDENTIAL (${MAX_TASKS}) tasks of one credential, across instances`, async () => {
    const call = await legacySession(deployment.first, LIMITED);
    const other = await legacySession(deployment.second, LIMITED);
    const running: string[] = [];
    for (let i = 0; i < MAX_TASKS; i += 1) {
      const server = i % 2 === 0 ? call : other;
      const created = resultOf(
        await server('tools/call', { name: 'run_command', arguments: { command: markedSleep(310 + i) }, task: {} }),
      );
      running.push(created.task.taskId);
    }
    const refused = errorOf(
      await other('tools/call', { name: 'run_command', arguments: { command: 'true' }, task: {} }),
    );
    expect(refused?.code).toBe(-32600);
    expect(refused?.message).toContain('MCP_MAX_TASKS_PER_CREDENTIAL');
    // Another credential is not held back by this one.
    const free = await legacySession(deployment.second, B);
    expect(
      resultOf(await free('tools/call', { name: 'run_command', arguments: { command: 'true' }, task: {} })).task,
    ).toMatchObject({ status: 'working' });
    // One ended makes room.
    expect(resultOf(await other('tasks/cancel', { taskId: running[0] })).status).toBe('cancelled');
    const again = resultOf(
      await other('tools/call', { name: 'run_command', arguments: { command: 'true' }, task: {} }),
    );
    expect(again.task.status).toBe('working');
    for (const taskId of running.slice(1)) await call('tasks/cancel', { taskId });
  }, 60_000);
});
