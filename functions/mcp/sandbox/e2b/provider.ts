/**
 * The E2B backend: sandboxes on E2B's cloud or on Alibaba Cloud's E2B-compatible service. An idle sandbox sleeps
 * (paused, with its memory where the service allows it) and wakes when its session, handle or name comes back. What
 * finds it again, on any instance: records under E2B_STATE_DIR when set (record-catalog.ts), else E2B's listing by
 * metadata (listing-catalog.ts); a service that cannot list (Alibaba Cloud's) without E2B_STATE_DIR keeps nothing
 * past the instance that made a sandbox, so its sandboxes are killed when idle, as before sandboxes slept.
 */
import { type Clock, SYSTEM_CLOCK } from '../../clock';
import type { E2BConfig } from '../../config';
import type { Logger } from '../../log';
import { SingleFlight } from '../../single-flight';
import { type CatalogSource, createNoCatalog, type SandboxCatalog } from '../catalog';
import { createRecordCatalog } from '../record-catalog';
import { createRecordStore, type SandboxRecord } from '../records';
import type { RetentionPolicy } from '../retention';
import { toOwnerTag, toSandboxTag } from '../sandbox-name';
import { createTombstoneStore } from '../tombstones';
import type { BackendStatus, CreateOptions, Sandbox, SandboxOwner, SandboxProvider, SleepMode } from '../types';
import { createE2BSandbox, type CreateContext } from './create-sandbox';
import { E2BSandbox } from './e2b-sandbox';
import { toE2BAppError } from './errors';
import { leaseTerms } from './lease';
import { createListingCatalog } from './listing-catalog';
import { createRateGate, retryWithBackoff, type RetryOptions } from './retry';
import { type E2BSandboxApi, type E2BSdk, type FoundSandbox, loadE2BSdk } from './sdk';
import { E2BSleep } from './sleep-terms';
import { E2B_METADATA, toTag } from './tags';
import { SERVER_INFO } from '../../version';

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
  /** A tag of MCP_SESSION_SECRET (records of unnamed sandboxes signed with another are unreachable). */
  secretTag?: string;
}

/** An ended session's record name under E2B_STATE_DIR: its key hashed, as its metadata tag is. */
function endedName(sessionKey: string): string {
  return `mcp-session-${toTag(sessionKey)}`;
}

