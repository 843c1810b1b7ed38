/**
 * The capability tokens of previews served on a public address (preview-auth.ts), in the style of signed ids
 * (sessions/session-id.ts): `<issued, base36 seconds>.<HMAC>`, the HMAC (SHA-256, base64url, 22 characters:
 * 132 bits) keyed with MCP_SESSION_SECRET over a purpose, the sandbox's id, the sandbox's port and the issue
 * time. So a token opens one forwarder only (one sandbox, one port; a reset gives the sandbox a new id), cannot
 * be made without the secret, and expires `ttlMs` after it was issued. The URL's token and the cookie it is
 * exchanged for share the issue time but not the purpose: neither value is valid as the other.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** A token's URL form (`?mcp_preview=`), or the cookie a browser then carries. */
export type PreviewTokenKind = 'url' | 'cookie';

/** What a token opens: a sandbox (its id) and a port in it. */
export interface PreviewBinding {
  readonly sandbox: string;
  readonly port: number;
}

export interface PreviewSigner {
  /** How long a token is valid after it was issued. */
  readonly ttlMs: number;
  /** A token of `kind` for `binding`, issued at `issuedMs` (rounded down to the second). */
  mint(kind: PreviewTokenKind, binding: PreviewBinding, issuedMs: number): string;
  /**
   * When a valid token of `kind` for `binding` was issued; undefined when malformed, forged, for another binding, or
   * expired.
   */
  verify(kind: PreviewTokenKind, value: string, binding: PreviewBinding, nowMs: number): number | undefined;
}

const TOKEN = /^([0-9a-z]{1,10})\.([A-Za-z0-9_-]{22})$/;
/** A token issued this far ahead of the checker's clock is still taken (clocks of a host drift little). */
const FUTURE_SKEW_MS = 60_000;

/** Creates the signer. `secret` is MCP_SESSION_SECRET; `ttlMs` is MCP_SESSION_MAX_AGE_S. */
export function createPreviewSigner(secret: string, ttlMs: number): PreviewSigner {
  const sign = (kind: PreviewTokenKind, { sandbox, port }: PreviewBinding, issued: string): string =>
    createHmac('sha256', secret)
      .update(`mcp-preview-${kind}-v1\n${sandbox}\n${port}\n${issued}`)
      .digest('base64url')
      .slice(0, 22);
  return {
    ttlMs,
    mint(kind, binding, issuedMs) {
      const issued = Math.floor(issuedMs / 1000).toString(36);
      return `${issued}.${sign(kind, binding, issued)}`;
    },
    verify(kind, value, binding, nowMs) {
      const match = TOKEN.exec(value);
      if (match === null) return undefined;
      const [, issued = '', mac = ''] = match;
      if (!timingSafeEqual(Buffer.from(sign(kind, binding, issued)), Buffer.from(mac))) return undefined;
      const issuedMs = parseInt(issued, 36) * 1000;
      if (!Number.isSafeInteger(issuedMs) || nowMs - issuedMs >= ttlMs || issuedMs - nowMs > FUTURE_SKEW_MS)
        return undefined;
      return issuedMs;
    },
  };
}
