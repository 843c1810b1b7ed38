/**
 * MCP tasks on the wire, in each revision's words; what a task is and does is tasks/task-runner.ts's.
 *
 * - **2025-11-25** (core, experimental): the server declares `capabilities.tasks`; `run_command` and `run_code` say
 *   `execution.taskSupport: optional`; a `tools/call` with `params.task` (`{ ttl }`) is answered at once with a
 *   `CreateTaskResult` (`{ task }`), then `tasks/get`, `tasks/result` (waits for the end, then the call's own result
 *   or error, with the related-task `_meta`), `tasks/list` (pages of TASKS_PAGE) and `tasks/cancel`. A result with
 *   `isError` is a `failed` task, as that revision says.
 * - **2026-07-28** (the `io.modelcontextprotocol/tasks` extension): the server lists the extension in its
 *   capabilities; a client that names it in a request's capabilities may get a task instead of a result, and does
 *   for `run_command` and `run_code` calls still running after MODERN_GRACE_MS (quicker ones are answered as they
 *   are); the flat `CreateTaskResult` (`resultType: task`, `ttlMs`, `pollIntervalMs`), `tasks/get` with the result or
 *   error inline once it ended, `tasks/cancel` and `tasks/update` acknowledged. A client that did not name the
 *   extension gets -32021 for them. The SDK checks `Mcp-Name` and answers `tasks/result` and `tasks/list` with -32601.
 *
 * The SDK (2.x) has no task runtime of its own: these are its explicit-schema custom handlers. It insists on a
 * `content` array beside a task in a `tools/call` result, so an empty one goes along.
 */
