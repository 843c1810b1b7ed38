/**
 * The E2B backend: sandboxes on E2B's cloud or on Alibaba Cloud's E2B-compatible service. An idle sandbox sleeps
 * (paused, with its memory where the service allows it) and wakes when its session, handle or name comes back. What
 * finds it again, on any instance, is e2b-catalog.ts's: records under E2B_STATE_DIR, or E2B's listing; a service that
 * cannot list (Alibaba Cloud's) without E2B_STATE_DIR keeps nothing past the instance that made a sandbox, so its
 * sandboxes are killed when idle, as before sandboxes slept.
 */
import { type Clock, SYSTEM_CLOCK } from '../../clock';
import type { E2BConfig } from '../../config';
import { type E2BEgressOptions, NO_E2B_EGRESS } from '../../egress/e2b-network';
import { AppError } from '../../errors';
import type { Logger } from '../../log';
import { SingleFlight } from '../../single-flight';
import { createRecordStore, type SandboxRecord, type SleepState } from '../records';
import type { RetentionPolicy } from '../retention';
import { toOwnerTag, toSandboxTag } from '../sandbox-name';
import { createTombstoneStore } from '../tombstones';
import type { BackendStatus, CreateOptions, Sandbox, SandboxOwner, SandboxProvider, SleepMode } from '../types';
import { type CreateContext, createE2BSandbox } from './create-sandbox';
import { createE2BCatalog } from './e2b-catalog';
import { createE2BRecords } from './e2b-records';
import { E2BSandbox } from './e2b-sandbox';
import { toE2BAppError } from './errors';
import { type LeaseTerms, leaseTerms } from './lease';
import { createRateGate, type RetryOptions, retryWithBackoff } from './retry';
import { type E2BSandboxApi, type E2BSdk, type FoundSandbox, loadE2BSdk } from './sdk';
import { E2BSleep } from './sleep-terms';
import { E2B_METADATA, toTag } from './tags';

export interface E2BProviderOptions {
  config: E2BConfig;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: how long an unused sandbox runs before it sleeps (e2b/lease.ts). */
  idleTtlMs: number;
  logger: Logger;
  /** @default the real SDK, loaded on first use */
  loadSdk?: () => Promise<E2BSdk>;
  /** Renew a sandbox's lease at most this often. @default 30 s, or a quarter of a shorter idle TTL's */
  renewEveryMs?: number;
  /** Bytes kept per output stream. @default 65_536 */
  maxOutputBytes?: number;
  /** How long 429s on creation are retried. @default 10 s budget */
  retry?: RetryOptions;
  /** Time one control-plane request may take (the SDK's own timer). @default 30_000 */
  requestTimeoutMs?: number;
  clock?: Clock;
  /** How long sleeping sandboxes are kept, and how many per credential. @default 7 days, 10 */
  retention?: RetentionPolicy;
  /**
   * A tag of MCP_SESSION_SECRET, kept in unnamed sandboxes' records (one signed with another is unreachable).
   * @default '' (no records are kept without E2B_STATE_DIR anyway)
   */
  secretTag?: string;
  /** The egress settings a principal's sandboxes get (egress/e2b-network.ts). @default no egress */
  egressOf?: (principal: string) => E2BEgressOptions;
}

/** How long an instance waits for a sandbox another one is creating under a claimed name, and how often it looks. */
const CLAIM_WAIT_MS = 30_000;
const CLAIM_POLL_MS = 500;

/** An ended session's record name under E2B_STATE_DIR: its key hashed, as its metadata tag is. */
function endedName(sessionKey: string): string {
  return `mcp-session-${toTag(sessionKey)}`;
}

