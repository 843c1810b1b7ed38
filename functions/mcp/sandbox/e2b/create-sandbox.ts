/**
 * Making one E2B sandbox: the creation gate and its 429 backoff, the sleep lifecycle the service accepts
 * (sleep-terms.ts), the metadata that finds it again (tags.ts), and for a fork the snapshot it starts from.
 */
import type { Clock } from '../../clock';
import type { E2BEgressOptions } from '../../egress/e2b-network';
import { AppError } from '../../errors';
import type { Logger } from '../../log';
import { SERVER_INFO } from '../../version';
import { toOwnerTag } from '../sandbox-name';
import type { CreateOptions, SandboxOwner, SleepMode } from '../types';
import { toE2BAppError } from './errors';
import { type RateGate, type RetryOptions, retryWithBackoff } from './retry';
import type { E2BApiOpts, E2BSandboxApi, E2BSdk } from './sdk';
import { E2BSleep } from './sleep-terms';
import { E2B_METADATA, toTag } from './tags';

export interface CreateContext {
  sdk: E2BSdk;
  connection: E2BApiOpts;
  /** E2B_TEMPLATE. */
  template: string;
  apiKey: string | undefined;
  gate: RateGate;
  sleep: E2BSleep;
  /** False when the sandbox could not be found again after this instance (no listing, no records): it never sleeps. */
  canSleep: boolean;
  retry?: RetryOptions;
  clock: Clock;
  logger: Logger;
  /** How long a sandbox woken to be copied runs before E2B pauses it again. */
  wakeLeaseMs: number;
  /** The egress settings of the owner's sandboxes (e2b-network.ts). */
  egress: E2BEgressOptions;
}

/** A sandbox just made, with how it sleeps and the snapshot a fork was made from. */
export interface Created {
  readonly api: E2BSandboxApi;
  readonly sleep: SleepMode;
  readonly template: string;
  readonly snapshotId?: string;
}

/** Makes the sandbox of `owner`, living `timeoutMs` unless renewed. */
export async function createE2BSandbox(
  ctx: CreateContext,
  owner: SandboxOwner,
  options: CreateOptions,
  timeoutMs: number,
): Promise<Created> {
  const { sdk, clock } = ctx;
  const template = options.template ?? ctx.template;
  const snapshotId = options.from === undefined ? undefined : await snapshotOf(ctx, options.from.sandboxId);
  const started = clock.now();
  const attempt = (mode: SleepMode): Promise<E2BSandboxApi> =>
    retryWithBackoff(
      async () => {
        await ctx.gate.acquire();
        return sdk.create(snapshotId ?? template, {
          ...ctx.connection,
          timeoutMs,
          // One retry policy, ours: backoff with jitter within a bounded time.
          retries: 0,
          ...E2BSleep.lifecycleOf(mode),
          ...ctx.egress,
          metadata: metadataOf(owner, { mode, template, snapshotId, createdMs: clock.now() }),
        });
      },
      (err) => err instanceof sdk.errors.RateLimitError,
      { clock, ...ctx.retry },
    );
  try {
    let sleep: SleepMode = 'off';
    const api = ctx.canSleep
      ? await ctx.sleep.withFallback(sdk.errors, async (mode) => {
          const made = await attempt(mode);
          sleep = mode;
          return made;
        })
      : await attempt('off');
    ctx.logger.info('sandbox created', {
      backend: 'e2b',
      sandbox: api.sandboxId,
      duration_ms: Math.round(clock.now() - started),
      ...(snapshotId !== undefined && { fork: true }),
    });
    return { api, sleep, template, ...(snapshotId !== undefined && { snapshotId }) };
  } catch (err: unknown) {
    if (snapshotId !== undefined) await sdk.deleteSnapshot(snapshotId, ctx.connection).catch(() => undefined);
    if (err instanceof sdk.errors.SandboxError && err.statusCode === 404) {
      const setting = options.template === undefined ? 'E2B_TEMPLATE' : 'the template';
      throw new AppError(
        'sandbox_error',
        `E2B has no template "${template}" for this account; check ${setting} (and E2B_DOMAIN for Alibaba Cloud).`,
        { cause: err },
      );
    }
    throw toE2BAppError(err, sdk.errors, { operation: 'creating the sandbox', template, apiKey: ctx.apiKey });
  }
}

/**
 * A snapshot of the sandbox a fork copies (its files and memory), made where the service offers snapshots. E2B
 * snapshots running sandboxes only: a paused one (404) is woken first, and runs on until its lease ends.
 */
async function snapshotOf(ctx: CreateContext, sandboxId: string | undefined): Promise<string> {
  if (sandboxId === undefined) throw new AppError('sandbox_error', 'The sandbox to copy has no E2B sandbox.');
  const { errors } = ctx.sdk;
  // The SDK throws SandboxNotFoundError (no status) for a snapshot's 404.
  const refused = (err: unknown, ...statuses: number[]): boolean =>
    (err instanceof errors.SandboxNotFoundError && statuses.includes(404)) ||
    (err instanceof errors.SandboxError && statuses.includes(err.statusCode ?? 0));
  try {
    try {
      return await ctx.sdk.createSnapshot(sandboxId, ctx.connection);
    } catch (err: unknown) {
      if (!refused(err, 404)) throw err;
      await ctx.sdk.connect(sandboxId, { ...ctx.connection, timeoutMs: ctx.wakeLeaseMs });
      return await ctx.sdk.createSnapshot(sandboxId, ctx.connection);
    }
  } catch (err: unknown) {
    if (refused(err, 400, 404)) {
      throw new AppError(
        'sandbox_error',
        'This E2B service does not offer sandbox snapshots (for this account), so a sandbox cannot be copied ' +
          '(open_sandbox "from"). Open it by its name instead, or create a new one.',
        { cause: err },
      );
    }
    throw toE2BAppError(err, errors, { operation: 'copying the sandbox', template: ctx.template, apiKey: ctx.apiKey });
  }
}

/** The metadata a sandbox is created with (tags.ts). */
function metadataOf(
  owner: SandboxOwner,
  made: { mode: SleepMode; template: string; snapshotId: string | undefined; createdMs: number },
): Record<string, string> {
  return {
    [E2B_METADATA.session]: toTag(owner.sessionKey),
    [E2B_METADATA.owner]: toOwnerTag(owner.principal),
    [E2B_METADATA.server]: SERVER_INFO.name,
    [E2B_METADATA.version]: SERVER_INFO.version,
    [E2B_METADATA.created]: String(Math.round(made.createdMs)),
    [E2B_METADATA.template]: made.template,
    ...(made.mode !== 'off' && { [E2B_METADATA.sleep]: made.mode }),
    ...(owner.name !== undefined && { [E2B_METADATA.name]: owner.name, [E2B_METADATA.key]: owner.sessionKey }),
    ...(owner.name === undefined &&
      owner.reachableUntilMs !== undefined && { [E2B_METADATA.until]: String(Math.round(owner.reachableUntilMs)) }),
    ...(made.snapshotId !== undefined && { [E2B_METADATA.snapshot]: made.snapshotId }),
  };
}
