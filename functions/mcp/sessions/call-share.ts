/**
 * MCP_MAX_CALLS_PER_CREDENTIAL: how many tool calls one credential has in flight at once, on this instance.
 * A call holds its slot from the moment its request is admitted until its response has been sent or the client
 * went away; one more is refused before anything runs (the endpoint answers 429 with Retry-After).
 */

/** Seconds a client over its share of calls is told to wait. */
const CALLS_RETRY_AFTER_S = 1;

/** Why calls were refused: what the credential holds, the cap, and when to retry. */
export interface CallsRefused {
  readonly running: number;
  readonly max: number;
  readonly retryAfterS: number;
}

export interface CallShare {
  /**
   * Admits `calls` tool calls for `principal`: the refusal when they would pass the cap, else the function that
   * releases their slots (once; later calls do nothing).
   */
  admit(principal: string, calls: number): { refused: CallsRefused } | { release: () => void };
}

/** Creates the per-credential call counter. */
export function createCallShare(maxPerCredential: number): CallShare {
  const counts = new Map<string, number>();
  return {
    admit(principal, calls) {
      const held = counts.get(principal) ?? 0;
      if (held + calls > maxPerCredential)
        return { refused: { running: held, max: maxPerCredential, retryAfterS: CALLS_RETRY_AFTER_S } };
      counts.set(principal, held + calls);
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        const left = (counts.get(principal) ?? 0) - calls;
        if (left > 0) counts.set(principal, left);
        else counts.delete(principal);
      };
      return { release };
    },
  };
}