/** Creates the provider. Nothing is loaded or called until the first sandbox is needed. */
export function createE2BSandboxProvider(options: E2BProviderOptions): SandboxProvider {
  const {
    config,
    logger,
    loadSdk = loadE2BSdk,
    maxOutputBytes = 65_536,
    requestTimeoutMs = 30_000,
    clock = SYSTEM_CLOCK,
    retention = { retentionMs: 7 * 24 * 3_600_000, maxSleeping: 10 },
    secretTag = '',
  } = options;
  const now = (): number => clock.now();
  const lease = leaseTerms(options.idleTtlMs, options.renewEveryMs);
  const gate = createRateGate(config.maxCreatesPerS, clock);
  const sleep = new E2BSleep(config.sleep, logger);
  /** The SDK, loaded on the first sandbox (again on the next, if that load failed). */
  const sdkOnce = new SingleFlight<E2BSdk>();
  const sdk = (): Promise<E2BSdk> => sdkOnce.get(loadSdk);
  const connection = { apiKey: config.apiKey, domain: config.domain, apiUrl: config.apiUrl, requestTimeoutMs };
  const tombstones = config.stateDir === undefined ? undefined : createTombstoneStore(config.stateDir, { now });
  const store = config.stateDir === undefined ? undefined : createRecordStore(config.stateDir);
  const records = createE2BRecords(store, now, secretTag);
  const egressOf = options.egressOf ?? (() => NO_E2B_EGRESS);
  /**
   * A sandbox found again gets the settings in force now (a policy or a secret changed since it was made). A
   * service without the update (404, 400, 501: Alibaba Cloud's may not have it) keeps those it was created with,
   * which is logged.
   */
  const updateEgress = async (loaded: E2BSdk, owner: SandboxOwner, sandboxId: string): Promise<void> => {
    try {
      await loaded.updateNetwork(sandboxId, egressOf(owner.principal), connection);
    } catch (err: unknown) {
      logger.warn('sandbox egress settings not updated: it keeps those it was created with', {
        backend: 'e2b',
        sandbox: sandboxId,
        error: err instanceof Error ? err.name : 'error',
        status: (err as { statusCode?: number }).statusCode,
      });
    }
  };
  /** Sandboxes open here, by E2B id: never deleted by a sweep from here. */
  const openHere = new Map<string, E2BSandbox>();
  const live = (): E2BSandbox[] => {
    for (const [id, sandbox] of openHere) if (sandbox.isGone()) openHere.delete(id);
    return [...openHere.values()];
  };
  const catalogs = createE2BCatalog({
    sdk,
    connection,
    store,
    policy: retention,
    leaseLengthMs: lease.lengthMs,
    secretTag,
    isOpenHere: (sandboxId) => live().some((s) => s.id === sandboxId),
    isTagOpenHere: (tag) => live().some((s) => s.tag === tag),
    now,
    logger,
  });

  const wrap = (owner: SandboxOwner, api: E2BSandboxApi, loaded: E2BSdk, made: Wrapped): Sandbox => {
    const { sandboxId } = api;
    const sandbox = new E2BSandbox({
      api,
      errors: loaded.errors,
      template: config.template,
      apiKey: config.apiKey,
      ...made.terms,
      maxOutputBytes,
      charts: config.charts,
      clock,
      tag: toSandboxTag(owner.sessionKey),
      ...(made.woke !== undefined && { woke: made.woke }),
      sleep: {
        mode: made.mode,
        pause: (keepMemory) => loaded.pause(sandboxId, { ...connection, keepMemory }),
        async onSleep(state) {
          await records.asleep(owner, sandboxId, state);
          // What sleeps counts against its owner's caps: past them, its least recently used sleeping sandboxes go.
          await catalogs.catalog.makeRoom(owner.principal, 0).catch(() => undefined);
        },
        onUsed: () => void records.used(owner, sandboxId).catch(() => undefined),
        onKill: () => records.killed(owner),
      },
    });
    openHere.set(sandboxId, sandbox);
    return sandbox;
  };

  /**
   * The record of `owner`'s sandbox, once it names one: a named sandbox's record appears with its name claim, and
   * names its sandbox once the instance that claimed it made it (meanwhile this one waits, rather than make a second).
   */
  const recordOf = async (owner: SandboxOwner): Promise<SandboxRecord | undefined> => {
    for (let waitedMs = 0; ; waitedMs += CLAIM_POLL_MS) {
      const record = await records.get(owner);
      if (record === undefined || record.sandboxId !== undefined) return record;
      if (waitedMs >= CLAIM_WAIT_MS) {
        throw new AppError(
          'backend_busy',
          'This sandbox is still being created by another call; try again in a few seconds.',
        );
      }
      await clock.sleep(CLAIM_POLL_MS);
    }
  };

  /** The sandbox of `owner` the backend knows of, running or paused, before anyone connects. */
  const findExisting = async (owner: SandboxOwner, loaded: E2BSdk): Promise<Existing | undefined> => {
    const record = await recordOf(owner);
    if (record?.sandboxId !== undefined) return { sandboxId: record.sandboxId, record };
    if ((await catalogs.source()) !== 'listing') return undefined;
    const tags = { [E2B_METADATA.session]: toTag(owner.sessionKey), [E2B_METADATA.owner]: toOwnerTag(owner.principal) };
    const [found] = await retryWithBackoff(
      () => loaded.findByMetadata(tags, { ...connection, retries: 0 }),
      (err) => err instanceof loaded.errors.RateLimitError,
      { clock, ...options.retry },
    );
    return found === undefined ? undefined : { sandboxId: found.sandboxId, found };
  };

  return {
    status(): BackendStatus {
      return {
        backend: 'e2b',
        ready: config.apiKey !== undefined,
        isolation: 'e2b-microvm',
        detail: config.apiKey === undefined ? 'E2B_API_KEY is not set' : `template ${config.template}`,
      };
    },
    sleepMode: () => (catalogs.canSleep() ? sleep.mode() : 'off'),
    catalog: catalogs.catalog,
    async create(owner: SandboxOwner, createOptions: CreateOptions = {}): Promise<Sandbox> {
      catalogs.maybeSweep();
      // A sandbox nobody may come back for lives on its first lease at E2B too, so that a lost instance leaves it
      // only that long; confirmLease() moves it to the idle TTL's terms.
      const terms =
        owner.firstLeaseMs === undefined || owner.firstLeaseMs >= options.idleTtlMs
          ? { lease }
          : { lease: leaseTerms(owner.firstLeaseMs, options.renewEveryMs), confirmedLease: lease };
      const loaded = await sdk();
      const context: CreateContext = {
        sdk: loaded,
        connection,
        template: config.template,
        apiKey: config.apiKey,
        gate,
        sleep,
        canSleep: (await catalogs.source()) !== 'none',
        retry: options.retry,
        clock,
        logger,
        wakeLeaseMs: lease.lengthMs,
        egress: egressOf(owner.principal),
      };
      const made = await createE2BSandbox(context, owner, createOptions, terms.lease.lengthMs);
      await records.created(owner, made.api.sandboxId, {
        ...(made.template !== config.template && { template: made.template }),
        ...(made.snapshotId !== undefined && { snapshotId: made.snapshotId }),
      });
      return wrap(owner, made.api, loaded, { mode: made.sleep, terms });
    },
    // E2B keeps nothing an instance could record an ended session in: metadata is fixed at creation, and a
    // killed sandbox is listed nowhere. With E2B_STATE_DIR (storage every instance shares) ended sessions are
    // recorded there; without it an ended id is refused by the instance that ended it (legacy-lane.ts) and,
    // replayed elsewhere, gets a fresh, empty sandbox, for the same credential only (docs/security.md, "Ended means
    // ended").
    // The store also deletes those whose time has passed, now and then, on a record or a lookup (FC freezes timers).
    recordEnded: async ({ sessionKey }: SandboxOwner, untilMs: number) =>
      tombstones?.record(endedName(sessionKey), untilMs),
    hasEnded: async ({ sessionKey }: SandboxOwner, nowMs: number) =>
      (await tombstones?.has(endedName(sessionKey), nowMs)) === true,
    async attach(owner: SandboxOwner): Promise<Sandbox | undefined> {
      catalogs.maybeSweep();
      const loaded = await sdk();
      try {
        const existing = await findExisting(owner, loaded);
        if (existing === undefined) return undefined;
        const woke = asleepOf(existing, lease.lengthMs, now());
        // Connecting renews the lease and resumes a paused sandbox.
        const api = await loaded.connect(existing.sandboxId, { ...connection, timeoutMs: lease.lengthMs });
        logger.info(woke !== undefined ? 'sandbox woken' : 'sandbox re-attached', {
          backend: 'e2b',
          sandbox: existing.sandboxId,
        });
        await records.used(owner, existing.sandboxId);
        await updateEgress(loaded, owner, existing.sandboxId);
        const { found } = existing;
        return wrap(owner, api, loaded, {
          mode: sleepModeOf(existing, sleep.mode()),
          ...(woke !== undefined && { woke }),
          terms: { lease, ...(found !== undefined && woke === undefined && { priorLeaseEnd: found.endAt }) },
        });
      } catch (err: unknown) {
        if (err instanceof loaded.errors.SandboxNotFoundError || err instanceof loaded.errors.NotFoundError) {
          await records.killed(owner);
          return undefined;
        }
        throw toE2BAppError(err, loaded.errors, {
          operation: 're-attaching the sandbox',
          template: config.template,
          apiKey: config.apiKey,
        });
      }
    },
  };
}

