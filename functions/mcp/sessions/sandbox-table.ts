/**
 * The one table of the sandboxes this instance holds, for both protocol eras. An entry is a 2025 session (named
 * by its signed session id) or a 2026-07-28 sandbox handle; either way it holds one lazy sandbox of one
 * credential. The table owns what happens to entries: the idle sweep and the leases, making room at the caps as
 * fair-share.ts decides, eviction, the calls running on each entry (so that a busy one is never let go), the
 * sessions that ended (tombstones) and shutdown. The lanes only translate their era's requests to it.
 *
 * Nothing runs on a timer: FC freezes timers between requests, so the lanes sweep on every request.
 */
import { describeError } from '../errors';
import type { Logger } from '../log';
import { createLazySandbox, type LazySandbox } from '../sandbox/lazy-sandbox';
import type { CreateOptions, SandboxProvider } from '../sandbox/types';
import {
  type Cap,
  createSandboxAdmission,
  type Holder,
  makeRoom,
  type Refusal,
  type SandboxHolder,
} from './fair-share';
import { createIdleCache } from './idle-cache';
import { RecentSet } from './recent-set';

/** A 2025 session, or a 2026-07-28 sandbox handle. */
export type EntryKind = 'session' | 'handle';

/** One call running on an entry; a 2025 client cancels it by its JSON-RPC id. */
interface RunningCall {
  readonly requestId: string | number | undefined;
  readonly controller: AbortController;
}

export interface TableEntry extends Holder {
  readonly kind: EntryKind;
  /** The random part of the signed id: names the sandbox. */
  readonly key: string;
  /** Short hash of the signed id, for logs (never the id). */
  readonly tag: string;
  readonly principal: string;
  /** When the signed id was issued: an ended session's tombstone holds until its max age from then. */
  readonly issuedAtMs: number;
  readonly sandbox: LazySandbox;
  lastUsedMs: number;
  readonly calls: Set<RunningCall>;
  /** A named sandbox: kept whatever becomes of ids (its name is its way back). */
  readonly named: boolean;
  /** Its name, when it was opened by name. */
  readonly name?: string;
  /**
   * A 2025 session that opened a named sandbox (open_sandbox): its calls run there from then on, through that
   * sandbox's own entry.
   */
  attached?: { readonly key: string; readonly name: string };
}

/** What a new entry is. */
export interface EntryRequest {
  readonly kind: EntryKind;
  readonly key: string;
  readonly tag: string;
  readonly principal: string;
  readonly issuedAtMs: number;
  /** Its id came from a client: a sandbox may exist already, made here earlier or by another instance. */
  readonly resume: boolean;
  /** With `resume`: the id is new (minted before the core was loaded), so a sandbox not found is no news. */
  readonly quiet?: boolean;
  /** A named sandbox: its name, when known. */
  readonly name?: string;
  /** With `resume`: a named sandbox, gone for good when it is not found (lazy-sandbox.ts). */
  readonly mustExist?: boolean;
  /** How its sandbox is made (template, fork). */
  readonly create?: CreateOptions;
}

export interface SandboxTableOptions {
  provider: SandboxProvider;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds. */
  idleTtlMs: number;
  /** MCP_SANDBOX_FIRST_LEASE_S in milliseconds: a handle that never came back ends after this. */
  firstLeaseMs: number;
  /** MCP_SESSION_MAX_AGE_S in milliseconds: how long an ended session's tombstone must hold. */
  maxAgeMs: number;
  /** The caps on entries of each kind, per credential and in all. */
  caps: Readonly<Record<EntryKind, { perCredential: Cap; total: Cap }>>;
  /** MCP_MAX_SANDBOXES_PER_CREDENTIAL: running sandboxes of one credential, of both kinds. */
  sandboxesPerCredential: Cap;
  logger: Logger;
  now: () => number;
}

