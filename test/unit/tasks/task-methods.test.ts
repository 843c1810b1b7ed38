/**
 * The tasks methods on the wire (protocol/task-methods.ts), served by real SDK servers (createProtocolServer behind
 * the SDK's createMcpHandler, as protocol/mcp-server.ts serves them) over a real task runner and store: 2025-11-25
 * `tasks/list` pages of TASKS_PAGE with cursors (an unreadable cursor is -32602), `tasks/cancel` of a terminal task
 * refused as the spec words it, `tools/call` with `task` answered with a task whose `tasks/result` is the call's own
 * result; 2026-07-28 `tasks/get` with the result inline for a client that named the extension, -32021 otherwise.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  createMcpHandler,
  type McpHttpHandler,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type Tool,
} from '@modelcontextprotocol/server';

import { SILENT_LOGGER } from '../../../functions/mcp/log';
import { createProtocolServer } from '../../../functions/mcp/protocol/server-factory';
import {
  legacyTaskMethods,
  modernTaskMethods,
  TASKS_EXTENSION,
  TASKS_PAGE,
} from '../../../functions/mcp/protocol/task-methods';
import { HTTP_PROTOCOL_VERSIONS } from '../../../functions/mcp/protocol/versions';
import { createSignedIdCodec } from '../../../functions/mcp/sessions/session-id';
import { createTaskRunner, type TaskRunner, type TaskView } from '../../../functions/mcp/tasks/task-runner';
import { createTaskStore } from '../../../functions/mcp/tasks/task-store';
import { createFakeClock, type FakeClock } from '../../support/fake-clock';

const SECRET = 'task-methods-secret-of-at-least-32-bytes-01';
const T0 = Date.parse('2030-01-01T00:00:00Z');
const ALICE = 'token:alice';
const BOB = 'token:bob';
const TOOL = 'run_command';
const RESULT = { content: [{ type: 'text' as const, text: 'built' }], structuredContent: { exit_code: 0 } };
const TOOLS: Tool[] = [{ name: TOOL, inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } }];

// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers of several shapes.
type Json = any;

let root: string;
let clock: FakeClock;
let runner: TaskRunner;
let handlers: McpHttpHandler[];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'mcp-task-methods-'));
  clock = createFakeClock(T0, { frozen: true });
  runner = createTaskRunner({
    store: createTaskStore(root),
    ids: createSignedIdCodec(SECRET, 3_600_000),
    clock,
    maxRunningPerCredential: 100,
    maxTtlMs: 3_600_000,
    defaultTtlMs: 600_000,
    logger: SILENT_LOGGER,
    aliveCheckMs: 20,
  });
  handlers = [];
});

afterEach(async () => {
  await runner.stopAll();
  await Promise.all(handlers.map((handler) => handler.close()));
  rmSync(root, { recursive: true, force: true });
});

/** The SDK's handler, both eras, with the tasks of `principal`. */
function serve(principal: string): McpHttpHandler {
  const deps = { runner, principal: () => principal, taskTools: new Set([TOOL]) };
  const handler = createMcpHandler(
    ({ era }) =>
      createProtocolServer({
        tools: TOOLS,
        call: async () => RESULT,
        resources: { templates: [], list: async () => ({ resources: [] }), read: async () => ({ contents: [] }) },
        versions: HTTP_PROTOCOL_VERSIONS,
        tasks: era === 'legacy' ? legacyTaskMethods(deps) : modernTaskMethods(deps),
      }),
    // As protocol/mcp-server.ts serves: always a stream (no keep-alive comments here).
    { responseMode: 'sse', keepAliveMs: 0 },
  );
  handlers.push(handler);
  return handler;
}

/** The one JSON-RPC message of an answer (an SSE stream's last `data:` line, or the JSON body). */
async function messageOf(res: Response): Promise<Json> {
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const data = text.split('\n').filter((line) => line.startsWith('data: '));
  return JSON.parse((data.at(-1) ?? '').slice('data: '.length));
}

const post = (headers: Record<string, string>, body: Json): Request =>
  new Request('http://localhost/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });

/** A 2025-11-25 request (served statelessly, as inside a session). */
async function legacy(handler: McpHttpHandler, method: string, params: Json = {}): Promise<Json> {
  const body = { jsonrpc: '2.0', id: 1, method, params };
  return messageOf(await handler.fetch(post({ 'mcp-protocol-version': '2025-11-25' }, body), { parsedBody: body }));
}

/** A 2026-07-28 request, the extension named in its client capabilities unless `declare` is false. */
async function modern(handler: McpHttpHandler, method: string, params: Json, declare = true): Promise<Json> {
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'tasks-unit', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': declare ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  };
  const body = { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta } };
  const headers = {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(typeof params.taskId === 'string' && { 'mcp-name': params.taskId }),
  };
  return messageOf(await handler.fetch(post(headers, body), { parsedBody: body }));
}

