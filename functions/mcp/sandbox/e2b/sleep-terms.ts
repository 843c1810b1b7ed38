/**
 * How E2B sandboxes sleep: paused with their memory (processes and interpreter state survive), with their files
 * only, or not at all (killed when idle). E2B_SLEEP says what to ask for; a service that refuses it (memory
 * snapshots not enabled for the account, pause not offered at all) is asked for the next lower mode, and what it
 * accepted is kept for this process. Sandboxes are created with the matching lifecycle, so that E2B pauses one
 * itself when its lease ends and no instance is left to do it.
 */
import type { SandboxOpts } from 'e2b';

import type { Logger } from '../../log';
import type { SleepMode } from '../types';
import type { E2BErrorClasses } from './sdk';

/** The modes below each, in the order a refusal lowers to. */
const LOWER: Record<SleepMode, SleepMode | undefined> = { memory: 'files', files: 'off', off: undefined };

/** The sleep mode of one provider, lowered as the service refuses. */
export class E2BSleep {
  private current: SleepMode;

  constructor(
    configured: SleepMode,
    private readonly logger: Logger,
  ) {
    this.current = configured;
  }

  mode(): SleepMode {
    return this.current;
  }

  /** The lifecycle a new sandbox is created with for `mode`. */
  static lifecycleOf(mode: SleepMode): Pick<SandboxOpts, 'lifecycle'> {
    if (mode === 'off') return {};
    // Woken only by this server (connect): traffic to a preview URL does not wake a sleeping sandbox.
    return { lifecycle: { onTimeout: { action: 'pause', keepMemory: mode === 'memory' }, autoResume: false } };
  }

  /**
   * Runs `attempt` with the current mode; when the service refuses it (400), with each lower mode in turn. The mode
   * that worked is kept. A refusal of every mode, even `off`, was not about sleeping: the first error is thrown.
   */
  async withFallback<T>(errors: E2BErrorClasses, attempt: (mode: SleepMode) => Promise<T>): Promise<T> {
    let mode: SleepMode | undefined = this.current;
    let first: unknown;
    while (mode !== undefined) {
      try {
        const result = await attempt(mode);
        if (mode !== this.current) this.lower(mode);
        return result;
      } catch (err: unknown) {
        if (!isRefusal(err, errors)) throw err;
        first ??= err;
        mode = LOWER[mode];
      }
    }
    throw first;
  }

  private lower(to: SleepMode): void {
    const from = this.current;
    this.current = to;
    this.logger.warn('sandbox sleep lowered: the E2B service refused it (400)', { backend: 'e2b', from, to });
  }
}

/** The service refused the request as made (400): here, a lifecycle or a pause it does not offer. */
function isRefusal(err: unknown, errors: E2BErrorClasses): boolean {
  return err instanceof errors.SandboxError && err.statusCode === 400;
}
