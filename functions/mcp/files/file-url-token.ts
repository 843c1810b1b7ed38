/**
 * The token of a file URL the server serves itself (`/files/<name>?t=<token>`): what it may do, signed with a key
 * derived from MCP_SESSION_SECRET, so that any instance with the same secret honours it and nothing else can make
 * one. The signature covers the sandbox (its table entry and the sandbox's own id, which a reset changes), the
 * file, the method, the size cap of an upload and the expiry: change any of them and the token is refused.
 * The token names no secret: the credential's principal is already a non-secret id.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

import type { SandboxPlace } from '../sessions/sandbox-access';

/** What a file URL lets its holder do. */
export interface FileGrant {
  /** The table entry whose sandbox holds the file: a 2025 session's own, or a handle's (named or not). */
  readonly place: SandboxPlace;
  /** The sandbox's own id when the URL was made: a reset (a new sandbox under the same entry) voids it. */
  readonly sandboxId: string;
  /** The file, as the sandbox sees it (absolute). */
  readonly path: string;
  readonly mode: 'download' | 'upload';
  /** Unix seconds after which the URL is refused. */
  readonly expiresAtS: number;
  /** An upload's cap on the body. */
  readonly maxBytes: number;
}

export type FileGrantCheck =
  | { readonly ok: true; readonly grant: FileGrant }
  | { readonly ok: false; readonly reason: 'malformed' | 'bad_signature' | 'expired' };

export interface FileUrlSigner {
  sign(grant: FileGrant): string;
  verify(token: string, nowMs: number): FileGrantCheck;
}

/** Token characters at most: it rides in a query string, and FC takes at most 4 KB of path and query. */
export const MAX_TOKEN_CHARS = 3000;

/** The fields in the order they are signed; a field added later gets a new version. */
type Wire = [
  version: 1,
  kind: 's' | 'h',
  key: string,
  tag: string,
  principal: string,
  issuedAtMs: number,
  name: string,
  sandboxId: string,
  path: string,
  mode: 'd' | 'u',
  expiresAtS: number,
  maxBytes: number,
];

/** Creates the signer for `secret` (MCP_SESSION_SECRET); its key is the secret's, for this purpose only. */
export function createFileUrlSigner(secret: string): FileUrlSigner {
  const key = createHmac('sha256', secret).update('mcp-file-url-key-v1').digest();
  const mac = (payload: string): Buffer => createHmac('sha256', key).update(payload).digest();
  return {
    sign(grant) {
      const { place } = grant;
      const wire: Wire = [
        1,
        place.kind === 'session' ? 's' : 'h',
        place.key,
        place.tag,
        place.principal,
        place.issuedAtMs,
        place.name ?? '',
        grant.sandboxId,
        grant.path,
        grant.mode === 'download' ? 'd' : 'u',
        grant.expiresAtS,
        grant.maxBytes,
      ];
      const payload = Buffer.from(JSON.stringify(wire)).toString('base64url');
      return `${payload}.${mac(payload).toString('base64url')}`;
    },
    verify(token, nowMs) {
      if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'malformed' };
      const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
      if (match === null) return { ok: false, reason: 'malformed' };
      const [, payload = '', given = ''] = match;
      if (!timingSafeEqual(mac(payload), Buffer.from(given, 'base64url')))
        return { ok: false, reason: 'bad_signature' };
      const grant = toGrant(payload);
      if (grant === undefined) return { ok: false, reason: 'malformed' };
      if (nowMs / 1000 > grant.expiresAtS) return { ok: false, reason: 'expired' };
      return { ok: true, grant };
    },
  };
}

/** The grant a signed payload holds, or `undefined` when it is not one this version wrote. */
function toGrant(payload: string): FileGrant | undefined {
  let wire: unknown;
  try {
    wire = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(wire) || wire.length !== 12 || wire[0] !== 1) return undefined;
  const [, kind, key, tag, principal, issuedAtMs, name, sandboxId, path, mode, expiresAtS, maxBytes] =
    wire as unknown[];
  const strings = [key, tag, principal, name, sandboxId, path];
  if (!strings.every((value) => typeof value === 'string')) return undefined;
  if ((kind !== 's' && kind !== 'h') || (mode !== 'd' && mode !== 'u')) return undefined;
  if (![issuedAtMs, expiresAtS, maxBytes].every(Number.isSafeInteger)) return undefined;
  return {
    place: {
      kind: kind === 's' ? 'session' : 'handle',
      key: key as string,
      tag: tag as string,
      principal: principal as string,
      issuedAtMs: issuedAtMs as number,
      ...(name !== '' && { name: name as string }),
    },
    sandboxId: sandboxId as string,
    path: path as string,
    mode: mode === 'd' ? 'download' : 'upload',
    expiresAtS: expiresAtS as number,
    maxBytes: maxBytes as number,
  };
}