export interface SandboxTable {
  /** The entry held for `key`, marked used now. */
  get(kind: EntryKind, key: string): TableEntry | undefined;
  /** Makes room for one more entry of `principal` (evicting as fair-share.ts decides), or says why there is none. */
  makeRoom(kind: EntryKind, principal: string): Refusal | undefined;
  /** Why there is no room for one more entry of `principal`, or `undefined` when there is (nothing is evicted). */
  hasRoom(kind: EntryKind, principal: string): Refusal | undefined;
  /** Holds a new entry, as the most recently used (room must have been made). */
  hold(request: EntryRequest): TableEntry;
  /**
   * Runs `call` on `entry`: busy meanwhile, used when it ends. The signal aborts on `cancel` or when it ends.
   * `target`: the entry whose sandbox the call works in, when another's (a session's named sandbox): busy and used
   * too, and ending it stops the call as well.
   */
  run<T>(
    entry: TableEntry,
    requestId: string | number | undefined,
    call: (signal: AbortSignal) => Promise<T>,
    target?: TableEntry,
  ): Promise<T>;
  /** Aborts the calls of `entry` with this JSON-RPC id. */
  cancel(entry: TableEntry, requestId: string | number): void;
  /**
   * Ends an entry for good: its sandbox destroyed (a named sandbox's only when it is the named entry itself), its id
   * refused on every instance until it could expire (`untilMs`: until then instead).
   */
  end(entry: TableEntry, reason: string, untilMs?: number): Promise<void>;
  /** Lets an entry go without ending it (its sandbox kept, its id valid): a named sandbox deleted elsewhere. */
  drop(entry: TableEntry): void;
  /**
   * Whether the session ended, once any expiry of it has settled: `'here'` (this instance ended it),
   * `'elsewhere'` (the backend's tombstone says so), or `undefined`.
   */
  hasEnded(session: Pick<EntryRequest, 'key' | 'tag' | 'principal'>): Promise<'here' | 'elsewhere' | undefined>;
  /** Lets entries idle past their lease go. */
  sweep(): void;
  counts(): { sessions: number; sandboxes: number };
  /** Running sandboxes by the principal that holds them (for the telemetry's held-sandboxes gauge). */
  sandboxesByPrincipal(): Map<string, number>;
  /** Ends every entry at shutdown: sandboxes kept (`keepSandboxes`) or destroyed, then `flushMs` for answers. */
  shutdown(options: { keepSandboxes: boolean; flushMs: number }): Promise<void>;
}

/** The log's reason for each outcome of idle expiry. */
const IDLE_REASONS = {
  destroyed: 'idle_expired',
  slept: 'idle_asleep',
  released: 'idle_here_used_elsewhere',
} as const;

/** Ended session tags this instance remembers, to answer them 404 without asking the backend. */
const ENDED_REMEMBERED = 10_000;
/** Ids carry their issue time in whole seconds: a tombstone holds a second past the id's max age. */
const ISSUE_TIME_RESOLUTION_MS = 1000;

