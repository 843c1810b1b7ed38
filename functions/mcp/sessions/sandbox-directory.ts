/**
 * The owner's sandboxes as one tool call sees them (sandbox/directory.ts): listed from the backend's catalog,
 * opened by name (found, woken, created or copied), named, deleted. A named sandbox is a handle entry of the sandbox
 * table under its own key, shared by every session and handle that works in it on this instance; the call's era
 * decides what "working in it" means (`CallScope`): a 2025 session moves there, a 2026-07-28 call gets its handle.
 */
import { AppError } from '../errors';
import type { Logger } from '../log';
import type { SandboxSummary } from '../sandbox/catalog';
import type { Deleted, ListedSandbox, Opened, OpenRequest, SandboxDirectory } from '../sandbox/directory';
import { FRESH_SANDBOX_NOTICE } from '../sandbox/lazy-sandbox';
import { toSandboxTag } from '../sandbox/sandbox-name';
import type { CreateOptions, ForkSource, SandboxProvider } from '../sandbox/types';
import type { SandboxTable, TableEntry } from './sandbox-table';
import { type SignedIdCodec, toSessionTag } from './session-id';

export interface DirectoryDeps {
  table: SandboxTable;
  provider: SandboxProvider;
  ids: SignedIdCodec;
  /** MCP_SESSION_MAX_AGE_S in milliseconds: a deleted sandbox's handles are refused for this long. */
  maxAgeMs: number;
  /** MCP_SANDBOX_RETENTION_S in milliseconds. */
  retentionMs: number;
  now: () => number;
  logger: Logger;
}

/** How one call's era moves it between sandboxes. */
export interface CallScope {
  readonly principal: string;
  /** The entry whose sandbox the call works in. */
  current(): TableEntry;
  /** From now on the caller works in `entry`: a 2025 session moves there; a 2026-07-28 call gets its handle. */
  moveTo(entry: TableEntry): Promise<void>;
  /** The sandbox the caller worked in was deleted (2026-07-28: a handle of a new, empty one is given back). */
  left(): Promise<void>;
}

/** A deleted sandbox's id and handles stay refused a second past the longest a handle minted now could live. */
const HANDLE_SLACK_MS = 1000;