/** A task of `principal` whose call answers `answer` (its end awaited); without, one that answers once stopped. */
async function taskOf(principal: string, answer?: () => Promise<Record<string, unknown>>): Promise<TaskView> {
  const started = await runner.start({ principal, tool: TOOL }, (controls) =>
    answer !== undefined
      ? answer()
      : new Promise((resolve) => controls.signal.addEventListener('abort', () => resolve(RESULT), { once: true })),
  );
  if (!('task' in started)) throw new Error('answered at once');
  if (answer !== undefined) await runner.outcome(principal, started.task.id, new AbortController().signal);
  return started.task;
}

describe('2025-11-25', () => {
  it(`pages tasks/list by ${TASKS_PAGE}, oldest first, with cursors; an unreadable cursor is -32602`, async () => {
    const made: string[] = [];
    for (let i = 0; i < 2 * TASKS_PAGE + 5; i += 1) {
      // Some made at the same millisecond: the cursor orders them by tag.
      if (i % 3 === 0) clock.advance(7);
      made.push((await taskOf(ALICE, async () => RESULT)).id);
    }
    const other = await taskOf(BOB, async () => RESULT);
    const alice = serve(ALICE);
    const pages: Json[] = [];
    let cursor: string | undefined;
    do {
      const answer = await legacy(alice, 'tasks/list', cursor === undefined ? {} : { cursor });
      pages.push(answer.result);
      cursor = answer.result.nextCursor;
    } while (cursor !== undefined && pages.length < 10);
    expect(pages.map((page) => page.tasks.length)).toEqual([TASKS_PAGE, TASKS_PAGE, 5]);
    expect(pages.at(-1).nextCursor).toBeUndefined();
    const listed = pages.flatMap((page) => page.tasks.map((task: Json) => task.taskId));
    expect(listed).toEqual((await runner.list(ALICE)).map((task) => task.id));
    expect([...listed].sort()).toEqual([...made].sort());
    expect(pages[0].tasks[0]).toEqual({
      taskId: expect.any(String),
      status: 'completed',
      createdAt: new Date(T0 + 7).toISOString(),
      lastUpdatedAt: expect.any(String),
      ttl: 600_000,
      pollInterval: 1_000,
    });
    // Another credential's list is its own.
    expect((await legacy(serve(BOB), 'tasks/list')).result).toEqual({
      tasks: [expect.objectContaining({ taskId: other.id })],
    });

    const garbage = ['bm90IGEgY3Vyc29y', '', '!!!', Buffer.from(`${T0}:${'z'.repeat(32)}`).toString('base64url')];
    for (const bad of garbage)
      expect({ bad, error: (await legacy(alice, 'tasks/list', { cursor: bad })).error }).toEqual({
        bad,
        error: { code: ProtocolErrorCode.InvalidParams, message: 'Invalid cursor for tasks/list.' },
      });
  });

  it('refuses to cancel a terminal task with the spec’s words, and cancels a working one', async () => {
    const alice = serve(ALICE);
    const completed = await taskOf(ALICE, async () => RESULT);
    const toolError = await taskOf(ALICE, async () => ({ ...RESULT, isError: true }));
    const failed = await taskOf(ALICE, async () => {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'bad');
    });
    const working = await taskOf(ALICE);
    const refusal = (status: string) => ({
      code: ProtocolErrorCode.InvalidParams,
      message: `Cannot cancel task: already in terminal status '${status}'.`,
    });
    expect((await legacy(alice, 'tasks/cancel', { taskId: completed.id })).error).toEqual(refusal('completed'));
    // A result with isError is a failed task in this revision's words.
    expect((await legacy(alice, 'tasks/cancel', { taskId: toolError.id })).error).toEqual(refusal('failed'));
    expect((await legacy(alice, 'tasks/cancel', { taskId: failed.id })).error).toEqual(refusal('failed'));
    expect((await legacy(alice, 'tasks/cancel', { taskId: working.id })).result).toMatchObject({
      taskId: working.id,
      status: 'cancelled',
    });
    expect((await legacy(alice, 'tasks/cancel', { taskId: working.id })).error).toEqual(refusal('cancelled'));
    // Unknown, or another credential's: not found.
    expect((await legacy(alice, 'tasks/cancel', { taskId: 'nope' })).error?.code).toBe(ProtocolErrorCode.InvalidParams);
    expect((await legacy(serve(BOB), 'tasks/cancel', { taskId: completed.id })).error?.code).toBe(
      ProtocolErrorCode.InvalidParams,
    );
    expect((await legacy(alice, 'tasks/get', { taskId: toolError.id })).result).toMatchObject({
      status: 'failed',
      statusMessage: 'The tool reported an error.',
    });
  });

  it('answers a tools/call with task by a task, whose tasks/result is the call’s result', async () => {
    const alice = serve(ALICE);
    const created = await legacy(alice, 'tools/call', { name: TOOL, arguments: {}, task: { ttl: 60_000 } });
    expect(created.result).toEqual({
      content: [],
      task: expect.objectContaining({ taskId: expect.any(String), status: 'working', ttl: 60_000 }),
    });
    const taskId = created.result.task.taskId as string;
    expect((await legacy(alice, 'tasks/result', { taskId })).result).toEqual({
      ...RESULT,
      _meta: { [RELATED_TASK_META_KEY]: { taskId } },
    });
    expect((await legacy(alice, 'tasks/get', { taskId })).result).toMatchObject({ taskId, status: 'completed' });
    // A ttl that is not a positive integer is Invalid Params; so is a task of a tool that does not run as one.
    const bad = await legacy(alice, 'tools/call', { name: TOOL, arguments: {}, task: { ttl: -1 } });
    expect(bad.error?.code).toBe(ProtocolErrorCode.InvalidParams);
    expect((await runner.list(ALICE)).map((task) => task.id)).toEqual([taskId]);
  });
});