/** Sweeps for sandboxes past their retention at most this often (a listing costs E2B requests). */
const SWEEP_EVERY_MS = 10 * 60_000;
/** What naming or listing sandboxes needs on a service that cannot list them. */
const NEEDS_STATE_DIR =
  'This E2B service cannot list sandboxes, so named sandboxes (open_sandbox, list_sandboxes) need storage every ' +
  'server instance shares: the operator sets E2B_STATE_DIR (a NAS mount on Function Compute).';

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
  } = options;
  const now = (): number => clock.now();
  const lease = leaseTerms(options.idleTtlMs, options.renewEveryMs);
  const gate = createRateGate(config.maxCreatesPerS, clock);
  const sleep = new E2BSleep(config.sleep, logger);
  /** The SDK, loaded on the first sandbox (again on the next, if that load failed). */
  const sdkOnce = new SingleFlight<E2BSdk>();
  const sdk = (): Promise<E2BSdk> => sdkOnce.get(loadSdk);
  const connection = { apiKey: config.apiKey, domain: config.domain, apiUrl: config.apiUrl, requestTimeoutMs };
  const tombstones =
    config.stateDir === undefined ? undefined : createTombstoneStore(config.stateDir, { now: () => clock.now() });
  const store = config.stateDir === undefined ? undefined : createRecordStore(config.stateDir);
  /** Sandboxes open here, by E2B id: never deleted by a sweep from here. */
  const openHere = new Map<string, E2BSandbox>();
  const isOpenHere = (sandboxId: string): boolean => {
    const sandbox = openHere.get(sandboxId);
    if (sandbox !== undefined && sandbox.isGone()) openHere.delete(sandboxId);
    return openHere.has(sandboxId) && sandbox !== undefined && !sandbox.isGone();
  };

  const recordCatalog =
    store === undefined
      ? undefined
      : createRecordCatalog({
          store,
          policy: retention,
          now,
          secretTag: options.secretTag ?? '',
          logger,
          isOpenHere: (tag) => [...openHere.values()].some((s) => !s.isGone() && s.tag === tag),
          // A record not asleep whose lease has run out was paused by E2B itself (or killed, with sleep off).
          stateOf: async (record, nowMs) =>
            record.sleep === undefined && nowMs - record.lastUsedMs <= lease.lengthMs ? 'running' : 'sleeping',
          destroy: async (record) => {
            const loaded = await sdk();
            if (record.sandboxId !== undefined) await loaded.kill(record.sandboxId, connection).catch(() => false);
            if (record.snapshotId !== undefined)
              await loaded.deleteSnapshot(record.snapshotId, connection).catch(() => false);
          },
        });
  const listingCatalog = createListingCatalog({
    sdk,
    connection,
    policy: retention,
    leaseLengthMs: lease.lengthMs,
    now,
    serverName: SERVER_INFO.name,
    isOpenHere,
    logger,
  });
  const noCatalog = createNoCatalog(NEEDS_STATE_DIR);

  /** Whether the service lists sandboxes: asked once (one listing request), unless records make it moot. */
  const listing = new SingleFlight<boolean>();
  let listingKnown: boolean | undefined;
  const canList = (): Promise<boolean> =>
    listing.get(async () => {
      const loaded = await sdk();
      try {
        await loaded.findByMetadata({ [E2B_METADATA.server]: SERVER_INFO.name }, { ...connection, retries: 0 }, 1);
        listingKnown = true;
      } catch (err: unknown) {
        if (!(err instanceof loaded.errors.SandboxError && err.statusCode === 404)) throw err;
        logger.warn('sandbox listing not served', {
          backend: 'e2b',
          detail:
            'the E2B service answered 404 to GET /v2/sandboxes: without E2B_STATE_DIR, sandboxes are not named, ' +
            'do not sleep, and a session that moves to another instance gets a fresh sandbox',
        });
        listingKnown = false;
      }
      return listingKnown;
    });
  const source = async (): Promise<CatalogSource> =>
    store !== undefined ? 'records' : (await canList()) ? 'listing' : 'none';
  const activeCatalog = async (): Promise<SandboxCatalog> => {
    const found = await source();
    return found === 'records' && recordCatalog !== undefined
      ? recordCatalog
      : found === 'listing'
        ? listingCatalog
        : noCatalog;
  };

  let lastSweepMs = -Infinity;
  const maybeSweep = (): void => {
    if (now() - lastSweepMs < SWEEP_EVERY_MS) return;
    lastSweepMs = now();
    void activeCatalog()
      .then((catalog) => (catalog === noCatalog ? 0 : (recordCatalog ?? listingCatalog).sweep()))
      .catch((err: unknown) => logger.warn('sandbox sweep failed', { backend: 'e2b', error: String(err) }));
  };

  const catalog: SandboxCatalog = {
    get source() {
      return store !== undefined ? 'records' : listingKnown === false ? 'none' : 'listing';
    },
    list: async (principal) => (await activeCatalog()).list(principal),
    findNamed: async (principal, name) => (await activeCatalog()).findNamed(principal, name),
    claimName: async (principal, name, key) => (await activeCatalog()).claimName(principal, name, key),
    releaseName: async (principal, name, key) => (await activeCatalog()).releaseName(principal, name, key),
    delete: async (principal, sandbox) => (await activeCatalog()).delete(principal, sandbox),
    makeRoom: async (principal, adding) => (await activeCatalog()).makeRoom(principal, adding),
    bindSession: async (principal, key, binding) => (await activeCatalog()).bindSession(principal, key, binding),
    boundSession: async (principal, key) => (await activeCatalog()).boundSession(principal, key),
    unbindSession: async (principal, key) => (await activeCatalog()).unbindSession(principal, key),
  };

  /** The record of `owner`'s sandbox, with E2B_STATE_DIR. */
  const recordOf = (owner: SandboxOwner): Promise<SandboxRecord | undefined> =>
    store === undefined
      ? Promise.resolve(undefined)
      : store.get(toOwnerTag(owner.principal), toSandboxTag(owner.sessionKey));
  const writeRecord = async (owner: SandboxOwner, change: (record: SandboxRecord | undefined) => SandboxRecord) => {
    if (store !== undefined) await store.put(change(await recordOf(owner)));
  };

  const wrap = (
    owner: SandboxOwner,
    api: E2BSandboxApi,
    loaded: E2BSdk,
    made: {
      mode: SleepMode;
      woke?: SandboxRecord['sleep'];
      terms: { lease: typeof lease; confirmedLease?: typeof lease; priorLeaseEnd?: Date };
    },
  ): Sandbox => {
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
        pause: (keepMemory) => loaded.pause(api.sandboxId, { ...connection, keepMemory }),
        onSleep: async (state) => {
          await writeRecord(owner, (record) => ({
            ...recordFor(owner, api.sandboxId, record),
            lastUsedMs: state.sinceMs,
            sleep: state,
          }));
          await catalog.makeRoom(owner.principal, 0).catch(() => undefined);
        },
        onUsed: () =>
          void writeRecord(owner, (record) => ({
            ...recordFor(owner, api.sandboxId, record),
            lastUsedMs: now(),
          })).catch(() => undefined),
        onKill: async () => {
          if (store !== undefined && owner.name === undefined)
            await store.remove({ owner: toOwnerTag(owner.principal), tag: toSandboxTag(owner.sessionKey) });
        },
      },
    });
    openHere.set(api.sandboxId, sandbox);
    return sandbox;
  };
  const recordFor = (owner: SandboxOwner, sandboxId: string, record: SandboxRecord | undefined): SandboxRecord => {
    const { sleep: _asleep, ...rest } = record ?? {
      tag: toSandboxTag(owner.sessionKey),
      owner: toOwnerTag(owner.principal),
      createdMs: now(),
      lastUsedMs: now(),
      ...(owner.name !== undefined && { name: owner.name, key: owner.sessionKey }),
      ...(owner.name === undefined &&
        owner.reachableUntilMs !== undefined && { reachableUntilMs: owner.reachableUntilMs }),
      ...(owner.name === undefined && options.secretTag !== undefined && { secretTag: options.secretTag }),
    };
    return { ...rest, sandboxId };
  };

  const createContext = async (): Promise<CreateContext> => {
    const loaded = await sdk();
    return {
      sdk: loaded,
      connection,
      template: config.template,
      apiKey: config.apiKey,
      gate,
      sleep,
      canSleep: (await source()) !== 'none',
      retry: options.retry,
      clock,
      logger,
      wakeLeaseMs: lease.lengthMs,
    };
  };

  /** The sandbox of `owner` the backend knows of, running or paused, before anyone connects. */
  const findExisting = async (
    owner: SandboxOwner,
    loaded: E2BSdk,
  ): Promise<{ sandboxId: string; found?: FoundSandbox; record?: SandboxRecord } | undefined> => {
    const record = await recordOf(owner);
    if (record?.sandboxId !== undefined) return { sandboxId: record.sandboxId, record };
    if (store !== undefined || !(await canList())) return undefined;
    const [found] = await retryWithBackoff(
      () =>
        loaded.findByMetadata(
          { [E2B_METADATA.session]: toTag(owner.sessionKey), [E2B_METADATA.owner]: toOwnerTag(owner.principal) },
          { ...connection, retries: 0 },
        ),
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
    sleepMode: () => (listingKnown === false && store === undefined ? 'off' : sleep.mode()),
    catalog,
    async create(owner: SandboxOwner, createOptions: CreateOptions = {}): Promise<Sandbox> {
      maybeSweep();
      // A sandbox nobody may come back for lives on its first lease at E2B too, so that a lost instance leaves it
      // only that long; confirmLease() moves it to the idle TTL's terms.
      const terms =
        owner.firstLeaseMs === undefined || owner.firstLeaseMs >= options.idleTtlMs
          ? { lease }
          : { lease: leaseTerms(owner.firstLeaseMs, options.renewEveryMs), confirmedLease: lease };
      const context = await createContext();
      const made = await createE2BSandbox(context, owner, createOptions, terms.lease.lengthMs);
      await writeRecord(owner, (record) => ({
        ...recordFor(owner, made.api.sandboxId, record?.sandboxId === made.api.sandboxId ? record : undefined),
        ...(made.template !== config.template && { template: made.template }),
        ...(made.snapshotId !== undefined && { snapshotId: made.snapshotId }),
      }));
      return wrap(owner, made.api, context.sdk, { mode: made.sleep, terms });
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
      maybeSweep();
      const loaded = await sdk();
      try {
        const existing = await findExisting(owner, loaded);
        if (existing === undefined) return undefined;
        const { record, found } = existing;
        const asleep =
          found?.state === 'paused' ||
          record?.sleep !== undefined ||
          (record !== undefined && now() - record.lastUsedMs > lease.lengthMs);
        const mode: SleepMode =
          found?.metadata[E2B_METADATA.sleep] === 'files'
            ? 'files'
            : found !== undefined && found.metadata[E2B_METADATA.sleep] === undefined
              ? 'off'
              : sleep.mode();
        // Connecting renews the lease and resumes a paused sandbox.
        const api = await loaded.connect(existing.sandboxId, { ...connection, timeoutMs: lease.lengthMs });
        logger.info(asleep ? 'sandbox woken' : 'sandbox re-attached', { backend: 'e2b', sandbox: existing.sandboxId });
        const woke = asleep
          ? {
              sinceMs: record?.sleep?.sinceMs ?? found?.endAt.getTime() ?? record?.lastUsedMs ?? now(),
              memory: record?.sleep?.memory ?? mode === 'memory',
              stopped: [],
            }
          : undefined;
        await writeRecord(owner, (current) => ({
          ...recordFor(owner, existing.sandboxId, current),
          lastUsedMs: now(),
        }));
        return wrap(owner, api, loaded, {
          mode,
          ...(woke !== undefined && { woke }),
          terms: { lease, ...(found !== undefined && !asleep && { priorLeaseEnd: found.endAt }) },
        });
      } catch (err: unknown) {
        if (err instanceof loaded.errors.SandboxNotFoundError || err instanceof loaded.errors.NotFoundError) {
          if (store !== undefined && owner.name === undefined)
            await store.remove({ owner: toOwnerTag(owner.principal), tag: toSandboxTag(owner.sessionKey) });
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