/** What a sandbox is wrapped with: how it sleeps, what its sleep kept, its lease. */
interface Wrapped {
  readonly mode: SleepMode;
  readonly woke?: SleepState;
  readonly terms: { lease: LeaseTerms; confirmedLease?: LeaseTerms; priorLeaseEnd?: Date };
}

/** A sandbox found again: by its record, or in the listing. */
interface Existing {
  readonly sandboxId: string;
  readonly found?: FoundSandbox;
  readonly record?: SandboxRecord;
}

/**
 * What its sleep kept, when it sleeps: paused in the listing, asleep by its record, or (by its record) unused
 * past its lease, which E2B paused it at.
 */
function asleepOf({ found, record }: Existing, leaseLengthMs: number, nowMs: number): SleepState | undefined {
  const asleep =
    found?.state === 'paused' ||
    record?.sleep !== undefined ||
    (record !== undefined && nowMs - record.lastUsedMs > leaseLengthMs);
  if (!asleep) return undefined;
  const memory = record?.sleep?.memory ?? found?.metadata[E2B_METADATA.sleep] === 'memory';
  const sinceMs = record?.sleep?.sinceMs ?? found?.endAt.getTime() ?? record?.lastUsedMs ?? nowMs;
  return { sinceMs, memory, stopped: [] };
}

/** How a sandbox found again sleeps: as its metadata says it was made, else as this provider's sandboxes do. */
function sleepModeOf({ found }: Existing, current: SleepMode): SleepMode {
  if (found === undefined) return current;
  const made = found.metadata[E2B_METADATA.sleep];
  return made === 'memory' || made === 'files' ? made : 'off';
}