describe('2026-07-28', () => {
  it('tasks/get gives an ended task’s result inline (resultType complete) to a declaring client', async () => {
    const alice = serve(ALICE);
    const completed = await taskOf(ALICE, async () => RESULT);
    const failed = await taskOf(ALICE, async () => {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'No such file.');
    });
    const working = await taskOf(ALICE);
    expect((await modern(alice, 'tasks/get', { taskId: completed.id })).result).toMatchObject({
      taskId: completed.id,
      status: 'completed',
      ttlMs: 600_000,
      pollIntervalMs: 1_000,
      result: { ...RESULT, resultType: 'complete' },
    });
    expect((await modern(alice, 'tasks/get', { taskId: failed.id })).result).toMatchObject({
      status: 'failed',
      error: { code: ProtocolErrorCode.InvalidParams, message: 'No such file.' },
    });
    const running = (await modern(alice, 'tasks/get', { taskId: working.id })).result;
    expect(running).toMatchObject({ taskId: working.id, status: 'working' });
    expect(running.result).toBeUndefined();
    expect((await modern(alice, 'tasks/get', { taskId: 'nope' })).error?.code).toBe(ProtocolErrorCode.InvalidParams);
    expect((await modern(serve(BOB), 'tasks/get', { taskId: completed.id })).error?.code).toBe(
      ProtocolErrorCode.InvalidParams,
    );
    expect(await modern(alice, 'tasks/cancel', { taskId: working.id })).toMatchObject({ result: {} });
    expect((await runner.get(ALICE, working.id))?.status).toBe('cancelled');
  });

  it('tasks/get gives a task failed by a shutdown its reason as the error, though its call answered', async () => {
    const alice = serve(ALICE);
    // A call that answers (as a cancelled command does) once the shutdown stops it.
    const task = await taskOf(ALICE);
    await runner.stopAll();
    const got = (await modern(alice, 'tasks/get', { taskId: task.id })).result;
    expect(got).toMatchObject({
      status: 'failed',
      error: { code: ProtocolErrorCode.InternalError, message: expect.stringContaining('shut down') },
    });
    expect(got.result).toBeUndefined();
  });

  it('answers -32021 to a client that did not name the extension, and changes nothing', async () => {
    const alice = serve(ALICE);
    const working = await taskOf(ALICE);
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const answer = await modern(alice, method, { taskId: working.id }, false);
      expect({ method, code: answer.error?.code }).toEqual({
        method,
        code: ProtocolErrorCode.MissingRequiredClientCapability,
      });
    }
    expect((await runner.get(ALICE, working.id))?.status).toBe('working');
  });
});
