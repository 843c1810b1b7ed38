/**
 * A session's or handle's sandbox, created (or re-attached, and woken) on first use; concurrent first uses share
 * one attempt.
 */
import { AppError } from '../errors';
import { SingleFlight } from '../single-flight';
import type { CreateOptions, Sandbox, SandboxOwner, SandboxProvider } from './types';
import { NAMED_SANDBOX_GONE, toWakeNotice } from './wake-notice';

/** What became of an idle sandbox: asleep, let go (another instance used it lately), or destroyed. */
export type IdleOutcome = 'slept' | 'released' | 'destroyed';

/** The handle tools get: the sandbox, created when a tool first needs it. */
export interface LazySandbox {
  /** Whom the sandbox belongs to. */
  readonly owner: SandboxOwner;
  /** The sandbox, creating (or re-attaching) it if needed. */
  get(): Promise<Sandbox>;
  /** The sandbox if it exists, without creating it. */
  current(): Sandbox | undefined;
  /**
   * The sandbox if it exists here or can be re-attached (woken), never making one: `undefined` when there is none
   * (a later `get()` still looks again, then makes one).
   */
  existing(): Promise<Sandbox | undefined>;
  /** True while the sandbox exists or is being made (it counts against its credential's share). */
  active(): boolean;
  /**
   * False only when no sandbox of its owner can exist: none was made or looked for through this handle since it was
   * opened as new or last killed. A session resumed from its id (it may have one elsewhere) or let go may have one.
   */
  mayExist(): boolean;
  /** Kills the sandbox (if any); the next `get()` creates a fresh one. */
  kill(): Promise<void>;
  /** Lets go of the sandbox without destroying it (eviction, shutdown). */
  release(): Promise<void>;
  /**
   * Idle expiry here: puts the sandbox to sleep (`then`: or destroys it) unless another instance used it within
   * `idleTtlMs` (or a call still runs), in which case it is only let go; a backend that cannot sleep destroys it.
   */
  expire(idleTtlMs: number, nowMs: number, then?: 'sleep' | 'destroy'): Promise<IdleOutcome>;
  /** A note for the next tool result (e.g. that an earlier sandbox was not found), once. */
  takeNotice(): string | undefined;
  /** The caller came back for it: it (and any sandbox made for it later) lives on the idle TTL. */
  confirm(): void;
  /** True once confirmed, or when it was never on a first lease. */
  isConfirmed(): boolean;
}

export interface LazySandboxOptions {
  /** The session existed before (recovered from its signed id): look for its sandbox before creating one. */
  resume?: boolean;
  /** With `resume`: a sandbox not found is expected (the session is new here), so no notice says it is fresh. */
  quiet?: boolean;
  /**
   * Asked, synchronously, before the sandbox is made (or re-attached): may make room by letting another of the
   * credential's sandboxes go, or throw (an AppError naming the limit) to refuse.
   */
  admit?: () => void;
  /**
   * With `resume`: a named sandbox reached by its handle or a session's choice: when it is not found it is gone for
   * good (deleted, or past its retention), and every use says so instead of making a fresh one.
   */
  mustExist?: boolean;
  /** How the sandbox is made: its template on every creation, `from` (a fork) on the first only. */
  create?: CreateOptions;
  /** Resolves once nothing else is putting this sandbox to sleep here (it is woken only then). */
  settled?: () => Promise<void>;
}

/** What `existing()` meets when its owner has no sandbox to re-attach. */
const NOT_FOUND = new Error('no sandbox to re-attach');

/** The note a recovered session gets when its earlier sandbox is gone. */
export const FRESH_SANDBOX_NOTICE =
  'Note: no earlier sandbox of this session was found (it expired, or lived on a server instance that is ' +
  'gone), so this is a fresh sandbox: files and state from before are gone.';

