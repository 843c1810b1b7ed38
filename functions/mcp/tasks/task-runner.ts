/**
 * MCP tasks (tasks/ wire: protocol/task-methods.ts): a tool call that runs on after its request was answered, its
 * state kept in the task store (task-store.ts) where every instance reads it. The instance that accepted the call
 * runs it; any instance answers for it, and a cancel given to any of them reaches it: the running instance looks for
 * the task's end every ALIVE_CHECK_MS and stops the call when something else ended it, and it renews the task's sign
 * of life; a working task whose instance stopped renewing it for LOST_AFTER_MS is lost and ends as failed.
 *
 * Ids are signed for the credential (sessions/session-id.ts, purpose `task`): another credential's id, or a changed
 * one, is not found, and none can be guessed. A task is deleted once its ttl has passed since it was made, stopped
 * first if it still runs. At most MCP_MAX_TASKS_PER_CREDENTIAL of one credential's tasks run at once.
 */
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

import type { Clock } from '../clock';
import { describeError } from '../errors';
import type { Logger } from '../log';
import { toOwnerTag } from '../sandbox/sandbox-name';
import type { SignedIdCodec } from '../sessions/session-id';
import { type TaskOutcome, type TaskState, type TaskStore, type TerminalStatus, toTaskTag } from './task-store';

/** How often the running instance looks for the task's end (a cancel elsewhere, the ttl). */
const ALIVE_CHECK_MS = 2_000;
/** How often it renews the task's sign of life. */
const ALIVE_EVERY_MS = 30_000;
/** A working task whose sign of life is older than this ran on an instance that is gone. */
export const LOST_AFTER_MS = 5 * 60_000;
/** How often a client is asked to poll, and a waiting `tasks/result` looks (when another instance runs the task). */
export const POLL_MS = 1_000;
/** A cancelled task's call is given this long to answer (its command killed) before the task is answered without. */
const CANCELLED_ANSWER_WAIT_MS = 10_000;
/** The most tasks one credential may keep (running or ended, until their ttl). */
export const MAX_TASKS_KEPT = 1_000;
/** How long a shutdown waits for the calls of its running tasks to stop. */
const STOP_WAIT_MS = 10_000;
/** How often a start also deletes every credential's expired tasks (a credential may never come back for its own). */
const SWEEP_EVERY_MS = 3_600_000;

/** What a task's call gets in place of its request's: its cancellation, its time, and where its output goes. */
export interface TaskControls {
  readonly signal: AbortSignal;
  /** The longest its timeout may be: the task's ttl. */
  readonly maxTimeoutMs: number;
  /** Live output, for whoever waits on the task here (`outcome`'s `onOutput`). */
  readonly onOutput: (text: string) => void;
}

/** A task as the wire shows it. */
export interface TaskView extends TaskState {
  /** The signed task id. */
  readonly id: string;
}

/** A call that ended in time to be answered as one (`done`), or the task it became. */
export type StartedTask = { readonly done: Record<string, unknown> } | { readonly task: TaskView };

export interface StartOptions {
  readonly principal: string;
  readonly tool: string;
  /** The ttl the client asked for; capped, and defaulted when absent. */
  readonly ttlMs?: number;
  /**
   * Wait this long for the call before it becomes a task: one that ends sooner is answered as a plain call and leaves
   * no task. Meanwhile the request's signal (`requestSignal`) cancels it. @default 0: a task at once
   */
  readonly graceMs?: number;
  readonly requestSignal?: AbortSignal;
  /** The call's progress token: its task's live output goes out with it (`outcome`). @default none */
  readonly progressToken?: string | number;
}

export interface TaskRunnerOptions {
  /** Where tasks are kept; `undefined` when there is no such place (`offReason` says why). */
  readonly store: TaskStore | undefined;
  readonly offReason?: string;
  readonly ids: SignedIdCodec;
  readonly clock: Clock;
  /** MCP_MAX_TASKS_PER_CREDENTIAL. */
  readonly maxRunningPerCredential: number;
  /** The longest ttl granted (MCP_SESSION_MAX_AGE_S: a task id is signed as session ids are). */
  readonly maxTtlMs: number;
  readonly defaultTtlMs: number;
  readonly logger: Logger;
  /** How often a running task's end is looked for, in real time (tests shorten it). @default ALIVE_CHECK_MS */
  readonly aliveCheckMs?: number;
}

