/**
 * The task store (tasks/task-store.ts), on a real directory: a state is written whole and read back field by field (a
 * damaged or oversized file reads as absent); a task's end has one winner, among instances too, and only the winner's
 * words are kept; an outcome round-trips and one over OUTCOME_MAX_BYTES reads as absent; `list` deletes what expired
 * and `remove` leaves nothing behind; `sweep` deletes every owner's expired tasks and the folders left empty.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  createTaskStore,
  OUTCOME_MAX_BYTES,
  TASKS_DIR,
  type TaskState,
  toTaskTag,
} from '../../../functions/mcp/tasks/task-store';

const OWNER = 'a'.repeat(24);
const OTHER = 'b'.repeat(24);
const T0 = Date.parse('2030-01-01T00:00:00Z');
const keyOf = (n: number): string => `key${String(n).padStart(13, '0')}`;
const state = (n: number, over: Partial<TaskState> = {}): TaskState => ({
  tag: toTaskTag(keyOf(n)),
  owner: OWNER,
  key: keyOf(n),
  tool: 'run_command',
  status: 'working',
  createdMs: T0,
  updatedMs: T0,
  ttlMs: 60_000,
  pollMs: 1_000,
  aliveMs: T0,
  ...over,
});

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'mcp-task-store-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const dirOf = (owner: string): string => join(root, TASKS_DIR, owner);
/** The files of one task, by extension, that are there. */
const filesOf = (owner: string, tag: string): string[] =>
  existsSync(dirOf(owner)) ? readdirSync(dirOf(owner)).filter((name) => name.startsWith(tag)) : [];

it('writes a state whole and reads it back as written, for its owner only', async () => {
  const store = createTaskStore(root);
  const full = state(1, { status: 'completed', toolError: true, message: 'The tool reported an error.' });
  await store.put(state(2));
  await store.put(full);
  expect(await store.get(OWNER, full.tag)).toEqual(full);
  expect(await store.get(OWNER, state(2).tag)).toEqual(state(2));
  // One JSON document per file, and nothing left aside (no temporary file of the write).
  expect(JSON.parse(readFileSync(join(dirOf(OWNER), `${full.tag}.json`), 'utf8'))).toEqual(full);
  expect(readdirSync(dirOf(OWNER)).sort()).toEqual([`${full.tag}.json`, `${state(2).tag}.json`].sort());
  // Rewritten, it reads as the new one.
  await store.put({ ...full, aliveMs: T0 + 5 });
  expect((await store.get(OWNER, full.tag))?.aliveMs).toBe(T0 + 5);
  // Another owner never reads it, nor a tag that names no task.
  expect(await store.get(OTHER, full.tag)).toBeUndefined();
  expect(await store.get(OWNER, toTaskTag('nothing'))).toBeUndefined();
});

it('reads a damaged, oversized, misfiled or ill-typed state file as absent', async () => {
  const store = createTaskStore(root);
  const dir = dirOf(OWNER);
  mkdirSync(dir, { recursive: true });
  const write = (n: number, text: string) => writeFileSync(join(dir, `${state(n).tag}.json`), text);
  write(1, '{"tag":');
  write(2, JSON.stringify({ ...state(2), message: 'x'.repeat(5_000) }));
  write(3, JSON.stringify(state(4)));
  write(5, JSON.stringify({ ...state(5), owner: OTHER }));
  write(6, JSON.stringify({ ...state(6), status: 'input_required' }));
  write(7, JSON.stringify({ ...state(7), ttlMs: '60000' }));
  write(8, JSON.stringify({ ...state(8), key: 8 }));
  write(9, '[1,2,3]');
  for (const n of [1, 2, 3, 5, 6, 7, 8, 9]) expect({ n, read: await store.get(OWNER, state(n).tag) }).toEqual({ n });
  expect(await store.list(OWNER, T0)).toEqual([]);
  // A state just under the limit is read: the limit, not the padding, is what refused the oversized one.
  write(10, JSON.stringify({ ...state(10), message: 'x'.repeat(3_500) }));
  expect((await store.get(OWNER, state(10).tag))?.message).toHaveLength(3_500);
});

it('ends a task once: the first end wins, the loser is told its status, only the winner’s words stay', async () => {
  const store = createTaskStore(root);
  const task = state(1);
  await store.put(task);
  expect(await store.end(task, 'cancelled', { message: 'Cancelled by the client.' }, T0 + 10)).toBe('cancelled');
  expect(await store.end(task, 'completed', { message: 'The tool reported an error.', toolError: true }, T0 + 20)).toBe(
    'cancelled',
  );
  expect(await store.get(OWNER, task.tag)).toEqual({
    ...task,
    status: 'cancelled',
    message: 'Cancelled by the client.',
    updatedMs: T0 + 10,
  });
});

it('ends a task once among instances ending it at the same moment', async () => {
  // Two stores on one root: two instances of a deployment.
  const [one, two] = [createTaskStore(root), createTaskStore(root)];
  for (let n = 1; n <= 20; n += 1) {
    const task = state(n);
    await one.put(task);
    const [a, b] = await Promise.all([
      one.end(task, 'failed', { message: 'lost' }, T0 + 1),
      two.end(task, 'completed', { message: 'tool error', toolError: true }, T0 + 2),
    ]);
    expect(a).toBe(b);
    const seen = await two.get(OWNER, task.tag);
    expect(seen?.status).toBe(a);
    // The state carries the winner's words and time, never the loser's.
    expect(seen).toMatchObject(
      a === 'failed' ? { message: 'lost', updatedMs: T0 + 1 } : { message: 'tool error', toolError: true },
    );
    if (a === 'failed') expect(seen?.toolError).toBeUndefined();
  }
});

