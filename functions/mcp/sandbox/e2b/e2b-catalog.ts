/**
 * Which catalog the E2B backend keeps its sandboxes in: records under E2B_STATE_DIR when it is set
 * (record-catalog.ts), else E2B's own listing by metadata (listing-catalog.ts) when the service serves it, else
 * none (a service that cannot list, Alibaba Cloud's, without E2B_STATE_DIR: nothing is named, and nothing sleeps,
 * since a paused sandbox could never be found again). Whether the service lists is asked once, with one listing
 * request, at the first need; the answer is kept for the process. Also the sweep of what is past its retention.
 */
import { describeError } from '../../errors';
import type { Logger } from '../../log';
import { SingleFlight } from '../../single-flight';
import { SERVER_INFO } from '../../version';
import { type CatalogSource, createNoCatalog, type SandboxCatalog } from '../catalog';
import { createRecordCatalog } from '../record-catalog';
import type { RecordStore } from '../records';
import type { RetentionPolicy } from '../retention';
import { createListingCatalog } from './listing-catalog';
import type { E2BApiOpts, E2BSdk } from './sdk';
import { E2B_METADATA } from './tags';

export interface E2BCatalogOptions {
  sdk: () => Promise<E2BSdk>;
  connection: E2BApiOpts;
  /** The records under E2B_STATE_DIR; absent without it. */
  store: RecordStore | undefined;
  policy: RetentionPolicy;
  /** How long a renewal makes a lease: a running sandbox unused that long has been paused by E2B. */
  leaseLengthMs: number;
  /** A tag of MCP_SESSION_SECRET. */
  secretTag: string;
  /** True while this instance has the sandbox open (by its E2B id, and by its tag). */
  isOpenHere(sandboxId: string): boolean;
  isTagOpenHere(tag: string): boolean;
  now: () => number;
  logger: Logger;
}

/** The catalog and what the provider asks of it. */
export interface E2BCatalog {
  readonly catalog: SandboxCatalog;
  /** Where sandboxes are found again (asks the service whether it lists, the first time). */
  source(): Promise<CatalogSource>;
  /** False once the service answered that it does not list (and no records are kept). */
  canSleep(): boolean;
  /** Starts a sweep of what is past its retention, unless one ran within SWEEP_EVERY_MS. */
  maybeSweep(): void;
}

/** Sweeps at most this often (a listing costs E2B requests). */
const SWEEP_EVERY_MS = 10 * 60_000;
/** What naming or listing sandboxes needs on a service that cannot list them. */
const NEEDS_STATE_DIR =
  'This E2B service cannot list sandboxes, so named sandboxes (open_sandbox, list_sandboxes) need storage every ' +
  'server instance shares: the operator sets E2B_STATE_DIR (a NAS mount on Function Compute).';

/** Creates the catalog of one provider. */
export function createE2BCatalog(options: E2BCatalogOptions): E2BCatalog {
  const { sdk, connection, store, policy, now, logger } = options;
  const records =
    store === undefined
      ? undefined
      : createRecordCatalog({
          store,
          policy,
          now,
          secretTag: options.secretTag,
          logger,
          isOpenHere: options.isTagOpenHere,
          // A record not asleep whose lease has run out was paused by E2B itself (or killed, with sleep off).
          stateOf: async (record, nowMs) =>
            record.sleep === undefined && nowMs - record.lastUsedMs <= options.leaseLengthMs ? 'running' : 'sleeping',
          destroy: async (record) => {
            const loaded = await sdk();
            if (record.sandboxId !== undefined) await loaded.kill(record.sandboxId, connection).catch(() => false);
            if (record.snapshotId !== undefined)
              await loaded.deleteSnapshot(record.snapshotId, connection).catch(() => false);
          },
        });
  const listing = createListingCatalog({
    sdk,
    connection,
    policy,
    leaseLengthMs: options.leaseLengthMs,
    now,
    serverName: SERVER_INFO.name,
    isOpenHere: options.isOpenHere,
    logger,
  });
  const none = createNoCatalog(NEEDS_STATE_DIR);

  /** Whether the service lists sandboxes: asked once (one listing request), unless records make it moot. */
  const asked = new SingleFlight<boolean>();
  let lists: boolean | undefined;
  const canList = (): Promise<boolean> =>
    asked.get(async () => {
      const loaded = await sdk();
      try {
        await loaded.findByMetadata({ [E2B_METADATA.server]: SERVER_INFO.name }, { ...connection, retries: 0 }, 1);
        lists = true;
      } catch (err: unknown) {
        if (!(err instanceof loaded.errors.SandboxError && err.statusCode === 404)) throw err;
        logger.warn('sandbox listing not served', {
          backend: 'e2b',
          detail:
            'the E2B service answered 404 to GET /v2/sandboxes: without E2B_STATE_DIR, sandboxes are not named, ' +
            'do not sleep, and a session that moves to another instance gets a fresh sandbox',
        });
        lists = false;
      }
      return lists;
    });
  const source = async (): Promise<CatalogSource> =>
    records !== undefined ? 'records' : (await canList()) ? 'listing' : 'none';
  const active = async (): Promise<SandboxCatalog> => {
    const found = await source();
    return found === 'records' ? (records ?? none) : found === 'listing' ? listing : none;
  };

  let lastSweepMs = -Infinity;
  return {
    source,
    canSleep: () => records !== undefined || lists !== false,
    maybeSweep() {
      if (now() - lastSweepMs < SWEEP_EVERY_MS) return;
      lastSweepMs = now();
      void source()
        .then((found) => (found === 'none' ? 0 : (records ?? listing).sweep()))
        .catch((err: unknown) => logger.warn('sandbox sweep failed', { backend: 'e2b', error: describeError(err) }));
    },
    catalog: {
      get source() {
        return records !== undefined ? 'records' : lists === false ? 'none' : 'listing';
      },
      list: async (principal) => (await active()).list(principal),
      findNamed: async (principal, name) => (await active()).findNamed(principal, name),
      claimName: async (principal, name, key) => (await active()).claimName(principal, name, key),
      releaseName: async (principal, name, key) => (await active()).releaseName(principal, name, key),
      delete: async (principal, sandbox) => (await active()).delete(principal, sandbox),
      makeRoom: async (principal, adding) => (await active()).makeRoom(principal, adding),
      bindSession: async (principal, key, binding) => (await active()).bindSession(principal, key, binding),
      boundSession: async (principal, key) => (await active()).boundSession(principal, key),
      unbindSession: async (principal, key) => (await active()).unbindSession(principal, key),
    },
  };
}
