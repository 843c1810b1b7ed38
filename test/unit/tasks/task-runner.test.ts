/**
 * The task runner (tasks/task-runner.ts) in-process, on a real task store in a temp directory, real signed ids and a
 * fake clock; calls are promises the test settles. What is proven: a task's id is signed for its credential alone;
 * the ttl is clamped; the call's answer, a ProtocolError, or any other failure (never shown) ends it; a cancel, here
 * or from another instance sharing the root, stops the call and wins over its later answer; a task whose instance
 * stopped renewing it is lost, one past its ttl is deleted (its call stopped); a credential runs at most
 * maxRunningPerCredential at once; a call that ends within the grace leaves no task; `outcome` waits, honours its
 * signal and gives up on a cancelled call that never answers; `list` gives the ids `start` gave, oldest first; and
 * `stopAll` ends what runs here. The watcher runs in real time (aliveCheckMs 20): its effects are polled for, with a
 * bound, never timed. Three rules were found broken by these tests and fixed: a start admitted past the cap when its
 * listing was read while another start was being kept; a terminal status read without its end's message and
 * toolError; a task deleted at its ttl written back by `stopAll`.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

import type { Clock } from '../../../functions/mcp/clock';
import { createLogger } from '../../../functions/mcp/log';
import { toOwnerTag } from '../../../functions/mcp/sandbox/sandbox-name';
import { createSignedIdCodec } from '../../../functions/mcp/sessions/session-id';
import {
  createTaskRunner,
  LOST_AFTER_MS,
  POLL_MS,
  type StartOptions,
  type TaskControls,
  type TaskRunner,
  type TaskRunnerOptions,
  type TaskView,
} from '../../../functions/mcp/tasks/task-runner';
import { createTaskStore, TASKS_DIR, type TaskStore, toTaskTag } from '../../../functions/mcp/tasks/task-store';
import { createFakeClock, type FakeClock } from '../../support/fake-clock';

const SECRET = 'task-runner-secret-of-at-least-32-bytes-0123';
const T0 = Date.parse('2030-01-01T00:00:00Z');
const MAX_TTL_MS = 3_600_000;
const DEFAULT_TTL_MS = 600_000;
const ALICE = 'token:alice';
const BOB = 'token:bob';
const TOOL = 'run_command';
const RESULT = { content: [{ type: 'text', text: 'done' }] };
const STOPPED = { content: [{ type: 'text', text: 'stopped' }] };
const CANCELLED_ANSWER_WAIT_MS = 10_000;

/** A call the test answers (or that answers `onAbort` once its signal aborts). */
interface Held {
  readonly call: (controls: TaskControls) => Promise<Record<string, unknown>>;
  /** What the call was given, once it was made. */
  controls: TaskControls | undefined;
  answer(result: Record<string, unknown>): void;
  fail(err: unknown): void;
}

let root: string;
let runners: TaskRunner[];
let held: Held[];
let logged: Array<Record<string, unknown>>;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'mcp-task-runner-'));
  runners = [];
  held = [];
  logged = [];
});

afterEach(async () => {
  // Every call still held answers, so that each runner's stopAll finds its calls ended.
  for (const call of held) call.answer(RESULT);
  await Promise.all(runners.map((runner) => runner.stopAll()));
  rmSync(root, { recursive: true, force: true });
});

const logger = createLogger(
  {
    write: (chunk, callback) => {
      if (chunk !== '') logged.push(JSON.parse(chunk) as Record<string, unknown>);
      callback?.();
      return true;
    },
  },
  'debug',
);

/** A runner on the shared root: another one made with the same clock is another instance of the deployment. */
function makeRunner(clock: Clock, over: Partial<TaskRunnerOptions> = {}): TaskRunner {
  const runner = createTaskRunner({
    store: createTaskStore(root),
    ids: createSignedIdCodec(SECRET, MAX_TTL_MS),
    clock,
    maxRunningPerCredential: 10,
    maxTtlMs: MAX_TTL_MS,
    defaultTtlMs: DEFAULT_TTL_MS,
    logger,
    aliveCheckMs: 20,
    ...over,
  });
  runners.push(runner);
  return runner;
}

/** A clock whose sleeps return at once and leave time where it is (time moves by `advance` alone). */
const frozenClock = (): FakeClock => createFakeClock(T0, { frozen: true });