it('takes the end file as the truth when the state file still says working', async () => {
  const store = createTaskStore(root);
  const task = state(1);
  await store.put(task);
  // The winner of the end wrote its end file (status, message, time) and went away before it rewrote the state.
  const ending = { status: 'cancelled', message: 'Cancelled by the client.', updatedMs: T0 + 5 };
  writeFileSync(join(dirOf(OWNER), `${task.tag}.end`), JSON.stringify(ending));
  expect(await store.get(OWNER, task.tag)).toMatchObject(ending);
  expect(await store.end(task, 'completed', {}, T0 + 1)).toBe('cancelled');
});

it('keeps an outcome and reads it back; one over OUTCOME_MAX_BYTES, or damaged, reads as absent', async () => {
  const store = createTaskStore(root);
  const [ok, failed, big, damaged] = [1, 2, 3, 4].map((n) => state(n).tag) as [string, string, string, string];
  const result = { content: [{ type: 'text', text: 'built\n' }], structuredContent: { exit_code: 0 } };
  await store.putOutcome(OWNER, ok, { result });
  await store.putOutcome(OWNER, failed, { error: { code: -32602, message: 'No such file.' } });
  expect(await store.getOutcome(OWNER, ok)).toEqual({ result });
  expect(await store.getOutcome(OWNER, failed)).toEqual({ error: { code: -32602, message: 'No such file.' } });
  expect(await store.getOutcome(OTHER, ok)).toBeUndefined();
  expect(await store.getOutcome(OWNER, state(9).tag)).toBeUndefined();

  // A valid outcome padded (JSON whitespace) to the limit is read; one byte more and it reads as absent.
  const json = JSON.stringify({ result });
  const bigFile = join(dirOf(OWNER), `${big}.out`);
  writeFileSync(bigFile, json.padEnd(OUTCOME_MAX_BYTES, ' '));
  expect(await store.getOutcome(OWNER, big)).toEqual({ result });
  writeFileSync(bigFile, json.padEnd(OUTCOME_MAX_BYTES + 1, ' '));
  expect(await store.getOutcome(OWNER, big)).toBeUndefined();
  for (const text of ['{"result":', '{"result":[1]}', '{"error":{"code":"x","message":"m"}}', 'null']) {
    writeFileSync(join(dirOf(OWNER), `${damaged}.out`), text);
    expect({ text, read: await store.getOutcome(OWNER, damaged) }).toEqual({ text });
  }
});

it('lists an owner’s tasks and deletes, on the way, those whose ttl has passed', async () => {
  const store = createTaskStore(root);
  const live = state(1, { createdMs: T0, ttlMs: 60_000 });
  const ended = state(2, { createdMs: T0 + 1, ttlMs: 60_000 });
  const expired = state(3, { createdMs: T0 - 60_000, ttlMs: 60_000 });
  for (const task of [live, ended, expired]) await store.put(task);
  await store.put(state(4, { owner: OTHER }));
  await store.putOutcome(OWNER, expired.tag, { result: { content: [] } });
  await store.end(expired, 'completed', {}, T0);
  await store.end(ended, 'failed', { message: 'lost' }, T0 + 2);

  const listed = await store.list(OWNER, T0);
  expect(listed.map((t) => t.tag).sort()).toEqual([live.tag, ended.tag].sort());
  expect(listed.find((t) => t.tag === ended.tag)?.status).toBe('failed');
  expect(filesOf(OWNER, expired.tag)).toEqual([]);
  expect(await store.get(OWNER, expired.tag)).toBeUndefined();
  // Another owner's tasks are neither listed nor touched; an owner with none has an empty list.
  expect((await store.list(OTHER, T0)).map((t) => t.tag)).toEqual([state(4).tag]);
  expect(await store.list('c'.repeat(24), T0)).toEqual([]);
  // At its ttl to the millisecond, a task is gone.
  expect(await store.list(OWNER, T0 + 60_000)).toEqual([
    { ...ended, status: 'failed', message: 'lost', updatedMs: T0 + 2 },
  ]);
  expect(filesOf(OWNER, live.tag)).toEqual([]);
});

it('removes every file of a task', async () => {
  const store = createTaskStore(root);
  const task = state(1);
  const kept = state(2);
  await store.put(task);
  await store.put(kept);
  await store.putOutcome(OWNER, task.tag, { result: { content: [] } });
  await store.end(task, 'completed', {}, T0 + 1);
  expect(filesOf(OWNER, task.tag).sort()).toEqual(['end', 'json', 'out'].map((ext) => `${task.tag}.${ext}`));
  await store.remove(OWNER, task.tag);
  expect(filesOf(OWNER, task.tag)).toEqual([]);
  expect(await store.get(OWNER, task.tag)).toBeUndefined();
  expect(await store.getOutcome(OWNER, task.tag)).toBeUndefined();
  expect(await store.get(OWNER, kept.tag)).toEqual(kept);
  // Removing what is gone is no error.
  await store.remove(OWNER, task.tag);
  await store.remove(OTHER, task.tag);
});

it('sweeps every owner’s expired tasks, and the folders of owners left with none', async () => {
  const store = createTaskStore(root);
  // Nothing kept yet: nothing to do.
  await store.sweep(T0);
  const gone = state(1, { owner: OTHER, createdMs: T0 - 60_000 });
  const live = state(2, { createdMs: T0 });
  const expired = state(3, { createdMs: T0 - 60_000 });
  for (const task of [gone, live, expired]) await store.put(task);
  await store.sweep(T0);
  expect(existsSync(dirOf(OTHER))).toBe(false);
  expect(readdirSync(dirOf(OWNER))).toEqual([`${live.tag}.json`]);
  expect(await store.get(OWNER, live.tag)).toEqual(live);
});
