/**
 * MCP_MAX_CALLS_PER_CREDENTIAL: how many tool calls one credential has in flight at once, on this instance.
 * A call holds its slot from the moment its request is admitted until its response has been sent or the
 * client went away (`RequestContext.onSent`); one more is refused with 429 and Retry-After before anything runs.
 */
import { toErrorResponse } from '../http/refusals';
import { hasMethod, jsonRpcIdOf } from './plain-message';

/** Seconds a client over its share of calls is told to wait. */
const CALLS_RETRY_AFTER_S = 1;

export interface CallShare {
  /**
   * Admits the tool calls in `body` for `principal`: `undefined` when there are none, a 429 response when they
   * would pass the cap, else the function that releases their slots (once; later calls do nothing).
   */
  admit(body: unknown, principal: string): undefined | Response | (() => void);
  /** Calls in flight for `principal`. */
  inFlight(principal: string): number;
}

/** Creates the per-credential call counter. */
export function createCallShare(maxPerCredential: number): CallShare {
  const counts = new Map<string, number>();
  const release = (principal: string, n: number): void => {
    const left = (counts.get(principal) ?? 0) - n;
    if (left > 0) counts.set(principal, left);
    else counts.delete(principal);
  };
  return {
    admit(body, principal) {
      const calls = countToolCalls(body);
      if (calls === 0) return undefined;
      const held = counts.get(principal) ?? 0;
      if (held + calls > maxPerCredential) {
        return toErrorResponse(
          { kind: 'too_many_calls', running: held, max: maxPerCredential, retryAfterS: CALLS_RETRY_AFTER_S },
          jsonRpcIdOf(body),
        );
      }
      counts.set(principal, held + calls);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        release(principal, calls);
      };
    },
    inFlight: (principal) => counts.get(principal) ?? 0,
  };
}

function countToolCalls(body: unknown): number {
  const isCall = (message: unknown): boolean => hasMethod(message, 'tools/call');
  if (Array.isArray(body)) return body.filter(isCall).length;
  return isCall(body) ? 1 : 0;
}