/** A fake clock whose sleeps never end: a grace that lasts as long as the test needs. */
function endlessSleeps(): FakeClock {
  const clock = createFakeClock(T0, { frozen: true });
  return {
    ...clock,
    sleep: (ms) => {
      clock.sleeps.push(ms);
      return new Promise<void>(() => undefined);
    },
  };
}

/** A fake clock whose sleeps end when the test wakes them (time stays where it is). */
function sleepsUntilWoken(): { clock: FakeClock; wake: () => void } {
  const clock = createFakeClock(T0, { frozen: true });
  const sleepers: Array<() => void> = [];
  return {
    clock: {
      ...clock,
      sleep: (ms) => {
        clock.sleeps.push(ms);
        return new Promise<void>((resolve) => sleepers.push(resolve));
      },
    },
    wake: () => {
      for (const resolve of sleepers.splice(0)) resolve();
    },
  };
}

/** A gate: `pass` waits until `open`; `arrived` counts who came to it. */
function gate(): { pass: () => Promise<void>; open: () => void; readonly arrived: number } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let arrived = 0;
  return {
    pass: () => {
      arrived += 1;
      return opened;
    },
    open: () => open(),
    get arrived() {
      return arrived;
    },
  };
}

function hold(onAbort?: Record<string, unknown>): Held {
  let settle: { resolve: (r: Record<string, unknown>) => void; reject: (e: unknown) => void } | undefined;
  const call: Held = {
    controls: undefined,
    call: (controls) => {
      call.controls = controls;
      return new Promise((resolve, reject) => {
        settle = { resolve, reject };
        if (onAbort !== undefined) controls.signal.addEventListener('abort', () => resolve(onAbort), { once: true });
      });
    },
    answer: (result) => settle?.resolve(result),
    fail: (err) => settle?.reject(err),
  };
  held.push(call);
  return call;
}

const aborted = (call: Held): boolean => call.controls?.signal.aborted === true;

async function startTask(
  runner: TaskRunner,
  principal: string,
  call: Held['call'],
  options: Partial<StartOptions> = {},
): Promise<TaskView> {
  const started = await runner.start({ principal, tool: TOOL, ...options }, call);
  if (!('task' in started)) throw new Error(`answered at once, not a task: ${JSON.stringify(started)}`);
  return started.task;
}

