/** The E2B backend: sandboxes on E2B's cloud or on Alibaba Cloud's E2B-compatible service. */
import { type Clock, SYSTEM_CLOCK } from '../../clock';
import type { E2BConfig } from '../../config';
import { AppError } from '../../errors';
import { hashTag } from '../../hash-tag';
import type { Logger } from '../../log';
import { SingleFlight } from '../../single-flight';
import { SERVER_INFO } from '../../version';
import { createTombstoneStore } from '../tombstones';
import type { BackendStatus, Sandbox, SandboxOwner, SandboxProvider } from '../types';
import { E2BSandbox } from './e2b-sandbox';
import { toE2BAppError } from './errors';
import { leaseTerms } from './lease';
import { createRateGate, retryWithBackoff, type RetryOptions } from './retry';
import { type E2BSandboxApi, type E2BSdk, loadE2BSdk } from './sdk';

export interface E2BProviderOptions {
  config: E2BConfig;
  /** MCP_SESSION_IDLE_TTL_S in milliseconds: how long an unused sandbox lives (e2b/lease.ts). */
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
}

/** A stable, non-reversible tag for metadata (E2B metadata is visible to anyone with the API key). */
function toTag(value: string): string {
  return hashTag(value, 24);
}

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
  } = options;
  const lease = leaseTerms(options.idleTtlMs, options.renewEveryMs);
  const gate = createRateGate(config.maxCreatesPerS, clock);
  /** The SDK, loaded on the first sandbox (again on the next, if that load failed). */
  const sdk = new SingleFlight<E2BSdk>();
  /** Set once the service answered 404 to the sandbox listing (said in the log once). */
  let listingMissing = false;
  const tombstones =
    config.stateDir === undefined ? undefined : createTombstoneStore(config.stateDir, { now: () => clock.now() });

  const connection = { apiKey: config.apiKey, domain: config.domain, apiUrl: config.apiUrl, requestTimeoutMs };
  const wrap = (
    api: E2BSandboxApi,
    errors: E2BSdk['errors'],
    terms: { lease: typeof lease; confirmedLease?: typeof lease; priorLeaseEnd?: Date },
  ): Sandbox =>
    new E2BSandbox({
      api,
      errors,
      template: config.template,
      apiKey: config.apiKey,
      ...terms,
      maxOutputBytes,
      charts: config.charts,
      clock,
    });
  const tagsOf = ({ sessionKey, principal }: SandboxOwner): Record<string, string> => ({
    mcp_session: toTag(sessionKey),
    mcp_owner: toTag(principal),
  });

  return {
    status(): BackendStatus {
      return {
        backend: 'e2b',
        ready: config.apiKey !== undefined,
        isolation: 'e2b-microvm',
        detail: config.apiKey === undefined ? 'E2B_API_KEY is not set' : `template ${config.template}`,
      };
    },
    async create({ sessionKey, principal, firstLeaseMs }: SandboxOwner): Promise<Sandbox> {
      // A sandbox nobody may come back for lives on its first lease at E2B too, so that a lost instance leaves it
      // only that long; confirmLease() moves it to the idle TTL's terms.
      const terms =
        firstLeaseMs === undefined || firstLeaseMs >= options.idleTtlMs
          ? { lease }
          : { lease: leaseTerms(firstLeaseMs, options.renewEveryMs), confirmedLease: lease };
      const loaded = await sdk.get(loadSdk);
      const started = clock.now();
      try {
        const api = await retryWithBackoff(
          async () => {
            await gate.acquire();
            return loaded.create(config.template, {
              ...connection,
              timeoutMs: terms.lease.lengthMs,
              // One retry policy, ours: backoff with jitter within a bounded time.
              retries: 0,
              metadata: {
                ...tagsOf({ sessionKey, principal }),
                mcp_server: SERVER_INFO.name,
                mcp_version: SERVER_INFO.version,
              },
            });
          },
          (err) => err instanceof loaded.errors.RateLimitError,
          { clock, ...options.retry },
        );
        logger.info('sandbox created', {
          backend: 'e2b',
          sandbox: api.sandboxId,
          duration_ms: Math.round(clock.now() - started),
        });
        return wrap(api, loaded.errors, terms);
      } catch (err: unknown) {
        if (err instanceof loaded.errors.SandboxError && err.statusCode === 404) {
          throw new AppError(
            'sandbox_error',
            `E2B has no template "${config.template}" for this account; check E2B_TEMPLATE (and E2B_DOMAIN ` +
              'for Alibaba Cloud).',
            { cause: err },
          );
        }
        throw toE2BAppError(err, loaded.errors, {
          operation: 'creating the sandbox',
          template: config.template,
          apiKey: config.apiKey,
        });
      }
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
      const loaded = await sdk.get(loadSdk);
      try {
        const [found] = await retryWithBackoff(
          () => loaded.findByMetadata(tagsOf(owner), { ...connection, retries: 0 }),
          (err) => err instanceof loaded.errors.RateLimitError,
          { clock, ...options.retry },
        ).catch((err: unknown) => {
          // Alibaba Cloud's service does not serve the listing (404): no sandbox can be found by its tags.
          if (!(err instanceof loaded.errors.SandboxError && err.statusCode === 404)) throw err;
          if (!listingMissing) {
            logger.warn('sandbox listing not served', {
              backend: 'e2b',
              detail:
                'the E2B service answered 404 to GET /v2/sandboxes: a session that moves to another ' +
                'instance gets a fresh sandbox',
            });
          }
          listingMissing = true;
          return [];
        });
        if (found === undefined) return undefined;
        // Connecting also renews the lease (and resumes a paused sandbox).
        const api = await loaded.connect(found.sandboxId, { ...connection, timeoutMs: lease.lengthMs });
        logger.info('sandbox re-attached', { backend: 'e2b', sandbox: found.sandboxId });
        return wrap(api, loaded.errors, { lease, priorLeaseEnd: found.endAt });
      } catch (err: unknown) {
        if (err instanceof loaded.errors.SandboxNotFoundError || err instanceof loaded.errors.NotFoundError)
          return undefined;
        throw toE2BAppError(err, loaded.errors, {
          operation: 're-attaching the sandbox',
          template: config.template,
          apiKey: config.apiKey,
        });
      }
    },
  };
}