/** Makes the directory of one call. */
export function createCallDirectory(deps: DirectoryDeps, scope: CallScope): SandboxDirectory {
  const { table, provider, ids, now, logger } = deps;
  const { catalog } = provider;
  const { principal } = scope;

  /** Room for one more sandbox entry of this credential, or the refusal as the call's error. */
  const makeRoom = (): void => {
    const refusal = table.makeRoom('handle', principal);
    if (refusal !== undefined) throw new AppError('capacity', refusal.message);
  };
  /** The entry of the named sandbox `summary` on this instance: held, or opened (found again on first use). */
  const entryOf = (summary: SandboxSummary & { key: string; name: string }): TableEntry => {
    const held = table.get('handle', summary.key);
    if (held !== undefined) return held;
    makeRoom();
    return table.hold({
      kind: 'handle',
      key: summary.key,
      tag: toSessionTag(summary.key),
      principal,
      issuedAtMs: now(),
      resume: true,
      name: summary.name,
    });
  };
  const findNamed = async (name: string) => {
    const found = await catalog.findNamed(principal, name);
    return found?.key !== undefined && found.name !== undefined
      ? { ...found, key: found.key, name: found.name }
      : undefined;
  };

  /** Opens the owner's sandbox `summary`: woken or attached, or made again when it was lost. */
  const openExisting = async (summary: SandboxSummary & { key: string; name: string }): Promise<Opened> => {
    const held = table.get('handle', summary.key);
    const runningHere = held?.sandbox.current() !== undefined;
    const entry = entryOf(summary);
    const sandbox = await entry.sandbox.get();
    const notice = entry.sandbox.takeNotice();
    await scope.moveTo(entry);
    const how =
      notice === FRESH_SANDBOX_NOTICE ? 'replaced' : notice !== undefined && !runningHere ? 'woken' : 'running';
    return {
      name: summary.name,
      sandboxId: sandbox.id,
      how,
      ...(notice !== undefined && { notice }),
      ...(how === 'woken' && sandbox.woke !== undefined && { woke: sandbox.woke }),
    };
  };

  /** Creates the named sandbox `name` (a copy of `from`), and moves the call there. */
  const createNamed = async (name: string, create: CreateOptions): Promise<Opened> => {
    const madeRoom = await catalog.makeRoom(principal, 1);
    const key = ids.mint('named', principal, now()).key;
    if (!(await catalog.claimName(principal, name, key))) {
      // Another call made it meanwhile: that one is opened.
      const made = await findNamed(name);
      if (made === undefined) throw new AppError('sandbox_error', `The name "${name}" is being taken; try again.`);
      return openExisting(made);
    }
    let entry: TableEntry | undefined;
    try {
      makeRoom();
      entry = table.hold({
        kind: 'handle',
        key,
        tag: toSessionTag(key),
        principal,
        issuedAtMs: now(),
        resume: false,
        name,
        create,
      });
      const sandbox = await entry.sandbox.get();
      await scope.moveTo(entry);
      logger.info('named sandbox created', { sandbox: sandbox.id, fork: create.from !== undefined });
      return {
        name,
        sandboxId: sandbox.id,
        how: create.from === undefined ? 'created' : 'forked',
        ...(madeRoom !== undefined && { madeRoom }),
      };
    } catch (err: unknown) {
      if (entry !== undefined) table.drop(entry);
      await catalog.releaseName(principal, name, key).catch(() => undefined);
      throw err;
    }
  };

  /** The sandbox a fork copies: the owner's sandbox named `from`. */
  const sourceNamed = async (from: string): Promise<ForkSource> => {
    const source = await findNamed(from);
    if (source === undefined)
      throw new AppError('not_found', `You have no sandbox named "${from}" to copy; list_sandboxes shows yours.`);
    // One open here is copied as it is now.
    const here = table.get('handle', source.key)?.sandbox.current()?.id;
    return {
      tag: source.tag,
      ...((here ?? source.sandboxId) !== undefined && { sandboxId: here ?? source.sandboxId }),
    };
  };

  const current = (): TableEntry => scope.current();
  return {
    currentName: () => current().name,
    sleepMode: () => provider.sleepMode(),
    source: () => catalog.source,
    deleteAtMs() {
      const entry = current();
      if (provider.sleepMode() === 'off') return undefined;
      const byUse = now() + deps.retentionMs;
      return entry.named ? byUse : Math.min(byUse, entry.issuedAtMs + deps.maxAgeMs + HANDLE_SLACK_MS);
    },
    async list(): Promise<ListedSandbox[]> {
      const nowMs = now();
      const all = await catalog.list(principal);
      const past = all.filter((s) => s.state === 'sleeping' && s.deleteAtMs <= nowMs);
      for (const sandbox of past) await catalog.delete(principal, sandbox).catch(() => undefined);
      const currentId = current().sandbox.current()?.id;
      return all
        .filter((s) => !past.includes(s))
        .map((s) => ({ ...s, current: s.sandboxId !== undefined && s.sandboxId === currentId }));
    },
    async open({ name, template, from }: OpenRequest): Promise<Opened> {
      const existing = await findNamed(name);
      if (existing !== undefined) {
        if (from !== undefined) {
          throw new AppError(
            'invalid_input',
            `You have a sandbox named "${name}" already: choose another name for the copy of "${from}", or ` +
              `delete_sandbox "${name}" first.`,
          );
        }
        if (template !== undefined && existing.template !== undefined && existing.template !== template) {
          throw new AppError(
            'invalid_input',
            `Your sandbox "${name}" was made from the template "${existing.template}"; a template applies only ` +
              'when open_sandbox creates a sandbox. Leave it out, or choose a new name.',
          );
        }
        return openExisting(existing);
      }
      const source = from === undefined ? undefined : await sourceNamed(from);
      return createNamed(name, {
        ...(template !== undefined && { template }),
        ...(source !== undefined && { from: source }),
      });
    },
    async name(name) {
      const entry = current();
      if (entry.named) {
        throw new AppError(
          'invalid_input',
          `This sandbox is named "${entry.name ?? 'already'}" already. To keep a copy under another name, use ` +
            `open_sandbox with "from".`,
        );
      }
      if ((await findNamed(name)) !== undefined)
        throw new AppError('invalid_input', `You have a sandbox named "${name}" already; choose another name.`);
      const sandbox = await entry.sandbox.get();
      const opened = await createNamed(name, { from: { tag: toSandboxTag(entry.key), sandboxId: sandbox.id } });
      // The copy is the sandbox now: the one it was copied from goes (a 2026-07-28 handle of it is refused).
      if (entry.kind === 'handle') await table.end(entry, 'named');
      else await entry.sandbox.kill().catch(() => undefined);
      return opened;
    },
    async delete(name): Promise<Deleted> {
      const summary = await findNamed(name);
      if (summary === undefined)
        throw new AppError('not_found', `You have no sandbox named "${name}"; list_sandboxes shows yours.`);
      const wasCurrent = current().key === summary.key;
      const untilMs = now() + deps.maxAgeMs + HANDLE_SLACK_MS;
      const held = table.get('handle', summary.key);
      if (held !== undefined) await table.end(held, 'deleted', untilMs);
      else await provider.recordEnded({ sessionKey: summary.key, principal }, untilMs);
      await catalog.delete(principal, summary);
      if (wasCurrent) await scope.left();
      logger.info('named sandbox deleted', { sandbox: summary.sandboxId });
      return { name, ...(summary.sandboxId !== undefined && { sandboxId: summary.sandboxId }), wasCurrent };
    },
  };
}