/** Polls until `done(probe())`, every 5 ms, at most 1,000 times: the bound is a failure, never a measurement. */
async function until<T>(probe: () => T | Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 1_000; i += 1) {
    const value = await probe();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never came about: ${what}`);
}

const stateFile = (task: TaskView): string => join(root, TASKS_DIR, task.owner, `${task.tag}.json`);
const filesOf = (task: TaskView): string[] => {
  const dir = join(root, TASKS_DIR, task.owner);
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.startsWith(task.tag)) : [];
};
/** The status in the task's state file itself (no end file consulted). */
const writtenStatus = (task: TaskView): string | undefined =>
  existsSync(stateFile(task)) ? (JSON.parse(readFileSync(stateFile(task), 'utf8')) as { status: string }).status : '';

/** The task once its end is written whole: its state file rewritten, not only its end file in place. */
async function endedTask(runner: TaskRunner, principal: string, task: TaskView): Promise<TaskView | undefined> {
  await until(
    () => writtenStatus(task),
    (status) => status !== 'working',
    `task ${task.tag} ended`,
  );
  return runner.get(principal, task.id);
}

const never = (): AbortSignal => new AbortController().signal;

describe('ids', () => {
  it('starts a working task whose 40-character id is signed for its principal and found by it alone', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const call = hold();
    const task = await startTask(runner, ALICE, call.call);
    expect(task.id).toHaveLength(40);
    expect(task.id).toMatch(/^[A-Za-z0-9_-]{16}\.[0-9a-z]{6}\.[A-Za-z0-9_-]{16}$/);
    expect(task).toMatchObject({
      status: 'working',
      tool: TOOL,
      owner: toOwnerTag(ALICE),
      tag: toTaskTag(task.key),
      createdMs: T0,
      updatedMs: T0,
      aliveMs: T0,
      pollMs: POLL_MS,
    });
    expect(call.controls?.signal.aborted).toBe(false);
    expect(await runner.get(ALICE, task.id)).toEqual(task);
    // Another instance with the same secret answers for it.
    expect(await makeRunner(clock).get(ALICE, task.id)).toEqual(task);

    // Another credential, a changed character anywhere, a malformed id, an id of another purpose: not found.
    expect(await runner.get(BOB, task.id)).toBeUndefined();
    const changed = (i: number): string =>
      `${task.id.slice(0, i)}${task.id[i] === 'a' ? 'b' : 'a'}${task.id.slice(i + 1)}`;
    for (const i of [0, 15, 17, 22, 24, 39]) expect({ i, task: await runner.get(ALICE, changed(i)) }).toEqual({ i });
    const handle = createSignedIdCodec(SECRET, MAX_TTL_MS).sign('sandbox', task.key, ALICE, T0);
    for (const id of ['', 'x', `${task.id}x`, task.id.replaceAll('.', '-'), 'a'.repeat(40), handle])
      expect({ id, task: await runner.get(ALICE, id) }).toEqual({ id });
    // Nor can another credential wait on it or cancel it.
    expect(await runner.cancel(BOB, task.id)).toBeUndefined();
    await expect(runner.outcome(BOB, task.id, never())).rejects.toMatchObject({
      code: ProtocolErrorCode.InvalidParams,
    });
    expect((await runner.get(ALICE, task.id))?.status).toBe('working');
    expect(aborted(call)).toBe(false);
  });

  it('clamps the ttl: at least 1 s, at most maxTtlMs, defaultTtlMs when none is asked', async () => {
    const runner = makeRunner(frozenClock());
    const cases: Array<[number | undefined, number]> = [
      [1, 1_000],
      [999, 1_000],
      [1_000, 1_000],
      [120_000, 120_000],
      [MAX_TTL_MS, MAX_TTL_MS],
      [MAX_TTL_MS + 1, MAX_TTL_MS],
      [undefined, DEFAULT_TTL_MS],
    ];
    for (const [asked, granted] of cases) {
      const call = hold();
      const task = await startTask(runner, ALICE, call.call, asked === undefined ? {} : { ttlMs: asked });
      const kept = await createTaskStore(root).get(task.owner, task.tag);
      expect({ asked, ttl: task.ttlMs, kept: kept?.ttlMs, timeout: call.controls?.maxTimeoutMs }).toEqual({
        asked,
        ttl: granted,
        kept: granted,
        timeout: granted,
      });
      call.answer(RESULT);
      await endedTask(runner, ALICE, task);
    }
  });
});

describe('the end of the call', () => {
  it('ends completed with the call’s answer; a result with isError sets toolError and a message', async () => {
    const runner = makeRunner(frozenClock());
    const ok = hold();
    const okTask = await startTask(runner, ALICE, ok.call);
    ok.answer(RESULT);
    expect(await runner.outcome(ALICE, okTask.id, never())).toMatchObject({ outcome: { result: RESULT } });
    const done = await endedTask(runner, ALICE, okTask);
    expect(done).toMatchObject({ id: okTask.id, status: 'completed' });
    expect(done?.toolError).toBeUndefined();
    expect(done?.message).toBeUndefined();

    const bad = hold();
    const badTask = await startTask(runner, ALICE, bad.call);
    const result = { ...RESULT, isError: true };
    bad.answer(result);
    expect(await runner.outcome(ALICE, badTask.id, never())).toMatchObject({ outcome: { result } });
    expect(await endedTask(runner, ALICE, badTask)).toMatchObject({
      status: 'completed',
      toolError: true,
      message: 'The tool reported an error.',
    });
  });

  it('ends failed with a thrown ProtocolError’s code and message', async () => {
    const runner = makeRunner(frozenClock());
    const call = hold();
    const task = await startTask(runner, ALICE, call.call);
    call.fail(new ProtocolError(ProtocolErrorCode.InvalidParams, 'No such file: /nowhere'));
    expect((await runner.outcome(ALICE, task.id, never())).outcome).toEqual({
      error: { code: ProtocolErrorCode.InvalidParams, message: 'No such file: /nowhere' },
    });
    expect(await endedTask(runner, ALICE, task)).toMatchObject({ status: 'failed', message: 'No such file: /nowhere' });
  });

  it('ends failed with -32603 for any other error, its text logged and never shown', async () => {
    const runner = makeRunner(frozenClock());
    const call = hold();
    const task = await startTask(runner, ALICE, call.call);
    call.fail(new Error('connect ECONNREFUSED 10.0.0.7 with key sk-hidden-42'));
    const { outcome } = await runner.outcome(ALICE, task.id, never());
    expect(outcome).toEqual({
      error: { code: ProtocolErrorCode.InternalError, message: expect.stringMatching(/^Internal error/) },
    });
    const ended = await endedTask(runner, ALICE, task);
    expect(ended).toMatchObject({ status: 'failed', message: expect.stringMatching(/^Internal error/) });
    expect(JSON.stringify({ outcome, ended })).not.toContain('sk-hidden-42');
    expect(JSON.stringify({ outcome, ended })).not.toContain('ECONNREFUSED');
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: 'task failed unexpectedly',
        error: expect.stringContaining('sk-hidden-42'),
      }),
    );
  });
});

describe('cancel', () => {
  it('aborts a running call; the task stays cancelled after the call answers, whose answer is kept', async () => {
    const runner = makeRunner(frozenClock());
    const call = hold(STOPPED);
    const task = await startTask(runner, ALICE, call.call);
    const cancelled = await runner.cancel(ALICE, task.id);
    expect(cancelled).toEqual({ task: expect.objectContaining({ id: task.id, status: 'cancelled' }) });
    expect(aborted(call)).toBe(true);
    // The call answered on its abort: that answer is kept, and loses to the cancel.
    const store = createTaskStore(root);
    await until(
      () => store.getOutcome(task.owner, task.tag),
      (o) => o !== undefined,
      'the call’s answer kept',
    );
    expect(await endedTask(runner, ALICE, task)).toMatchObject({
      status: 'cancelled',
      message: 'Cancelled by the client.',
    });
    expect(await runner.outcome(ALICE, task.id, never())).toMatchObject({
      task: { status: 'cancelled' },
      outcome: { result: STOPPED },
    });
    // A second cancel says how it had ended.
    expect(await runner.cancel(ALICE, task.id)).toEqual({
      task: expect.objectContaining({ status: 'cancelled' }),
      ended: 'cancelled',
    });
  });

  it('reports the status of a task that had ended, and changes nothing', async () => {
    const runner = makeRunner(frozenClock());
    const [ok, bad] = [hold(), hold()];
    const okTask = await startTask(runner, ALICE, ok.call);
    const badTask = await startTask(runner, ALICE, bad.call);
    ok.answer(RESULT);
    bad.fail(new ProtocolError(ProtocolErrorCode.InvalidParams, 'bad'));
    await endedTask(runner, ALICE, okTask);
    await endedTask(runner, ALICE, badTask);
    expect(await runner.cancel(ALICE, okTask.id)).toMatchObject({ ended: 'completed', task: { status: 'completed' } });
    expect(await runner.cancel(ALICE, badTask.id)).toMatchObject({ ended: 'failed', task: { status: 'failed' } });
    expect((await runner.get(ALICE, okTask.id))?.status).toBe('completed');
    expect((await runner.outcome(ALICE, okTask.id, never())).outcome).toEqual({ result: RESULT });
  });

  it('reaches the running call when another instance sharing the root cancels it', async () => {
    const clock = frozenClock();
    const here = makeRunner(clock);
    const elsewhere = makeRunner(clock);
    const call = hold();
    const task = await startTask(here, ALICE, call.call);
    expect(await elsewhere.cancel(ALICE, task.id)).toEqual({
      task: expect.objectContaining({ status: 'cancelled' }),
    });
    // The instance running it sees the end on its next look, and stops the call.
    await until(() => aborted(call), Boolean, 'the call aborted by the watcher');
    call.answer(STOPPED);
    await until(
      () => createTaskStore(root).getOutcome(task.owner, task.tag),
      (o) => o !== undefined,
      'answer kept',
    );
    expect((await here.get(ALICE, task.id))?.status).toBe('cancelled');
    expect(await elsewhere.outcome(ALICE, task.id, never())).toMatchObject({
      task: { status: 'cancelled' },
      outcome: { result: STOPPED },
    });
  });
});

describe('lost and expired tasks', () => {
  it('ends as failed a working task whose instance stopped renewing it for LOST_AFTER_MS', async () => {
    const clock = frozenClock();
    const reader = makeRunner(clock);
    // A task left by an instance that went away: working, its last sign of life at T0.
    const { id, key } = createSignedIdCodec(SECRET, MAX_TTL_MS).mint('task', ALICE, T0);
    await createTaskStore(root).put({
      tag: toTaskTag(key),
      owner: toOwnerTag(ALICE),
      key,
      tool: TOOL,
      status: 'working',
      createdMs: T0,
      updatedMs: T0,
      ttlMs: MAX_TTL_MS,
      pollMs: POLL_MS,
      aliveMs: T0,
    });
    clock.advance(LOST_AFTER_MS);
    expect((await reader.get(ALICE, id))?.status).toBe('working');
    clock.advance(1);
    const lost = await reader.get(ALICE, id);
    expect(lost).toMatchObject({ status: 'failed', message: expect.stringContaining('stopped before it ended') });
    expect((await reader.outcome(ALICE, id, never())).outcome).toEqual({
      error: { code: ProtocolErrorCode.InternalError, message: lost?.message },
    });
    // Another instance reads the same.
    expect(await makeRunner(clock).get(ALICE, id)).toMatchObject({ status: 'failed', message: lost?.message });
  });

  it('never takes for lost a task running here, and renews its sign of life for the other instances', async () => {
    const clock = frozenClock();
    const here = makeRunner(clock);
    const call = hold();
    const task = await startTask(here, ALICE, call.call);
    clock.advance(LOST_AFTER_MS + 1);
    expect((await here.get(ALICE, task.id))?.status).toBe('working');
    // The watcher renews it (every ALIVE_EVERY_MS of the clock): another instance then finds it alive.
    const store = createTaskStore(root);
    await until(
      () => store.get(task.owner, task.tag),
      (s) => s?.aliveMs === clock.now(),
      'the sign of life renewed',
    );
    expect((await makeRunner(clock).get(ALICE, task.id))?.status).toBe('working');
    expect(aborted(call)).toBe(false);
  });

  it('deletes on read a task past its ttl and stops its call; what the call leaves after reads as absent', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const call = hold();
    const task = await startTask(runner, ALICE, call.call, { ttlMs: 1_000 });
    clock.advance(999);
    expect((await runner.get(ALICE, task.id))?.status).toBe('working');
    clock.advance(1);
    expect(await runner.get(ALICE, task.id)).toBeUndefined();
    expect(aborted(call)).toBe(true);
    expect(filesOf(task)).toEqual([]);
    // The call answers after all; once it has (stopAll waits for it), the task is still not there for anyone.
    call.answer(STOPPED);
    await runner.stopAll();
    expect(await runner.get(ALICE, task.id)).toBeUndefined();
    expect(await makeRunner(clock).get(ALICE, task.id)).toBeUndefined();
    expect(await runner.list(ALICE)).toEqual([]);
    await expect(runner.outcome(ALICE, task.id, never())).rejects.toMatchObject({
      code: ProtocolErrorCode.InvalidParams,
    });
    expect(filesOf(task)).toEqual([]);
  });

  // stopAll ends the task with store.end, which must not write back a state it finds gone (nor an end file).
  it('never writes back at shutdown a task deleted at its ttl', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const call = hold();
    const task = await startTask(runner, ALICE, call.call, { ttlMs: 1_000 });
    clock.advance(1_000);
    expect(await runner.get(ALICE, task.id)).toBeUndefined();
    expect(filesOf(task)).toEqual([]);
    // Shutdown while the call, aborted, has not answered yet.
    const stopping = runner.stopAll();
    call.answer(STOPPED);
    await stopping;
    expect(filesOf(task)).toEqual([]);
  });

  it('stops a call running here once its ttl has passed, with nobody reading the task', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const call = hold();
    await startTask(runner, ALICE, call.call, { ttlMs: 5_000 });
    clock.advance(5_000);
    await until(() => aborted(call), Boolean, 'the call aborted by the watcher at the ttl');
  });
});

describe('the end, as every instance reads it', () => {
  // The end file holds all of the end (status, message, toolError, time): a reader between it and the state file's
  // rewrite (or for good, once the writer went away) sees the whole of it.
  it('never shows a terminal status without what its end said', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const store = createTaskStore(root);
    // A call that answered a result with isError, on an instance that put the task's end file in place and had not
    // rewritten its state file yet (or went away before it did): the state file still says working.
    const { id, key } = createSignedIdCodec(SECRET, MAX_TTL_MS).mint('task', ALICE, T0);
    const state = {
      tag: toTaskTag(key),
      owner: toOwnerTag(ALICE),
      key,
      tool: TOOL,
      status: 'working' as const,
      createdMs: T0,
      updatedMs: T0,
      ttlMs: MAX_TTL_MS,
      pollMs: POLL_MS,
      aliveMs: T0,
    };
    await store.put(state);
    await store.putOutcome(state.owner, state.tag, { result: { ...RESULT, isError: true } });
    const ending = { status: 'completed', toolError: true, message: 'The tool reported an error.', updatedMs: T0 + 5 };
    writeFileSync(join(root, TASKS_DIR, state.owner, `${state.tag}.end`), JSON.stringify(ending));
    // What the winner of the end would have written: a tool error (2025-11-25 calls it `failed`), and why.
    expect(await runner.get(ALICE, id)).toMatchObject({
      status: 'completed',
      toolError: true,
      message: 'The tool reported an error.',
    });
  });
});

describe('the cap on running tasks', () => {
  it('refuses a start past maxRunningPerCredential, lets another credential start; an end frees a slot', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock, { maxRunningPerCredential: 2 });
    const [one, two, three] = [hold(), hold(), hold()];
    const first = await startTask(runner, ALICE, one.call);
    await startTask(runner, ALICE, two.call);
    const refusal = {
      code: ProtocolErrorCode.InvalidRequest,
      message: expect.stringContaining('MCP_MAX_TASKS_PER_CREDENTIAL'),
    };
    await expect(runner.start({ principal: ALICE, tool: TOOL }, three.call)).rejects.toMatchObject(refusal);
    expect(three.controls).toBeUndefined();
    // The count is the store's: another instance refuses too.
    const other = makeRunner(clock, { maxRunningPerCredential: 2 });
    await expect(other.start({ principal: ALICE, tool: TOOL }, three.call)).rejects.toMatchObject(refusal);
    // Another credential is not held back.
    await startTask(runner, BOB, hold().call);
    // A task that ended frees its slot; a cancelled one too.
    one.answer(RESULT);
    await endedTask(runner, ALICE, first);
    const third = await startTask(runner, ALICE, three.call);
    await expect(runner.start({ principal: ALICE, tool: TOOL }, hold().call)).rejects.toMatchObject(refusal);
    await runner.cancel(ALICE, third.id);
    await startTask(runner, ALICE, hold().call);
  });

  it('does not count a task whose instance is lost', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock, { maxRunningPerCredential: 1 });
    const { key } = createSignedIdCodec(SECRET, MAX_TTL_MS).mint('task', ALICE, T0);
    const stale = { key, tag: toTaskTag(key), owner: toOwnerTag(ALICE), tool: TOOL, status: 'working' as const };
    await createTaskStore(root).put({
      ...stale,
      createdMs: T0,
      updatedMs: T0,
      ttlMs: MAX_TTL_MS,
      pollMs: 1,
      aliveMs: T0,
    });
    clock.advance(LOST_AFTER_MS + 1);
    await startTask(runner, ALICE, hold().call);
  });

  it('counts the starts still in their grace: concurrent starts of one credential never pass the cap', async () => {
    const { clock, wake } = sleepsUntilWoken();
    const runner = makeRunner(clock, { maxRunningPerCredential: 2 });
    const starts = Array.from({ length: 6 }, () =>
      runner.start({ principal: ALICE, tool: TOOL, graceMs: 2_000 }, hold().call),
    );
    // Four are refused while two calls are in their grace (nothing kept in the store yet).
    const refused = await Promise.allSettled(starts.slice(2));
    expect(refused.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    wake();
    const admitted = await Promise.all(starts.slice(0, 2));
    expect(admitted.every((started) => 'task' in started)).toBe(true);
    expect((await runner.list(ALICE)).filter((t) => t.status === 'working')).toHaveLength(2);
    await expect(runner.start({ principal: ALICE, tool: TOOL }, hold().call)).rejects.toMatchObject({
      code: ProtocolErrorCode.InvalidRequest,
    });
  });

  // A start admitted next may count from a listing read before another start's state was written: the slots of
  // the tasks running here are counted from the runner's own reservations, not from the listing.
  it('never admits past the cap a start that listed while another start was being kept', async () => {
    // A store whose writes and listings take their time (a shared disk under load); the test opens their gates.
    const real = createTaskStore(root);
    const putGate = gate();
    const listGate = gate();
    let slowPuts = true;
    let slowLists = false;
    const slow: TaskStore = {
      ...real,
      put: async (state) => {
        if (slowPuts) await putGate.pass();
        return real.put(state);
      },
      list: async (owner, nowMs) => {
        const listed = await real.list(owner, nowMs);
        if (slowLists) await listGate.pass();
        return listed;
      },
    };
    const runner = makeRunner(frozenClock(), { store: slow, maxRunningPerCredential: 1 });
    // The first start is admitted; its state is being written.
    const first = runner.start({ principal: ALICE, tool: TOOL }, hold().call);
    await until(
      () => putGate.arrived,
      (n) => n === 1,
      'the first start writing its state',
    );
    // The second reads the credential's tasks meanwhile (the first is not among them yet)...
    slowLists = true;
    const second = runner.start({ principal: ALICE, tool: TOOL }, hold().call);
    await until(
      () => listGate.arrived,
      (n) => n === 1,
      'the second start listing',
    );
    // ...the first is kept (its reservation let go), then the second counts.
    slowPuts = false;
    putGate.open();
    await first;
    slowLists = false;
    listGate.open();
    const settled = await Promise.allSettled([first, second]);
    const working = (await runner.list(ALICE)).filter((t) => t.status === 'working').length;
    expect({ admitted: settled.filter((s) => s.status === 'fulfilled').length, working }).toEqual({
      admitted: 1,
      working: 1,
    });
  });
});

describe('the grace', () => {
  it('answers a call that ends within the grace as a plain call, leaving no task', async () => {
    const clock = endlessSleeps();
    const runner = makeRunner(clock);
    expect(await runner.start({ principal: ALICE, tool: TOOL, graceMs: 2_000 }, async () => RESULT)).toEqual({
      done: RESULT,
    });
    expect(clock.sleeps).toEqual([2_000]);
    // A refusal within the grace is the call's refusal.
    const refused = runner.start({ principal: ALICE, tool: TOOL, graceMs: 2_000 }, async () => {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'bad argument');
    });
    await expect(refused).rejects.toMatchObject({ code: ProtocolErrorCode.InvalidParams, message: 'bad argument' });
    expect(existsSync(join(root, TASKS_DIR)) ? readdirSync(join(root, TASKS_DIR), { recursive: true }) : []).toEqual(
      [],
    );
    expect(await runner.list(ALICE)).toEqual([]);
  });

  it('makes a task of a call still running after the grace; the request’s end then no longer stops it', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const request = new AbortController();
    const call = hold();
    const task = await startTask(runner, ALICE, call.call, { graceMs: 2_000, requestSignal: request.signal });
    expect(clock.sleeps).toEqual([2_000]);
    request.abort();
    expect(aborted(call)).toBe(false);
    call.answer(RESULT);
    expect(await runner.outcome(ALICE, task.id, never())).toMatchObject({ outcome: { result: RESULT } });
  });

  it('stops the call when its request ends during the grace', async () => {
    const runner = makeRunner(endlessSleeps());
    const request = new AbortController();
    const call = hold(STOPPED);
    const started = runner.start(
      { principal: ALICE, tool: TOOL, graceMs: 2_000, requestSignal: request.signal },
      call.call,
    );
    await until(
      () => call.controls,
      (c) => c !== undefined,
      'the call made',
    );
    expect(aborted(call)).toBe(false);
    request.abort();
    expect(aborted(call)).toBe(true);
    expect(await started).toEqual({ done: STOPPED });
    expect(existsSync(join(root, TASKS_DIR))).toBe(false);
  });
});

describe('outcome', () => {
  it('waits for the end, then gives what the call answered', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const call = hold();
    const task = await startTask(runner, ALICE, call.call);
    let settled = false;
    const waiting = runner.outcome(ALICE, task.id, never()).finally(() => {
      settled = true;
    });
    // It looked several times, and waits on.
    await until(
      () => clock.sleeps.filter((ms) => ms === POLL_MS).length,
      (n) => n >= 3,
      'three looks',
    );
    expect(settled).toBe(false);
    call.answer(RESULT);
    expect(await waiting).toEqual({ task: expect.objectContaining({ id: task.id }), outcome: { result: RESULT } });
    await expect(runner.outcome(ALICE, 'not-a-task', never())).rejects.toMatchObject({
      code: ProtocolErrorCode.InvalidParams,
    });
  });

  it('stops waiting when its signal aborts, the task going on', async () => {
    const runner = makeRunner(frozenClock());
    const call = hold();
    const task = await startTask(runner, ALICE, call.call);
    const abort = new AbortController();
    const waiting = runner.outcome(ALICE, task.id, abort.signal);
    abort.abort();
    await expect(waiting).rejects.toThrow();
    expect((await runner.get(ALICE, task.id))?.status).toBe('working');
    expect(aborted(call)).toBe(false);
  });

  it('answers a cancelled task whose call never answers with an error, after the wait bound', async () => {
    // Time moves by the waits themselves.
    const clock = createFakeClock(T0);
    const runner = makeRunner(clock);
    const call = hold();
    const task = await startTask(runner, ALICE, call.call);
    await runner.cancel(ALICE, task.id);
    const from = clock.now();
    const { task: seen, outcome } = await runner.outcome(ALICE, task.id, never());
    expect(outcome).toEqual({ error: { code: ProtocolErrorCode.InvalidRequest, message: 'Task cancelled.' } });
    expect(seen.status).toBe('cancelled');
    expect(clock.now() - from).toBeGreaterThanOrEqual(CANCELLED_ANSWER_WAIT_MS);
    expect(clock.now() - from).toBeLessThanOrEqual(CANCELLED_ANSWER_WAIT_MS + POLL_MS);
    expect(aborted(call)).toBe(true);
  });
});

describe('list and stopAll', () => {
  it('lists a credential’s tasks oldest first, with the ids start gave', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const mine: TaskView[] = [];
    mine.push(await startTask(runner, ALICE, hold().call));
    clock.advance(1_500);
    const ends = hold();
    mine.push(await startTask(runner, ALICE, ends.call));
    const theirs = await startTask(runner, BOB, hold().call);
    clock.advance(1);
    // Two made at the same millisecond: in the order of their tags.
    const pair = [await startTask(runner, ALICE, hold().call), await startTask(runner, ALICE, hold().call)];
    mine.push(...pair.sort((a, b) => a.tag.localeCompare(b.tag)));
    ends.answer(RESULT);
    await endedTask(runner, ALICE, mine[1] as TaskView);

    const listed = await runner.list(ALICE);
    expect(listed.map((t) => t.id)).toEqual(mine.map((t) => t.id));
    expect(listed.map((t) => t.status)).toEqual(['working', 'completed', 'working', 'working']);
    expect((await makeRunner(clock).list(ALICE)).map((t) => t.id)).toEqual(mine.map((t) => t.id));
    expect((await runner.list(BOB)).map((t) => t.id)).toEqual([theirs.id]);
    expect(await runner.list('token:nobody')).toEqual([]);
  });

  it('stopAll ends the tasks running here as failed and aborts their calls', async () => {
    const clock = frozenClock();
    const runner = makeRunner(clock);
    const [one, two, done] = [hold(STOPPED), hold(STOPPED), hold()];
    const tasks = [await startTask(runner, ALICE, one.call), await startTask(runner, BOB, two.call)];
    const finished = await startTask(runner, ALICE, done.call);
    done.answer(RESULT);
    await endedTask(runner, ALICE, finished);

    await runner.stopAll();
    expect([aborted(one), aborted(two), aborted(done)]).toEqual([true, true, false]);
    const other = makeRunner(clock);
    const message = 'The server instance that ran it shut down; its work was stopped.';
    expect(await other.get(ALICE, tasks[0]?.id as string)).toMatchObject({ status: 'failed', message });
    expect(await other.get(BOB, tasks[1]?.id as string)).toMatchObject({ status: 'failed', message });
    // The calls' answers were kept before stopAll resolved.
    expect((await other.outcome(ALICE, tasks[0]?.id as string, never())).outcome).toEqual({ result: STOPPED });
    expect((await other.get(ALICE, finished.id))?.status).toBe('completed');
  });
});