/** Creates the lazy sandbox of `owner`. A sandbox found gone is replaced by a fresh one on the next `get()`. */
export function createLazySandbox(
  provider: SandboxProvider,
  owner: SandboxOwner,
  options: LazySandboxOptions = {},
): LazySandbox {
  let confirmed = owner.firstLeaseMs === undefined;
  /** The sandbox made or attached, or being so: concurrent first uses share one attempt, a failed one is retried. */
  const sandbox = new SingleFlight<Sandbox>();
  let resume = options.resume === true;
  /** A sandbox was made or attached (or tried) since the start or the last kill. */
  let obtained = false;
  let notice: string | undefined;

  /** Set once a named sandbox was found gone: it stays gone. */
  let gone = false;
  let createOptions = options.create;

  const obtain = async (): Promise<Sandbox> => {
    if (gone) throw new AppError('sandbox_gone', NAMED_SANDBOX_GONE);
    await options.settled?.();
    if (resume) {
      const attached = await provider.attach(owner);
      resume = false;
      if (attached !== undefined) {
        if (attached.woke !== undefined) notice = toWakeNotice(attached.woke);
        return attached;
      }
      if (options.mustExist === true) {
        gone = true;
        throw new AppError('sandbox_gone', NAMED_SANDBOX_GONE);
      }
      if (options.quiet !== true) notice = FRESH_SANDBOX_NOTICE;
    }
    const { firstLeaseMs: _firstLease, ...confirmedOwner } = owner;
    const made = await provider.create(confirmed ? confirmedOwner : owner, createOptions);
    // A fork copies its source once; a reset later starts empty (with the same template).
    if (createOptions?.from !== undefined) createOptions = { ...createOptions, from: undefined };
    return made;
  };

  /** Re-attaches the owner's sandbox or finds there is none (NOT_FOUND); never makes one. */
  const attachOnly = async (): Promise<Sandbox> => {
    options.admit?.();
    await options.settled?.();
    const attached = await provider.attach(owner);
    if (attached === undefined) throw NOT_FOUND;
    resume = false;
    obtained = true;
    if (attached.woke !== undefined) notice = toWakeNotice(attached.woke);
    if (confirmed) attached.confirmLease?.();
    return attached;
  };

  /** Asks `admit` first: a refusal starts nothing. */
  const start = (): Promise<Sandbox> => {
    options.admit?.();
    obtained = true;
    return obtain().then((created) => {
      // Confirmed while it was being made.
      if (confirmed) created.confirmLease?.();
      return created;
    });
  };

  return {
    owner,
    get() {
      const existing = sandbox.value;
      if (existing?.isGone() === true) {
        // Best effort: if only the path to it failed, the old one would otherwise run on until its lease ends.
        void existing.kill().catch(() => undefined);
        sandbox.take();
      }
      return sandbox.get(start);
    },
    current: () => (sandbox.value?.isGone() === true ? undefined : sandbox.value),
    async existing() {
      if (gone) return undefined;
      const usable = (found: Sandbox): Sandbox | undefined => (found.isGone() ? undefined : found);
      if (!resume) return sandbox.current()?.then(usable, () => undefined);
      return sandbox.get(attachOnly).then(usable, (err: unknown) => {
        if (err === NOT_FOUND) return undefined;
        throw err;
      });
    },
    active: () => sandbox.starting || (sandbox.value !== undefined && !sandbox.value.isGone()),
    mayExist: () => resume || obtained,
    async kill() {
      let existing = sandbox.value ?? (await sandbox.current()?.catch(() => undefined));
      // A recovered session that has not touched its sandbox yet still owns one to kill.
      if (existing === undefined && resume) existing = await provider.attach(owner).catch(() => undefined);
      resume = false;
      sandbox.take();
      obtained = false;
      try {
        await existing?.kill();
      } catch (err: unknown) {
        // Not killed, so it may still be there.
        obtained = true;
        throw err;
      }
    },
    async expire(idleTtlMs, nowMs, then = 'sleep') {
      let existing = sandbox.value ?? (await sandbox.current()?.catch(() => undefined));
      const sleeps = then === 'sleep' && provider.sleepMode() !== 'off';
      // Not touched here: asleep already, or in use elsewhere. Only a backend that cannot sleep looks for it, to
      // destroy it.
      if (existing === undefined && resume && !sleeps) existing = await provider.attach(owner).catch(() => undefined);
      resume = true;
      sandbox.take();
      if (existing === undefined) return sleeps ? 'slept' : 'destroyed';
      const lastUsed = await existing.lastUseElsewhereMs().catch(() => undefined);
      if (lastUsed !== undefined && nowMs - lastUsed < idleTtlMs) {
        await existing.release();
        return 'released';
      }
      if (!sleeps) {
        await existing.kill();
        return 'destroyed';
      }
      return (await existing.sleep()) === undefined ? 'destroyed' : 'slept';
    },
    async release() {
      const existing = sandbox.value ?? (await sandbox.current()?.catch(() => undefined));
      sandbox.take();
      resume = true;
      await existing?.release();
    },
    takeNotice() {
      const taken = notice;
      notice = undefined;
      return taken;
    },
    isConfirmed: () => confirmed,
    confirm() {
      if (confirmed) return;
      confirmed = true;
      sandbox.value?.confirmLease?.();
    },
  };
}