/** Creates the empty table. */
export function createSandboxTable(options: SandboxTableOptions): SandboxTable {
  const { provider, logger, now } = options;
  const firstLeaseMs = Math.min(options.firstLeaseMs, options.idleTtlMs);
  // A handle that never came back lives on the first lease; once it comes back (sessions always have), the idle TTL.
  const leaseOf = (entry: TableEntry): number => (entry.sandbox.isConfirmed() ? options.idleTtlMs : firstLeaseMs);
  const entries = createIdleCache<TableEntry>({ idleTtlMs: leaseOf });
  const ended = new RecentSet(ENDED_REMEMBERED);
  /** Expiries still deciding whether a session's sandbox goes: a request for it waits for the verdict. */
  const expiring = new Map<string, Promise<void>>();
  const slot = (kind: EntryKind, key: string): string => `${kind}:${key}`;

  /** The backend's tombstone: no instance revives the id for as long as it could be valid. */
  const recordEnded = async (entry: TableEntry, until?: number): Promise<void> => {
    const untilMs = until ?? entry.issuedAtMs + options.maxAgeMs + ISSUE_TIME_RESOLUTION_MS;
    await provider.recordEnded(entry.sandbox.owner, untilMs).catch((err: unknown) => {
      logger.error('session tombstone not recorded: another instance could revive the id', {
        session: entry.tag,
        error: describeError(err),
      });
    });
  };

  /**
   * Idle past its lease here: the sandbox sleeps, for its session, handle or name to wake it, unless another
   * instance used it lately (then it is let go). A handle that never came back, and every sandbox of a backend that
   * cannot sleep, is destroyed; a session whose sandbox was destroyed is over.
   */
  const expire = async (entry: TableEntry): Promise<void> => {
    if (entry.kind === 'handle') {
      const then = entry.sandbox.isConfirmed() ? 'sleep' : 'destroy';
      const outcome = await entry.sandbox.expire(leaseOf(entry), now(), then).catch(() => undefined);
      if (outcome === 'slept') logger.info('sandbox asleep', { sandbox: entry.tag, reason: IDLE_REASONS.slept });
      return;
    }
    try {
      // A session that never had a sandbox leaves nothing to revive: no tombstone is written for it.
      const hadSandbox = entry.sandbox.mayExist();
      const outcome = await entry.sandbox.expire(options.idleTtlMs, now());
      if (outcome === 'destroyed') {
        ended.add(entry.tag);
        if (hadSandbox) await recordEnded(entry);
      }
      const line = { session: entry.tag, reason: IDLE_REASONS[outcome] };
      logger.info(
        outcome === 'destroyed' ? 'session closed' : outcome === 'slept' ? 'session asleep' : 'session released',
        line,
      );
    } catch (err: unknown) {
      logger.error('session expiry failed', { session: entry.tag, error: describeError(err) });
    }
  };
  const startExpiry = (entry: TableEntry): void => {
    const at = slot(entry.kind, entry.key);
    const done = expire(entry).finally(() => expiring.delete(at));
    expiring.set(at, done);
  };

  /** Lets an entry go for room: kept for its id to come back to, unless it is a handle that never came back. */
  const evict = (entry: TableEntry): void => {
    entries.remove(slot(entry.kind, entry.key));
    if (!entry.sandbox.isConfirmed()) {
      startExpiry(entry);
      return;
    }
    void entry.sandbox.release().catch(() => undefined);
    if (entry.kind === 'session') logger.info('session evicted', { session: entry.tag, reason: 'cap' });
  };

  const ofKind = function* (kind: EntryKind): Generator<TableEntry> {
    for (const entry of entries.values()) if (entry.kind === kind) yield entry;
  };
  const decide = (kind: EntryKind, principal: string) =>
    makeRoom({
      holders: ofKind(kind),
      principal,
      ...options.caps[kind],
      noun: kind === 'session' ? 'sessions' : 'sandboxes',
    });

  /** The running sandboxes of every entry: a credential's share counts them, of both kinds. */
  const sandboxHolders = function* (): Generator<SandboxHolder> {
    for (const entry of entries.values()) {
      if (!entry.sandbox.active()) continue;
      const release = async (): Promise<void> => {
        if (entry.sandbox.isConfirmed()) await entry.sandbox.release();
        else evict(entry);
      };
      yield { principal: entry.principal, lastUsedMs: entry.lastUsedMs, busy: entry.busy, release };
    }
  };

  const sweep = (): void => {
    // A call longer than the lease keeps its entry until it ends (its sandbox is in use).
    for (const entry of entries.takeExpired(now(), (held) => held.calls.size > 0)) startExpiry(entry);
  };
  const admit = createSandboxAdmission(sandboxHolders, options.sandboxesPerCredential, () =>
    logger.info('sandbox released', { reason: 'credential_share' }),
  );

  return {
    get: (kind, key) => entries.get(slot(kind, key), now()),
    makeRoom(kind, principal) {
      const decision = decide(kind, principal);
      if (!decision.ok) return decision.refusal;
      if (decision.evict !== undefined) evict(decision.evict);
      return undefined;
    },
    hasRoom(kind, principal) {
      const decision = decide(kind, principal);
      return decision.ok ? undefined : decision.refusal;
    },
    hold(request) {
      const { name } = request;
      // Named sandboxes were opened by name: they never live on a first lease.
      const firstLease = request.kind === 'handle' && !request.resume && name === undefined;
      const owner = {
        sessionKey: request.key,
        principal: request.principal,
        ...(firstLease && { firstLeaseMs }),
        ...(name !== undefined
          ? { name }
          : { reachableUntilMs: request.issuedAtMs + options.maxAgeMs + ISSUE_TIME_RESOLUTION_MS }),
      };
      const at = slot(request.kind, request.key);
      const sandbox = createLazySandbox(provider, owner, {
        resume: request.resume,
        quiet: request.quiet,
        admit: admit(request.principal),
        mustExist: request.mustExist,
        create: request.create,
        // The same sandbox may still be falling asleep here: it wakes once that is done.
        settled: () => expiring.get(at) ?? Promise.resolve(),
      });
      const calls = new Set<RunningCall>();
      const entry: TableEntry = {
        kind: request.kind,
        key: request.key,
        tag: request.tag,
        principal: request.principal,
        issuedAtMs: request.issuedAtMs,
        sandbox,
        lastUsedMs: now(),
        calls,
        busy: () => calls.size > 0 || sandbox.current()?.hasRunningBackground() === true,
        named: name !== undefined || request.mustExist === true,
        ...(name !== undefined && { name }),
      };
      entries.add(slot(entry.kind, entry.key), entry);
      return entry;
    },
    async run(entry, requestId, call, target) {
      const running: RunningCall = { requestId, controller: new AbortController() };
      const on = target === undefined || target === entry ? [entry] : [entry, target];
      for (const held of on) held.calls.add(running);
      try {
        return await call(running.controller.signal);
      } finally {
        for (const held of on) {
          held.calls.delete(running);
          entries.touch(slot(held.kind, held.key), now());
        }
      }
    },
    drop(entry) {
      if (entries.peek(slot(entry.kind, entry.key)) === entry) entries.remove(slot(entry.kind, entry.key));
      void entry.sandbox.release().catch(() => undefined);
    },
    cancel(entry, requestId) {
      for (const running of entry.calls) if (running.requestId === requestId) running.controller.abort();
    },
    async end(entry, reason, untilMs) {
      entries.remove(slot(entry.kind, entry.key));
      ended.add(entry.tag);
      try {
        if (entry.sandbox.mayExist() || untilMs !== undefined) await recordEnded(entry, untilMs);
        // The sandbox stops first: a call still running then ends with a result.
        await entry.sandbox.kill();
        for (const running of entry.calls) running.controller.abort();
        logger.info('session closed', { session: entry.tag, reason });
      } catch (err: unknown) {
        logger.error('session close failed', { session: entry.tag, reason, error: describeError(err) });
      }
    },
    async hasEnded({ key, tag, principal }) {
      await expiring.get(slot('session', key));
      if (ended.has(tag)) return 'here';
      if (!(await provider.hasEnded({ sessionKey: key, principal }, now()))) return undefined;
      ended.add(tag);
      return 'elsewhere';
    },
    sweep,
    counts() {
      let sessions = 0;
      let sandboxes = 0;
      for (const entry of entries.values()) {
        if (entry.kind === 'session') sessions += 1;
        if (entry.sandbox.current() !== undefined) sandboxes += 1;
      }
      return { sessions, sandboxes };
    },
    sandboxesByPrincipal() {
      const held = new Map<string, number>();
      for (const entry of entries.values())
        if (entry.sandbox.current() !== undefined) held.set(entry.principal, (held.get(entry.principal) ?? 0) + 1);
      return held;
    },
    async shutdown({ keepSandboxes, flushMs }) {
      if (keepSandboxes) {
        // Those past their lease end now; the rest are kept for their ids to come back to.
        sweep();
        await Promise.all(expiring.values());
      }
      const all = entries.takeAll();
      // A named sandbox is reached by its name whatever the secret: it is always kept.
      const keeps = (entry: TableEntry): boolean => keepSandboxes || entry.named;
      await Promise.all(
        all.map((entry) => (keeps(entry) ? entry.sandbox.release() : entry.sandbox.kill()).catch(() => undefined)),
      );
      await new Promise((resolve) => setTimeout(resolve, flushMs));
      logger.info('sessions ended for shutdown', {
        sessions: all.filter((entry) => entry.kind === 'session').length,
        sandboxes_kept: keepSandboxes,
      });
    },
  };
}
