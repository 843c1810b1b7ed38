/**
 * A sandbox's lease on E2B: the service kills a sandbox when its timeout runs out, so the timeout is how long
 * an unused sandbox lives. It follows the session's idle TTL: renewing on every call would cost a control-plane
 * request per call, so it is renewed at most every `renewEveryMs` and made that much longer than the idle TTL;
 * a call that may run long (a command, code) first makes sure the lease outlasts it.
 */
import type { Clock } from '../../clock';

/** Renew at most this often by default; shorter for idle TTLs under two minutes (a quarter of the TTL). */
const DEFAULT_RENEW_EVERY_MS = 30_000;
/**
 * A lease end this close to the one this instance set is taken as its own: the service computes the end on
 * its clock when the request arrives, this instance on its clock when it sends it.
 */
const OWN_END_TOLERANCE_MS = 2_000;

export interface LeaseTerms {
  /** MCP_SESSION_IDLE_TTL_S in milliseconds. */
  readonly idleTtlMs: number;
  /** Renew at most this often (unless a long call needs more). */
  readonly renewEveryMs: number;
  /** The timeout a renewal sets: the idle TTL plus the renewal interval, so the sandbox outlives the session. */
  readonly lengthMs: number;
}

/** The lease terms for an idle TTL. */
export function leaseTerms(
  idleTtlMs: number,
  renewEveryMs = Math.min(DEFAULT_RENEW_EVERY_MS, Math.ceil(idleTtlMs / 4)),
): LeaseTerms {
  return { idleTtlMs, renewEveryMs, lengthMs: idleTtlMs + renewEveryMs };
}

/**
 * One sandbox's lease, as this instance last set it. Invariant: when `use(busyForMs, …)` starts, the lease ends
 * no earlier than `busyForMs` from then plus the idle TTL; and never earlier than the idle TTL after a use began.
 */
export class Lease {
  private renewedAtMs: number;
  private endsAtMs: number;
  private inFlight = 0;

  /**
   * `renew(ms)` sets the sandbox's timeout to `ms` from now. A sandbox is created (or connected to) with
   * `terms.lengthMs`; `priorEnd` is the lease end another instance had set before this one connected.
   */
  constructor(
    private terms: LeaseTerms,
    private readonly clock: Clock,
    private readonly renew: (timeoutMs: number) => Promise<void>,
    private readonly priorEnd?: Date,
  ) {
    this.renewedAtMs = clock.now();
    this.endsAtMs = this.renewedAtMs + terms.lengthMs;
  }

  /**
   * Takes longer terms (a first lease becoming the idle TTL's): the next use finds the lease too short for them
   * and renews it.
   */
  lengthen(terms: LeaseTerms): void {
    if (terms.idleTtlMs > this.terms.idleTtlMs) this.terms = terms;
  }

  /** Runs one use of the sandbox that may take `busyForMs`, with the lease renewed as needed first. */
  async use<T>(busyForMs: number, fn: () => Promise<T>): Promise<T> {
    this.inFlight += 1;
    try {
      await this.beforeUse(busyForMs);
      return await fn();
    } finally {
      this.inFlight -= 1;
    }
  }

  /** Before a use that may last `busyForMs`: renews when due, or when the lease would end too soon for it. */
  private async beforeUse(busyForMs: number): Promise<void> {
    const now = this.clock.now();
    const due = now - this.renewedAtMs >= this.terms.renewEveryMs;
    const tooShort = this.endsAtMs < now + busyForMs + this.terms.idleTtlMs;
    if (!due && !tooShort) return;
    const lengthMs = busyForMs + this.terms.lengthMs;
    this.renewedAtMs = now;
    this.endsAtMs = now + lengthMs;
    await this.renew(lengthMs);
  }

  /**
   * The latest use this instance did not see, given the lease end the service reports: a use in flight here is
   * now. An end later than the one this instance set was set by another instance, at time r, to r + idle TTL +
   * interval, covering its uses until r + interval: that is the answer (later than the truth by up to the
   * interval, so idle expiry lets such a sandbox go for its lease to end rather than killing it under another
   * instance). Else the end another instance had set before this one connected tells the same, if any.
   */
  lastUseElsewhereMs(leaseEnd: Date): number | undefined {
    if (this.inFlight > 0) return this.clock.now();
    const end = leaseEnd.getTime() > this.endsAtMs + OWN_END_TOLERANCE_MS ? leaseEnd : this.priorEnd;
    return end === undefined ? undefined : end.getTime() - this.terms.idleTtlMs;
  }
}
