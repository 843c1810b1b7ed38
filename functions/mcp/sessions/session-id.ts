/**
 * Signed ids: `<random>.<issued, base36 seconds>.<HMAC>`, visible ASCII. The HMAC covers the random part, the
 * issue time, a purpose (session id or sandbox handle) and the principal, so any instance with the same
 * MCP_SESSION_SECRET can tell a real id from a forged one, and an id is only valid with the credential it was
 * issued to. Session ids carry 128 random bits and a 132-bit HMAC; sandbox handles, which a model copies from
 * result to call, are shorter (96 and 96 bits, 40 characters), still far beyond guessing.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import { hashTag } from '../hash-tag';

/**
 * What a signed id is for; ids of one purpose are never valid as another. `named`: a handle of a named sandbox
 * (open_sandbox), shaped as a sandbox handle, which says that its sandbox, once gone, is gone for good. `task`: an
 * MCP task's id (tasks/task-runner.ts), shaped as a sandbox handle.
 */
export type SignedIdPurpose = 'session' | 'sandbox' | 'named' | 'task';

export type SignedIdCheck =
  | { ok: true; key: string; issuedAtMs: number }
  | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

/** Mints and checks signed ids. */
export interface SignedIdCodec {
  /** A new id for `principal`, and its key (the random part, which names the sandbox). */
  mint(purpose: SignedIdPurpose, principal: string, nowMs: number): { id: string; key: string };
  /** An id for `principal` whose key is `key` (a named sandbox's, minted before): its handle, signed anew. */
  sign(purpose: SignedIdPurpose, key: string, principal: string, nowMs: number): string;
  /** Checks an id presented with `principal`; `key` is its random part (names the sandbox). */
  verify(purpose: SignedIdPurpose, id: string, principal: string, nowMs: number): SignedIdCheck;
}

/** Per purpose: random bytes, HMAC characters (base64url), and the pattern of a well-formed id. */
const SHAPES: Record<SignedIdPurpose, { randomBytes: number; macChars: number; pattern: RegExp }> = {
  session: { randomBytes: 16, macChars: 22, pattern: /^([A-Za-z0-9_-]{22})\.([0-9a-z]{1,10})\.([A-Za-z0-9_-]{22})$/ },
  sandbox: { randomBytes: 12, macChars: 16, pattern: /^([A-Za-z0-9_-]{16})\.([0-9a-z]{1,10})\.([A-Za-z0-9_-]{16})$/ },
  named: { randomBytes: 12, macChars: 16, pattern: /^([A-Za-z0-9_-]{16})\.([0-9a-z]{1,10})\.([A-Za-z0-9_-]{16})$/ },
  task: { randomBytes: 12, macChars: 16, pattern: /^([A-Za-z0-9_-]{16})\.([0-9a-z]{1,10})\.([A-Za-z0-9_-]{16})$/ },
};

/** Ids whose signature is remembered as checked (VerifiedIds, below): more than the sessions held at once. */
const VERIFIED_IDS_REMEMBERED = 4_096;

/**
 * Creates the codec. `secret` is MCP_SESSION_SECRET (≥ 32 bytes); `maxAgeMs` is MCP_SESSION_MAX_AGE_S.
 */
export function createSignedIdCodec(secret: string, maxAgeMs: number): SignedIdCodec {
  const verified = new VerifiedIds(VERIFIED_IDS_REMEMBERED);
  const sign = (purpose: SignedIdPurpose, random: string, issued: string, principal: string): string =>
    createHmac('sha256', secret)
      .update(`mcp-${purpose}-v1\n${random}\n${issued}\n${principal}`)
      .digest('base64url')
      .slice(0, SHAPES[purpose].macChars);
  const signed = (purpose: SignedIdPurpose, key: string, principal: string, nowMs: number): string => {
    const issued = Math.floor(nowMs / 1000).toString(36);
    return `${key}.${issued}.${sign(purpose, key, issued, principal)}`;
  };
  return {
    mint(purpose, principal, nowMs) {
      const random = randomBytes(SHAPES[purpose].randomBytes).toString('base64url');
      return { id: signed(purpose, random, principal, nowMs), key: random };
    },
    sign(purpose, key, principal, nowMs) {
      if (!SHAPES[purpose].pattern.test(`${key}.0.${'A'.repeat(SHAPES[purpose].macChars)}`))
        throw new Error(`a key of another shape than a ${purpose} id's`);
      return signed(purpose, key, principal, nowMs);
    },
    verify(purpose, id, principal, nowMs) {
      let known = verified.get(id, purpose, principal);
      if (known === undefined) {
        const match = SHAPES[purpose].pattern.exec(id);
        if (match === null) return { ok: false, reason: 'malformed' };
        const [, random = '', issued = '', mac = ''] = match;
        const expected = Buffer.from(sign(purpose, random, issued, principal));
        if (!timingSafeEqual(expected, Buffer.from(mac))) return { ok: false, reason: 'bad_signature' };
        known = { purpose, principal, key: random, issuedAtMs: parseInt(issued, 36) * 1000 };
        verified.add(id, known);
      }
      // Time is checked on every request, remembered or not.
      const { key, issuedAtMs } = known;
      if (!Number.isFinite(issuedAtMs) || nowMs - issuedAtMs > maxAgeMs || issuedAtMs - nowMs > 60_000)
        return { ok: false, reason: 'expired' };
      return { ok: true, key, issuedAtMs };
    },
  };
}

/** A short, non-reversible tag of a session id for logs and metrics; never the id itself. */
export function toSessionTag(id: string): string {
  return hashTag(`mcp-session:${id}`, 12);
}

/** When a signed id says it was issued, in ms since the epoch (not checked: verify the id first), or `undefined`. */
export function toIssuedAtMs(id: string): number | undefined {
  const issued = id.split('.')[1];
  if (issued === undefined || !/^[0-9a-z]{1,10}$/.test(issued)) return undefined;
  return parseInt(issued, 36) * 1000;
}

/**
 * Signed ids whose signature was found good, with what it said: a request presents the same session id again and
 * again, and the HMAC over it, for the same purpose and principal, can only come out the same, so it is computed
 * once. Bounded: the oldest are forgotten first (and then checked again when they come).
 */
interface VerifiedId {
  readonly purpose: string;
  readonly principal: string;
  readonly key: string;
  readonly issuedAtMs: number;
}

class VerifiedIds {
  private readonly entries = new Map<string, VerifiedId>();

  constructor(private readonly capacity: number) {}

  /** What `id` was verified as, for `purpose` and `principal` (exactly those), if it was. */
  get(id: string, purpose: string, principal: string): VerifiedId | undefined {
    const known = this.entries.get(id);
    return known !== undefined && known.purpose === purpose && known.principal === principal ? known : undefined;
  }

  add(id: string, verified: VerifiedId): void {
    this.entries.set(id, verified);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }
}