import {
  type CallToolResult,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type Server,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import * as z from 'zod';

import type { TaskControls, TaskRunner, TaskView } from '../tasks/task-runner';
import { createProgressForwarder, type ProgressForwarder } from '../tools/progress';
import { LEGACY_TASKS_CAPABILITY } from './server-identity';
import { taskNotFound } from '../tasks/task-runner';
import type { TaskOutcome } from '../tasks/task-store';

/** The 2026-07-28 extension's id. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** Tasks per `tasks/list` page. */
export const TASKS_PAGE = 20;
/** A 2026-07-28 call that ends within this is answered as a plain call, with no task. */
export const MODERN_GRACE_MS = 2_000;

/** What `tools/call` and the tasks methods of one era's server do with tasks. */
export interface EraTasks {
  /** Merged into the server's capabilities. */
  readonly capabilities: Record<string, object>;
  /**
   * A `tools/call` served as a task (or refused as one), or `undefined` for a plain call. `run` makes the call, with
   * the task's controls in place of the request's.
   */
  call(
    params: { name: string; task?: unknown },
    ctx: ServerContext,
    run: (controls: TaskControls) => Promise<CallToolResult>,
    server: Server,
  ): Promise<Record<string, unknown>> | undefined;
  /** Adds the tasks methods to `server`. */
  install(server: Server): void;
}

/** The runner, whose tasks are the `principal()`'s, and the tools that run as tasks. */
export interface TaskMethodsDeps {
  readonly runner: TaskRunner;
  readonly principal: () => string;
  readonly taskTools: ReadonlySet<string>;
}

const TASK_ID = z.looseObject({ taskId: z.string() });
const LIST = z.looseObject({ cursor: z.string().optional() });
const TASK_PARAM = z.looseObject({ ttl: z.number().int().positive().optional() });

/** The 2025-11-25 tasks. */
export function legacyTaskMethods({ runner, principal, taskTools }: TaskMethodsDeps): EraTasks {
  const on = runner.offReason === undefined;
  const found = (id: string): Promise<TaskView> => foundTask(runner, principal(), id);
  return {
    capabilities: on ? LEGACY_TASKS_CAPABILITY : {},
    call(params, ctx, run) {
      if (params.task === undefined) return undefined;
      return (async () => {
        if (!taskTools.has(params.name))
          throw new ProtocolError(
            ProtocolErrorCode.MethodNotFound,
            `${params.name} does not run as a task (its execution.taskSupport is forbidden); call it without task.`,
          );
        if (runner.offReason !== undefined) throw new ProtocolError(ProtocolErrorCode.MethodNotFound, runner.offReason);
        const asked = TASK_PARAM.safeParse(params.task);
        if (!asked.success)
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'task.ttl must be a positive integer.');
        const progressToken = ctx.mcpReq._meta?.progressToken;
        const started = await runner.start(
          {
            principal: principal(),
            tool: params.name,
            ttlMs: asked.data.ttl,
            ...(progressToken !== undefined && { progressToken }),
          },
          run,
        );
        if ('done' in started) return started.done;
        return { content: [], task: toLegacyTask(started.task) };
      })();
    },
    install(server) {
      if (!on) return;
      server.setRequestHandler('tasks/get', { params: TASK_ID }, async ({ taskId }) =>
        toLegacyTask(await found(taskId)),
      );
      server.setRequestHandler('tasks/result', { params: TASK_ID }, async ({ taskId }, ctx) => {
        // While it waits: the task's live output as progress of the call that made it, with the related task.
        let forwarder: ProgressForwarder | undefined;
        const related = { [RELATED_TASK_META_KEY]: { taskId } };
        const onOutput = (progressToken: string | number) => {
          forwarder = createProgressForwarder(({ progress, message }) =>
            ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken, progress, message, _meta: related },
            }),
          );
          const sink = forwarder;
          return (text: string) => sink.push(text);
        };
        const { task, outcome } = await runner
          .outcome(principal(), taskId, ctx.mcpReq.signal, onOutput)
          .finally(() => forwarder?.close());
        // Its end, on the stream that is open for it, before its result.
        await ctx.mcpReq
          .notify({ method: 'notifications/tasks/status', params: toLegacyTask(task) })
          .catch(() => undefined);
        if ('error' in outcome) throw new ProtocolError(outcome.error.code, outcome.error.message);
        const meta = (outcome.result._meta as Record<string, unknown> | undefined) ?? {};
        return { ...outcome.result, _meta: { ...meta, [RELATED_TASK_META_KEY]: { taskId } } };
      });
      server.setRequestHandler('tasks/list', { params: LIST }, async ({ cursor }) => {
        const all = await runner.list(principal());
        const from = cursor === undefined ? 0 : startOf(all, cursor);
        const page = all.slice(from, from + TASKS_PAGE);
        const last = page.at(-1);
        return {
          tasks: page.map(toLegacyTask),
          ...(last !== undefined && from + TASKS_PAGE < all.length && { nextCursor: cursorOf(last) }),
        };
      });
      server.setRequestHandler('tasks/cancel', { params: TASK_ID }, async ({ taskId }) => {
        const cancelled = await runner.cancel(principal(), taskId);
        if (cancelled === undefined) throw taskNotFound();
        if (cancelled.ended !== undefined)
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            `Cannot cancel task: already in terminal status '${legacyStatus(cancelled.task)}'.`,
          );
        return toLegacyTask(cancelled.task);
      });
    },
  };
}

/** The 2026-07-28 extension. */
export function modernTaskMethods({ runner, principal, taskTools }: TaskMethodsDeps): EraTasks {
  const on = runner.offReason === undefined;
  /** Whether the client named the extension in this request's capabilities (a server serves one request). */
  const declared = (server: Server): boolean =>
    server.getClientCapabilities()?.extensions?.[TASKS_EXTENSION] !== undefined;
  const requireDeclared = (server: Server): void => {
    if (!declared(server))
      throw new MissingRequiredClientCapabilityError({
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      });
  };
  const found = (id: string): Promise<TaskView> => foundTask(runner, principal(), id);
  return {
    capabilities: on ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
    call(params, ctx, run, server) {
      if (!on || !taskTools.has(params.name) || !declared(server)) return undefined;
      return (async () => {
        const started = await runner.start(
          { principal: principal(), tool: params.name, graceMs: MODERN_GRACE_MS, requestSignal: ctx.mcpReq.signal },
          run,
        );
        return 'done' in started ? started.done : { content: [], resultType: 'task', ...toModernTask(started.task) };
      })();
    },
    install(server) {
      if (!on) return;
      server.setRequestHandler('tasks/get', { params: TASK_ID }, async ({ taskId }, ctx) => {
        requireDeclared(server);
        const task = await found(taskId);
        if (task.status === 'working' || task.status === 'cancelled') return toModernTask(task);
        const { outcome } = await runner.outcome(principal(), taskId, ctx.mcpReq.signal);
        return { ...toModernTask(task), ...inline(task, outcome) };
      });
      server.setRequestHandler('tasks/cancel', { params: TASK_ID }, async ({ taskId }, ctx) => {
        requireDeclared(server);
        if ((await runner.cancel(principal(), taskId)) === undefined) throw taskNotFound();
        return {};
      });
      // No tool of ours asks for input: answers are acknowledged and, as the extension says of unknown keys, ignored.
      server.setRequestHandler('tasks/update', { params: TASK_ID }, async ({ taskId }, ctx) => {
        requireDeclared(server);
        await found(taskId);
        return {};
      });
    },
  };
}