export interface TaskRunner {
  /** Why tasks are off, when they are. */
  readonly offReason: string | undefined;
  /**
   * Runs `call` as a task of `principal`: resolves once the task is kept where every instance reads it (or, within
   * the grace, with the call's answer). Refused (a ProtocolError) when the credential runs its most tasks already.
   */
  start(
    options: StartOptions,
    call: (controls: TaskControls) => Promise<Record<string, unknown>>,
  ): Promise<StartedTask>;
  /** The task `id` names for `principal`, or `undefined` (unknown, expired, another credential's, not an id). */
  get(principal: string, id: string): Promise<TaskView | undefined>;
  /**
   * Waits until the task ended (or `signal` aborts), then what its call answered. Meanwhile, when the task runs here
   * and its call carried a progress token, its live output goes to the sink `onOutput` makes.
   */
  outcome(
    principal: string,
    id: string,
    signal: AbortSignal,
    onOutput?: (progressToken: string | number) => (text: string) => void,
  ): Promise<{ task: TaskView; outcome: TaskOutcome }>;
  /** The credential's tasks, oldest first. */
  list(principal: string): Promise<TaskView[]>;
  /** Cancels the task: resolves with it, and the status it had already ended with when it had. */
  cancel(principal: string, id: string): Promise<{ task: TaskView; ended?: TerminalStatus } | undefined>;
  /** Stops the tasks running here (shutdown): each ends as failed, for another instance's client to see. */
  stopAll(): Promise<void>;
}

/** A task running in this process. */
interface Running {
  readonly state: TaskState;
  readonly controller: AbortController;
  readonly progressToken?: string | number;
  /** Where its live output goes: the sinks of the waiters on it here. */
  readonly sinks: Set<(text: string) => void>;
  /** Gives its credential's slot back (once): its call ended, or it was cancelled. */
  release?: () => void;
  /** Settles once its outcome and end are kept. */
  readonly finished: Promise<void>;
}

