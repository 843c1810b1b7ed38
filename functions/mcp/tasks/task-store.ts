/**
 * MCP tasks as every instance finds them: a directory shared by all the instances of a deployment (LOCAL_SANDBOX_ROOT,
 * or E2B_STATE_DIR on E2B), so that any of them answers for a task whichever instance runs it.
 *
 * Layout, under `<root>/.tasks/<owner tag>/` (the server's own, mode 0700; no sandbox sees it):
 * - `<task tag>.json`: the task's state (status, times, the running instance's last sign of life), written whole;
 * - `<task tag>.end`: how it ended (status, message, time), put in place by `link` (one winner, also on NFS):
 *   whoever ends a task first (the call's end, a cancel, the finding that its instance was lost) decides how;
 * - `<task tag>.out`: what the call answered (its result, or its JSON-RPC error), written before its end.
 * Tags are hashes: a listing shows no task id or credential. Every file is read with a size limit and checked field
 * by field: a damaged one reads as absent.
 */
import { readdir, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

import { toErrnoCode } from '../errors';
import { hashTag } from '../hash-tag';
import { jsonObjectOf } from '../sandbox/bounded-lines';
import { ignoreMissing, linkNew, readSmall, writeWhole } from '../sandbox/record-files';

export const TASKS_DIR = '.tasks';

/** How a task stands; `input_required` never happens here (no tool asks for input). */
export type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';
export type TerminalStatus = Exclude<TaskStatus, 'working'>;

/** One task's state, as stored. */
export interface TaskState {
  /** The task tag (toTaskTag of its id's random part). */
  readonly tag: string;
  /** The owner tag (toOwnerTag of its credential's principal). */
  readonly owner: string;
  /** Its id's random part: a listing signs the id again from it (the HMAC needs the secret, which is not here). */
  readonly key: string;
  /** The tool it runs. */
  readonly tool: string;
  readonly status: TaskStatus;
  /** Completed with a result that says the tool failed (`isError`): 2025-11-25 calls that `failed`. */
  readonly toolError?: boolean;
  /** Why it ended so, for the client (the tool failed, the instance running it was lost). */
  readonly message?: string;
  readonly createdMs: number;
  readonly updatedMs: number;
  /** Kept this long from `createdMs`, then deleted (running or not). */
  readonly ttlMs: number;
  /** How often a client should ask. */
  readonly pollMs: number;
  /** The running instance's last sign of life: a working task none has renewed for long is lost. */
  readonly aliveMs: number;
}

/** What the call answered: a tool result, or the JSON-RPC error it was refused with. */
export type TaskOutcome =
  | { readonly result: Record<string, unknown> }
  | { readonly error: { readonly code: number; readonly message: string } };

/** The largest state file read: a few hundred bytes are written. */
const STATE_MAX_BYTES = 4_096;
/** The largest end file read (a status, a message of at most a few hundred characters, a time). */
const END_MAX_BYTES = 4_096;
/** The largest outcome kept: tool results are bounded well below this (output heads and tails, a few images). */
export const OUTCOME_MAX_BYTES = 16 * 1024 * 1024;
const STATUSES: readonly string[] = ['working', 'completed', 'failed', 'cancelled'];
const TERMINAL: readonly string[] = ['completed', 'failed', 'cancelled'];

/** The tag of a task id's random part: names its files. */
export function toTaskTag(key: string): string {
  return hashTag(`mcp-task:${key}`, 32);
}

/** What the winner of a task's end adds to its state. */
export interface EndDetails {
  readonly message?: string;
  readonly toolError?: boolean;
}

/** A task's end, as its end file keeps it: written once, by the one who ended it. */
interface Ending extends EndDetails {
  readonly status: TerminalStatus;
  readonly updatedMs: number;
}

function withEnding(state: TaskState, ending: Ending): TaskState {
  return {
    ...state,
    status: ending.status,
    ...(ending.message !== undefined && { message: ending.message }),
    ...(ending.toolError === true && { toolError: true }),
    updatedMs: ending.updatedMs,
  };
}

function parseEnding(text: string): Ending | undefined {
  const o = jsonObjectOf(text);
  if (o === undefined || typeof o.status !== 'string' || !TERMINAL.includes(o.status)) return undefined;
  if (typeof o.updatedMs !== 'number' || !Number.isFinite(o.updatedMs)) return undefined;
  return {
    status: o.status as TerminalStatus,
    updatedMs: o.updatedMs,
    ...(typeof o.message === 'string' && { message: o.message }),
    ...(o.toolError === true && { toolError: true }),
  };
}

export interface TaskStore {
  /** The task's state, with its terminal status when one was decided; `undefined` when there is none. */
  get(owner: string, tag: string): Promise<TaskState | undefined>;
  put(state: TaskState): Promise<void>;
  /**
   * Ends the task as `status` if nothing ended it before (one winner among all instances); the state file follows.
   * Resolves with the status it ended with: this one, or the one that won before.
   */
  end(state: TaskState, status: TerminalStatus, how: EndDetails, nowMs: number): Promise<TerminalStatus>;
  /** Keeps the call's answer, before the task ends. */
  putOutcome(owner: string, tag: string, outcome: TaskOutcome): Promise<void>;
  getOutcome(owner: string, tag: string): Promise<TaskOutcome | undefined>;
  /** Every task of `owner`, expired ones deleted on the way. */
  list(owner: string, nowMs: number): Promise<TaskState[]>;
  /** Deletes the task's files. */
  remove(owner: string, tag: string): Promise<void>;
  /** Deletes every credential's expired tasks, and the folders of credentials left with none. */
  sweep(nowMs: number): Promise<void>;
}

export function createTaskStore(root: string): TaskStore {
  const dir = (owner: string) => join(root, TASKS_DIR, owner);
  const file = (owner: string, tag: string, ext: 'json' | 'end' | 'out') => join(dir(owner), `${tag}.${ext}`);

  /** How the task ended, as its end file says (the one winner's status, message and time), if it did. */
  const readEnd = async (owner: string, tag: string): Promise<Ending | undefined> => {
    const text = await readSmall(file(owner, tag, 'end'), END_MAX_BYTES);
    return text === undefined ? undefined : parseEnding(text);
  };

  /** Writes the state whole; once more if a sweep elsewhere took the credential's empty folder meanwhile. */
  const put = async (state: TaskState): Promise<void> => {
    const path = file(state.owner, state.tag, 'json');
    const text = `${JSON.stringify(state)}\n`;
    await writeWhole(path, text).catch((err: unknown) => {
      if (toErrnoCode(err) !== 'ENOENT') throw err;
      return writeWhole(path, text);
    });
  };

  const store: TaskStore = {
    async get(owner, tag) {
      const text = await readSmall(file(owner, tag, 'json'), STATE_MAX_BYTES);
      const state = text === undefined ? undefined : parseState(text, owner, tag);
      if (state === undefined || state.status !== 'working') return state;
      const ended = await readEnd(owner, tag);
      // Ended, and the state file not rewritten yet (or its writer gone): the end file is the truth, all of it.
      return ended === undefined ? state : withEnding(state, ended);
    },
    put,
    async end(state, status, how, nowMs) {
      // A task deleted meanwhile (its ttl passed) stays deleted: nothing is written back.
      const current = await store.get(state.owner, state.tag);
      if (current === undefined) return status;
      const ending: Ending = { status, ...how, updatedMs: nowMs };
      const won = await linkNew(file(state.owner, state.tag, 'end'), JSON.stringify(ending));
      if (!won) return (await readEnd(state.owner, state.tag))?.status ?? status;
      // The end file says it all already; the state follows, for readers of the state alone.
      await put(withEnding(current, ending));
      return status;
    },
    putOutcome: (owner, tag, outcome) => writeWhole(file(owner, tag, 'out'), JSON.stringify(outcome)),
    async getOutcome(owner, tag) {
      const path = file(owner, tag, 'out');
      const size = await stat(path).then(
        (info) => (info.isFile() ? info.size : undefined),
        () => undefined,
      );
      if (size === undefined || size > OUTCOME_MAX_BYTES) return undefined;
      // Read to its size: a buffer of the largest an outcome may be, for every read, would be wasted.
      const text = await readSmall(path, size);
      return text === undefined ? undefined : parseOutcome(text);
    },
    async list(owner, nowMs) {
      let names: string[];
      try {
        names = await readdir(dir(owner));
      } catch (err: unknown) {
        if (toErrnoCode(err) === 'ENOENT') return [];
        throw err;
      }
      const states: TaskState[] = [];
      for (const name of names) {
        if (!name.endsWith('.json')) continue;
        const tag = name.slice(0, -'.json'.length);
        const state = await store.get(owner, tag);
        if (state === undefined) continue;
        if (nowMs >= state.createdMs + state.ttlMs) await store.remove(owner, tag);
        else states.push(state);
      }
      return states;
    },
    async remove(owner, tag) {
      // The state last: a task with no state file is gone, whatever else is left.
      for (const ext of ['out', 'end', 'json'] as const) await unlink(file(owner, tag, ext)).catch(ignoreMissing);
    },
    async sweep(nowMs) {
      let owners: string[];
      try {
        owners = await readdir(join(root, TASKS_DIR));
      } catch (err: unknown) {
        if (toErrnoCode(err) === 'ENOENT') return;
        throw err;
      }
      for (const owner of owners) {
        if ((await store.list(owner, nowMs)).length > 0) continue;
        // Empty now (a task written meanwhile keeps it: rmdir refuses a folder with files).
        await rmdir(dir(owner)).catch(() => undefined);
      }
    },
  };
  return store;
}

function parseState(text: string, owner: string, tag: string): TaskState | undefined {
  const o = jsonObjectOf(text);
  if (o === undefined || o.owner !== owner || o.tag !== tag) return undefined;
  const { key, tool, status, toolError, message, createdMs, updatedMs, ttlMs, pollMs, aliveMs } = o;
  if (typeof key !== 'string' || typeof tool !== 'string') return undefined;
  if (typeof status !== 'string' || !STATUSES.includes(status)) return undefined;
  if (![createdMs, updatedMs, ttlMs, pollMs, aliveMs].every((n) => typeof n === 'number' && Number.isFinite(n)))
    return undefined;
  return {
    tag,
    owner,
    key,
    tool,
    status: status as TaskStatus,
    ...(toolError === true && { toolError: true }),
    ...(typeof message === 'string' && { message }),
    createdMs: createdMs as number,
    updatedMs: updatedMs as number,
    ttlMs: ttlMs as number,
    pollMs: pollMs as number,
    aliveMs: aliveMs as number,
  };
}

function parseOutcome(text: string): TaskOutcome | undefined {
  const o = jsonObjectOf(text);
  if (o === undefined) return undefined;
  const { result, error } = o;
  if (typeof result === 'object' && result !== null && !Array.isArray(result))
    return { result: result as Record<string, unknown> };
  if (typeof error === 'object' && error !== null) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (typeof code === 'number' && typeof message === 'string') return { error: { code, message } };
  }
  return undefined;
}