/** The tools a task may run: those whose description says `execution.taskSupport: optional`. */
export function taskToolsOf(tools: readonly Tool[]): Set<string> {
  return new Set(tools.filter((tool) => tool.execution?.taskSupport === 'optional').map((tool) => tool.name));
}

/** The tools as 2026-07-28 describes them: that revision has no `execution` (a task is the server's choice). */
export function withoutTaskSupport(tools: readonly Tool[]): Tool[] {
  return tools.map(({ execution: _execution, ...tool }) => tool);
}

/** The task `id` names for `principal`; else Invalid Params, as both revisions answer an unknown task. */
async function foundTask(runner: TaskRunner, principal: string, id: string): Promise<TaskView> {
  const task = await runner.get(principal, id);
  if (task === undefined) throw taskNotFound();
  return task;
}

/** A 2025-11-25 task's status: a result with `isError` makes it `failed`. */
function legacyStatus(task: TaskView): string {
  return task.status === 'completed' && task.toolError === true ? 'failed' : task.status;
}

function toLegacyTask(task: TaskView): Record<string, unknown> {
  return {
    taskId: task.id,
    status: legacyStatus(task),
    ...(task.message !== undefined && { statusMessage: task.message }),
    createdAt: new Date(task.createdMs).toISOString(),
    lastUpdatedAt: new Date(task.updatedMs).toISOString(),
    ttl: task.ttlMs,
    pollInterval: task.pollMs,
  };
}

function toModernTask(task: TaskView): Record<string, unknown> {
  return {
    taskId: task.id,
    status: task.status,
    ...(task.message !== undefined && { statusMessage: task.message }),
    createdAt: new Date(task.createdMs).toISOString(),
    lastUpdatedAt: new Date(task.updatedMs).toISOString(),
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollMs,
  };
}

/**
 * An ended 2026-07-28 task's answer, inline: the tool's result (`completed`), a result of that revision (so with its
 * `resultType`, as the SDK puts on a call answered at once), or an error (`failed`): the call's own, or, for a task
 * failed by something else (its instance shut down or was lost) whose call still answered, why it failed.
 */
function inline(task: TaskView, outcome: TaskOutcome): Record<string, unknown> {
  if (task.status === 'failed')
    return {
      error:
        'error' in outcome
          ? outcome.error
          : { code: ProtocolErrorCode.InternalError, message: task.message ?? 'The task failed.' },
    };
  return 'result' in outcome ? { result: { ...outcome.result, resultType: 'complete' } } : { error: outcome.error };
}

/** A page's cursor: where its last task sorts (time made, then tag), so pages hold while tasks come and go. */
function cursorOf(task: TaskView): string {
  return Buffer.from(`${task.createdMs}:${task.tag}`).toString('base64url');
}

/** The index of the first task after `cursor`; an unreadable cursor is Invalid Params. */
function startOf(tasks: readonly TaskView[], cursor: string): number {
  const match = /^(\d{1,16}):([0-9a-f]{32})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (match === null) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor for tasks/list.');
  const [createdMs, tag] = [Number(match[1]), match[2] as string];
  const index = tasks.findIndex((t) => t.createdMs > createdMs || (t.createdMs === createdMs && t.tag > tag));
  return index === -1 ? tasks.length : index;
}