export function createTaskRunner(options: TaskRunnerOptions): TaskRunner {
  const { store, ids, clock, logger } = options;
  const running = new Map<string, Running>();
  /** Each credential's admissions, one after another, so that two starts cannot both take its last slot here. */
  const admitting = new Map<string, Promise<unknown>>();
  /**
   * Each credential's tasks admitted here whose call has not ended (in its grace, or running): the slots they hold
   * are counted from here, not from a listing that may have been read before their state was written.
   */
  const reserved = new Map<string, number>();
  let sweptMs = Number.NEGATIVE_INFINITY;
  const reserve = (owner: string, by: 1 | -1): void => {
    const count = (reserved.get(owner) ?? 0) + by;
    if (count > 0) reserved.set(owner, count);
    else reserved.delete(owner);
  };

  const keyOf = (principal: string, id: string): string | undefined => {
    const check = ids.verify('task', id, principal, clock.now());
    return check.ok ? check.key : undefined;
  };
  const viewOf = (id: string, state: TaskState): TaskView => ({ ...state, id });

  /** The state, with a lost or expired task dealt with (ended, or deleted). */
  const current = async (owner: string, tag: string): Promise<TaskState | undefined> => {
    const state = await store?.get(owner, tag);
    return state === undefined ? undefined : settled(state);
  };

  /** A state as read, with a lost or expired task dealt with (ended, or deleted). */
  const settled = async (state: TaskState): Promise<TaskState | undefined> => {
    if (store === undefined) return undefined;
    const { owner, tag } = state;
    const now = clock.now();
    if (now >= state.createdMs + state.ttlMs) {
      running.get(tag)?.controller.abort();
      await store.remove(owner, tag);
      return undefined;
    }
    if (state.status === 'working' && !running.has(tag) && now - state.aliveMs > LOST_AFTER_MS) {
      const message = 'The server instance that ran this task stopped before it ended; its work may be lost.';
      await store.putOutcome(owner, tag, { error: { code: ProtocolErrorCode.InternalError, message } });
      const status = await store.end(state, 'failed', { message }, now);
      return { ...state, status, message };
    }
    return state;
  };

  /** Keeps the call's answer and ends the task with it (unless something ended it first). */
  const finish = async (state: TaskState, outcome: TaskOutcome): Promise<void> => {
    if (store === undefined) return;
    // Deleted meanwhile (its ttl passed): nothing to keep, and nothing may bring it back.
    if ((await store.get(state.owner, state.tag)) === undefined) return;
    await store.putOutcome(state.owner, state.tag, outcome);
    const status: TerminalStatus = 'error' in outcome ? 'failed' : 'completed';
    const toolError = 'result' in outcome && outcome.result.isError === true;
    const message =
      'error' in outcome ? outcome.error.message.slice(0, 200) : toolError ? 'The tool reported an error.' : undefined;
    await store.end(state, status, { message, toolError }, clock.now());
  };

  /** Watches a running task: its sign of life renewed, its end by another hand or its ttl stopping the call. */
  const watch = (state: TaskState, controller: AbortController, answered: () => boolean): (() => void) => {
    let lastAliveMs = clock.now();
    let busy = false;
    const timer = setInterval(() => {
      if (busy || store === undefined) return;
      busy = true;
      void (async () => {
        const now = clock.now();
        const seen = await store.get(state.owner, state.tag);
        if (seen === undefined || seen.status !== 'working' || now >= state.createdMs + state.ttlMs) {
          // A call that answered is not stopped: its own end may be what the watcher just saw.
          if (!answered()) controller.abort();
          return;
        }
        if (now - lastAliveMs >= ALIVE_EVERY_MS) {
          lastAliveMs = now;
          await store.put({ ...seen, aliveMs: now });
        }
      })()
        .catch((err: unknown) => logger.warn('task state not renewed', { error: describeError(err) }))
        .finally(() => {
          busy = false;
        });
    }, options.aliveCheckMs ?? ALIVE_CHECK_MS);
    timer.unref();
    return () => clearInterval(timer);
  };

  /** The task's end and outcome, looked for until there (its call's end here, or every POLL_MS). */
  const waitForOutcome = async (
    owner: string,
    tag: string,
    id: string,
    signal: AbortSignal,
  ): Promise<{ task: TaskView; outcome: TaskOutcome }> => {
    if (store === undefined) throw taskNotFound();
    let endedSinceMs: number | undefined;
    for (;;) {
      signal.throwIfAborted();
      const state = await current(owner, tag);
      if (state === undefined) throw taskNotFound();
      if (state.status !== 'working') {
        const outcome = await store.getOutcome(owner, tag);
        if (outcome !== undefined) return { task: viewOf(id, state), outcome };
        // Ended by a cancel, here or elsewhere: its call answers once its work is stopped (elsewhere, within
        // ALIVE_CHECK_MS and the kill), unless the instance that ran it is gone too.
        endedSinceMs ??= clock.now();
        if (clock.now() - endedSinceMs >= CANCELLED_ANSWER_WAIT_MS)
          return {
            task: viewOf(id, state),
            outcome: { error: { code: ProtocolErrorCode.InvalidRequest, message: `Task ${state.status}.` } },
          };
      }
      const here = running.get(tag);
      await (here === undefined ? clock.sleep(POLL_MS) : Promise.race([here.finished, clock.sleep(POLL_MS)]));
    }
  };

  const start: TaskRunner['start'] = async (start, call) => {
    if (store === undefined) throw new ProtocolError(ProtocolErrorCode.MethodNotFound, taskModeOff(options.offReason));
    const owner = toOwnerTag(start.principal);
    if (clock.now() - sweptMs >= SWEEP_EVERY_MS) {
      sweptMs = clock.now();
      void store.sweep(sweptMs).catch((err: unknown) => logger.warn('tasks not swept', { error: describeError(err) }));
    }
    // Counted one after another within the instance, with the slots of tasks not kept yet; across instances two
    // starts at the same moment may each miss the other.
    const admitted = (admitting.get(owner) ?? Promise.resolve()).then(async () => {
      const tasks = await store.list(owner, clock.now());
      const elsewhere = tasks.filter(
        (t) => t.status === 'working' && !running.has(t.tag) && clock.now() - t.aliveMs <= LOST_AFTER_MS,
      );
      const held = elsewhere.length + (reserved.get(owner) ?? 0);
      if (held >= options.maxRunningPerCredential) throw tooMany(options.maxRunningPerCredential);
      if (tasks.length >= MAX_TASKS_KEPT) throw tooManyKept();
      reserve(owner, 1);
    });
    const turn = admitted.catch(() => undefined);
    admitting.set(owner, turn);
    void turn.then(() => {
      if (admitting.get(owner) === turn) admitting.delete(owner);
    });
    await admitted;
    let started: StartedTask | undefined;
    try {
      started = await run(owner, start, call);
      return started;
    } finally {
      // A task's slot is given back once its call ended or it was cancelled here; a call answered within its
      // grace, or a start that failed, gives it back now.
      const here = started !== undefined && 'task' in started ? running.get(started.task.tag) : undefined;
      let held = true;
      const release = () => {
        if (held) reserve(owner, -1);
        held = false;
      };
      if (here === undefined) release();
      else {
        here.release = release;
        void here.finished.then(release);
      }
    }
  };

  /** Runs an admitted start: its call, its grace, then the task kept and watched. */
  const run = async (
    owner: string,
    start: StartOptions,
    call: (controls: TaskControls) => Promise<Record<string, unknown>>,
  ): Promise<StartedTask> => {
    if (store === undefined) throw new Error('tasks are off');

    const ttlMs = Math.min(Math.max(start.ttlMs ?? options.defaultTtlMs, 1_000), options.maxTtlMs);
    const controller = new AbortController();
    const sinks = new Set<(text: string) => void>();
    const controls: TaskControls = {
      signal: controller.signal,
      maxTimeoutMs: ttlMs,
      onOutput: (text) => {
        for (const sink of sinks) sink(text);
      },
    };
    // Until the call becomes a task, the request's end (the client gone) cancels it.
    const onRequestAbort = () => controller.abort();
    start.requestSignal?.addEventListener('abort', onRequestAbort, { once: true });
    const answer = call(controls).then(
      (result): TaskOutcome => ({ result }),
      (err: unknown): TaskOutcome => ({ error: toRpcError(err, logger, start.tool) }),
    );

    const graceMs = start.graceMs ?? 0;
    if (graceMs > 0) {
      const early = await Promise.race([answer, clock.sleep(graceMs).then(() => undefined)]);
      if (early !== undefined) {
        start.requestSignal?.removeEventListener('abort', onRequestAbort);
        if ('error' in early) throw new ProtocolError(early.error.code, early.error.message);
        return { done: early.result };
      }
    }
    start.requestSignal?.removeEventListener('abort', onRequestAbort);

    const now = clock.now();
    const minted = ids.mint('task', start.principal, now);
    const tag = toTaskTag(minted.key);
    const state: TaskState = {
      tag,
      owner,
      key: minted.key,
      tool: start.tool,
      status: 'working',
      createdMs: now,
      updatedMs: now,
      ttlMs,
      pollMs: POLL_MS,
      aliveMs: now,
    };
    try {
      await store.put(state);
    } catch (err: unknown) {
      controller.abort();
      throw err;
    }
    let answered = false;
    void answer.then(() => {
      answered = true;
    });
    const unwatch = watch(state, controller, () => answered);
    const finished = answer
      .then((outcome) => finish(state, outcome))
      .catch((err: unknown) => logger.error('task outcome not kept', { tool: start.tool, error: describeError(err) }))
      .finally(() => {
        unwatch();
        running.delete(tag);
      });
    running.set(tag, {
      state,
      controller,
      finished,
      sinks,
      ...(start.progressToken !== undefined && { progressToken: start.progressToken }),
    });
    logger.info('task started', { tool: start.tool, task: tag.slice(0, 12), ttl_ms: ttlMs });
    return { task: viewOf(minted.id, state) };
  };

  return {
    offReason: store === undefined ? taskModeOff(options.offReason) : undefined,
    start,
    async get(principal, id) {
      const key = keyOf(principal, id);
      if (key === undefined) return undefined;
      const state = await current(toOwnerTag(principal), toTaskTag(key));
      return state === undefined ? undefined : viewOf(id, state);
    },
    async outcome(principal, id, signal, onOutput) {
      const key = keyOf(principal, id);
      if (key === undefined || store === undefined) throw taskNotFound();
      const owner = toOwnerTag(principal);
      const tag = toTaskTag(key);
      const here = running.get(tag);
      const sink =
        here?.progressToken === undefined || onOutput === undefined ? undefined : onOutput(here.progressToken);
      if (sink !== undefined) here?.sinks.add(sink);
      try {
        return await waitForOutcome(owner, tag, id, signal);
      } finally {
        if (sink !== undefined) here?.sinks.delete(sink);
      }
    },
    async list(principal) {
      if (store === undefined) return [];
      const owner = toOwnerTag(principal);
      const tasks = await store.list(owner, clock.now());
      const views: TaskView[] = [];
      for (const task of tasks.sort((a, b) => a.createdMs - b.createdMs || a.tag.localeCompare(b.tag))) {
        const state = await settled(task);
        // The id, signed again from its random part and issue time: the same text the task was given.
        if (state !== undefined) views.push(viewOf(ids.sign('task', state.key, principal, state.createdMs), state));
      }
      return views;
    },
    async cancel(principal, id) {
      const key = keyOf(principal, id);
      if (key === undefined || store === undefined) return undefined;
      const state = await current(toOwnerTag(principal), toTaskTag(key));
      if (state === undefined) return undefined;
      if (state.status !== 'working') return { task: viewOf(id, state), ended: state.status };
      const status = await store.end(state, 'cancelled', { message: 'Cancelled by the client.' }, clock.now());
      // Here, at once (its slot with it); elsewhere, the running instance sees the end within ALIVE_CHECK_MS.
      const here = running.get(state.tag);
      here?.controller.abort();
      here?.release?.();
      const after = (await store.get(state.owner, state.tag)) ?? { ...state, status, updatedMs: clock.now() };
      return status === 'cancelled' ? { task: viewOf(id, after) } : { task: viewOf(id, after), ended: status };
    },
    async stopAll() {
      const all = [...running.values()];
      const message = 'The server instance that ran it shut down; its work was stopped.';
      const stopped = Promise.allSettled(
        all.map(async (task) => {
          if (store !== undefined) await store.end(task.state, 'failed', { message }, clock.now());
          task.controller.abort();
          await task.finished;
        }),
      );
      // A call that does not stop when told is not waited for past STOP_WAIT_MS.
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref())]);
    },
  };
}

/** The error a call's failure is kept as: its own JSON-RPC error, or an internal error (logged, never shown). */
function toRpcError(err: unknown, logger: Logger, tool: string): { code: number; message: string } {
  if (err instanceof ProtocolError) return { code: err.code, message: err.message };
  logger.error('task failed unexpectedly', { tool, error: describeError(err) });
  return { code: ProtocolErrorCode.InternalError, message: `Internal error in ${tool}; the failure was logged.` };
}

function taskModeOff(reason: string | undefined): string {
  return `Tasks are off on this server${reason === undefined ? '' : `: ${reason}`}. Call the tool without a task.`;
}

export function taskNotFound(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, 'Task not found: unknown, expired, or not yours.');
}

function tooMany(max: number): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidRequest,
    `This credential already runs ${max} tasks (MCP_MAX_TASKS_PER_CREDENTIAL); wait for one to end or cancel one ` +
      '(tasks/cancel), then try again.',
  );
}

function tooManyKept(): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidRequest,
    `This credential keeps ${MAX_TASKS_KEPT} tasks already; they are deleted once their ttl has passed.`,
  );
}
