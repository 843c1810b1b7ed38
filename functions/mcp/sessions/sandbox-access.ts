/**
 * Reaching a sandbox from outside any MCP request (a file URL: http/file-route.ts), through the same table the
 * lanes use: the entry held here, or held anew from what the URL names, and its sandbox found, re-attached or woken,
 * never made. The entry stays busy until the transfer is over, so it is neither put to sleep nor let go under it.
 */
import type { Sandbox } from '../sandbox/types';
import type { Refusal } from './fair-share';
import type { SandboxTable, TableEntry } from './sandbox-table';

/** Which table entry a sandbox belongs to, as something outside a request names it. */
export interface SandboxPlace {
  readonly kind: 'session' | 'handle';
  /** The random part of the session id or handle. */
  readonly key: string;
  /** The entry's log tag (a hash of its id). */
  readonly tag: string;
  /** The credential that owns it. */
  readonly principal: string;
  /** When its id was issued: bounds how long an unnamed sandbox can be reached. */
  readonly issuedAtMs: number;
  /** A named sandbox's name. */
  readonly name?: string;
}

/** The place of `entry`. */
export function placeOf(entry: TableEntry): SandboxPlace {
  return {
    kind: entry.kind,
    key: entry.key,
    tag: entry.tag,
    principal: entry.principal,
    issuedAtMs: entry.issuedAtMs,
    ...(entry.name !== undefined && { name: entry.name }),
  };
}

/** What reaching a place found. */
export type Reached =
  /** The sandbox, held busy until `release()`; `signal` aborts when its entry ends meanwhile. */
  | { readonly sandbox: Sandbox; readonly signal: AbortSignal; release(): void }
  /** Its session ended for good (deleted, or expired with its sandbox). */
  | { readonly missing: 'ended' }
  /** No sandbox of it exists any more (deleted, or past its retention). */
  | { readonly missing: 'gone' }
  /** No room to hold it here now. */
  | { readonly refusal: Refusal };

/** Reaches the sandbox of a place. */
export type SandboxAccess = (place: SandboxPlace) => Promise<Reached>;

export function createSandboxAccess(table: SandboxTable): SandboxAccess {
  return async (place) => {
    let entry = table.get(place.kind, place.key);
    const heldHere = entry !== undefined;
    if (entry === undefined) {
      if (place.kind === 'session' && (await table.hasEnded(place)) !== undefined) return { missing: 'ended' };
      const refusal = table.makeRoom(place.kind, place.principal);
      if (refusal !== undefined) return { refusal };
      entry = table.hold({ ...place, resume: true, quiet: true });
    }
    const held = entry;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const reached = new Promise<Reached>((resolve, reject) => {
      void table
        .run(held, undefined, async (signal) => {
          const sandbox = await held.sandbox.existing().catch((err: unknown) => {
            reject(err);
            return undefined;
          });
          if (sandbox === undefined) {
            resolve({ missing: 'gone' });
            return;
          }
          resolve({ sandbox, signal, release });
          await released;
        })
        .catch(reject);
    });
    // An entry held only to look, that found nothing, is not kept.
    const forget = (): void => {
      if (!heldHere) table.drop(held);
    };
    const outcome = await reached.catch((err: unknown) => {
      forget();
      throw err;
    });
    if ('missing' in outcome) forget();
    return outcome;
  };
}
