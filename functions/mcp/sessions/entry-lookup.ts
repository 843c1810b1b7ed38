/**
 * Which table entry a signed id names, for both eras: a 2025 session id (opened here when this instance does not
 * hold it: new, or moved here from another instance) and a 2026-07-28 sandbox handle (or a new sandbox for a call
 * without one). The lanes only turn the answers into their era's responses.
 */
import type { Logger } from '../log';
import type { SandboxCatalog } from '../sandbox/catalog';
import type { SandboxProvider } from '../sandbox/types';
import type { Refusal } from './fair-share';
import type { SandboxTable, TableEntry } from './sandbox-table';
import { type SignedIdCheck, type SignedIdCodec, toSessionTag } from './session-id';

/** Why a session id names no session, as the log's `error_code`. */
export type NoSession = `session_${string}`;

export interface SessionLookupOptions {
  table: SandboxTable;
  ids: SignedIdCodec;
  /** Where a session's choice of a named sandbox is kept (open_sandbox). @default none kept */
  catalog?: Pick<SandboxCatalog, 'boundSession' | 'unbindSession'>;
  /** True, once, for an id whose `initialize` was answered before the core was loaded: a new session. */
  mintedEarly?: (id: string) => boolean;
  logger: Logger;
  now: () => number;
}

/** Where a session is looked up from: its credential, and what its log lines carry. */
export interface SessionAsk {
  readonly principal: string;
  readonly version: string;
  readonly requestId: string;
}

/** Finds the session `id` names for a credential: held, opened here, no room for it, or none. */
export type SessionLookup = (id: string, ask: SessionAsk) => Promise<TableEntry | Refusal | NoSession>;

export function createSessionLookup({
  table,
  ids,
  catalog,
  mintedEarly,
  logger,
  now,
}: SessionLookupOptions): SessionLookup {
  /** Openings under way, so that concurrent first requests of a session open it once. */
  const opening = new Map<string, Promise<TableEntry | Refusal | NoSession>>();

  const open = async (id: string, key: string, issuedAtMs: number, ask: SessionAsk) => {
    const { principal } = ask;
    const tag = toSessionTag(id);
    const ended = await table.hasEnded({ key, tag, principal });
    if (ended !== undefined) return ended === 'elsewhere' ? 'session_ended' : 'session_not_found';
    const refusal = table.makeRoom('session', principal);
    if (refusal !== undefined) return refusal;
    // An id minted early is new, but still looked up: its client may have used it on another instance since.
    const quiet = mintedEarly?.(id) === true;
    const entry = table.hold({ kind: 'session', key, tag, principal, issuedAtMs, resume: true, quiet });
    // It may have opened a named sandbox on the instance that held it: it works there.
    const bound = quiet ? undefined : await catalog?.boundSession(principal, key).catch(() => undefined);
    if (bound !== undefined) entry.attached = bound;
    const line = { session: tag, protocol_version: ask.version, request_id: ask.requestId };
    logger.info(quiet ? 'session opened' : 'session recovered', line);
    return entry;
  };

  return async (id, ask) => {
    const check = ids.verify('session', id, ask.principal, now());
    if (!check.ok) return `session_${check.reason}`;
    const held = table.get('session', check.key);
    if (held !== undefined) return held;
    let pending = opening.get(check.key);
    if (pending === undefined) {
      pending = open(id, check.key, check.issuedAtMs, ask).finally(() => opening.delete(check.key));
      opening.set(check.key, pending);
    }
    return pending;
  };
}

/** The entry a call's handle names (or a new one), with the handle to give back; else what the call reads. */
export type HandleLookup = (
  handle: unknown,
  principal: string,
  checked?: HandleCheck,
) => Promise<{ entry: TableEntry; handle: string } | { message: string }>;

export interface HandleLookupOptions extends Omit<SessionLookupOptions, 'logger' | 'catalog'> {
  /** Tombstones: a handle whose sandbox was deleted for good is refused. */
  provider: Pick<SandboxProvider, 'hasEnded'>;
}

/**
 * Resolves handles. `checked`: the handle's check, when it was made earlier in the request. A held entry that
 * comes back with its handle lives on the idle TTL from then on; a valid handle this instance does not hold is
 * opened (another instance made it, or it was let go), unless its sandbox was deleted for good; a call without one
 * gets a new entry. A named sandbox's handle opens an entry that never makes a fresh sandbox in place of a lost one.
 */
export function createHandleLookup({ table, ids, provider, now }: HandleLookupOptions): HandleLookup {
  return async (handle, principal, checked) => {
    const check = handle === undefined ? undefined : (checked ?? checkHandle(ids, handle, principal, now()));
    if (check?.ok === false) return { message: badHandleMessage(check.reason) };
    if (check?.ok === true) {
      const held = table.get('handle', check.key);
      if (held !== undefined) {
        held.sandbox.confirm();
        return { entry: held, handle: String(handle) };
      }
      if (await provider.hasEnded({ sessionKey: check.key, principal }, now()))
        return { message: badHandleMessage('ended') };
    }
    const refusal = table.makeRoom('handle', principal);
    if (refusal !== undefined) return { message: refusal.message };
    const named = check?.ok === true ? { id: String(handle), key: check.key, issuedAtMs: check.issuedAtMs } : undefined;
    const { id, key, issuedAtMs } = named ?? { ...ids.mint('sandbox', principal, now()), issuedAtMs: now() };
    const entry = table.hold({
      kind: 'handle',
      key,
      tag: toSessionTag(id),
      principal,
      issuedAtMs,
      resume: named !== undefined,
      ...(check?.ok === true && check.named && { mustExist: true }),
    });
    return { entry, handle: id };
  };
}

/** The check of a handle: a sandbox handle's, or a named sandbox's (`named`). */
export type HandleCheck =
  | { readonly ok: true; readonly key: string; readonly issuedAtMs: number; readonly named: boolean }
  | Extract<SignedIdCheck, { ok: false }>;

/** The check of a handle a call carries: an unnamed sandbox's handle, else a named one's. */
export function checkHandle(ids: SignedIdCodec, handle: unknown, principal: string, nowMs: number): HandleCheck {
  if (typeof handle !== 'string') return { ok: false, reason: 'malformed' };
  const plain = ids.verify('sandbox', handle, principal, nowMs);
  if (plain.ok) return { ...plain, named: false };
  if (plain.reason !== 'bad_signature') return plain;
  const named = ids.verify('named', handle, principal, nowMs);
  return named.ok ? { ...named, named: true } : plain;
}

/** What a call with a bad handle reads, by why the handle failed. */
function badHandleMessage(reason: string): string {
  if (reason === 'ended') {
    return (
      'The "sandbox" handle cannot be used: its sandbox was deleted. Call list_sandboxes to see your sandboxes and ' +
      'open_sandbox to open one, or call the tool again without "sandbox" to get a new, empty sandbox.'
    );
  }
  const why =
    reason === 'expired'
      ? 'it has expired'
      : reason === 'bad_signature'
        ? 'it belongs to another credential or server, or was changed'
        : 'it is not a handle this server gave out';
  return (
    `The "sandbox" handle cannot be used: ${why}. Call the tool again without "sandbox" to get a new, empty ` +
    'sandbox (or open_sandbox to open a named one), and from then on pass the handle that each result gives back.'
  );
}
