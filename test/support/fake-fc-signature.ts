/**
 * Alibaba Cloud's signature method V3 (ACS3-HMAC-SHA256) as @alicloud/openapi-core signs: the fake FC API recomputes
 * it for every request, REST and RPC alike (docs/platform-facts.md).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

const ALGORITHM = 'ACS3-HMAC-SHA256';
/** Headers a signature must cover, besides content-type when there is a body. */
const REQUIRED_SIGNED = [
  'host',
  'x-acs-action',
  'x-acs-content-sha256',
  'x-acs-date',
  'x-acs-signature-nonce',
  'x-acs-version',
];
const MAX_CLOCK_SKEW_MS = 15 * 60_000;

export interface Credentials {
  accessKeyId: string;
  accessKeySecret: string;
  /** When set, requests must carry it as x-acs-security-token (signed). */
  securityToken?: string;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/** openapi-core's percent-encoding of query values (encodeURIComponent plus !'()*). */
function encodeRfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** What the verifier reads of a request: node's IncomingMessage fits. */
export interface SignedRequest {
  method?: string | undefined;
  url?: string | undefined;
  headers: Record<string, string | string[] | undefined>;
}

const sha256Hex = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/**
 * Recomputes the request's ACS3-HMAC-SHA256 signature and compares it with the one in `authorization`.
 * Also checks: the body hash, the signed-header set (every x-acs-* header signed), the date's skew and the key id.
 */
export function verifyAcs3Signature(
  req: SignedRequest,
  body: Buffer,
  credentials: Credentials,
  now = Date.now(),
): SignatureCheck {
  const auth = String(req.headers.authorization ?? '');
  const match = /^ACS3-HMAC-SHA256 Credential=([^,]+),SignedHeaders=([^,]+),Signature=([0-9a-f]{64})$/.exec(auth);
  if (match === null)
    return { ok: false, reason: `authorization is not "${ALGORITHM} Credential=…,SignedHeaders=…,Signature=…"` };
  const [, keyId = '', signedList = '', signature = ''] = match;
  if (keyId !== credentials.accessKeyId) return { ok: false, reason: `unknown access key id ${keyId}` };
  const signed = signedList.split(';');
  if (signed.join(';') !== [...signed].sort().join(';')) return { ok: false, reason: 'SignedHeaders is not sorted' };
  const mustSign = [...REQUIRED_SIGNED, ...Object.keys(req.headers).filter((h) => h.startsWith('x-acs-'))];
  if (body.length > 0) mustSign.push('content-type');
  const unsigned = [...new Set(mustSign)].filter((h) => !signed.includes(h));
  if (unsigned.length > 0) return { ok: false, reason: `headers not signed: ${unsigned.join(', ')}` };
  const payloadHash = sha256Hex(body);
  if (req.headers['x-acs-content-sha256'] !== payloadHash)
    return { ok: false, reason: 'x-acs-content-sha256 does not match the body' };
  const date = Date.parse(String(req.headers['x-acs-date']));
  if (!Number.isFinite(date) || Math.abs(now - date) > MAX_CLOCK_SKEW_MS)
    return { ok: false, reason: `x-acs-date ${String(req.headers['x-acs-date'])} is not within 15 minutes` };
  if (credentials.securityToken !== undefined && req.headers['x-acs-security-token'] !== credentials.securityToken) {
    return { ok: false, reason: 'x-acs-security-token missing or wrong' };
  }

  const url = new URL(req.url ?? '/', 'http://fake');
  const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
  const canonicalUri = rawPath.replace(/\+/g, '%20').replace(/\*/g, '%2A').replace(/%7E/g, '~');
  const canonicalQuery = [...new Set(url.searchParams.keys())]
    .sort()
    .map((key) => `${key}=${encodeRfc3986(url.searchParams.get(key) ?? '')}`)
    .join('&');
  const canonicalHeaders = signed.map((h) => `${h}:${String(req.headers[h] ?? '').trim()}\n`).join('');
  const canonicalRequest = [
    req.method,
    canonicalUri,
    canonicalQuery,
    canonicalHeaders,
    signed.join(';'),
    payloadHash,
  ].join('\n');
  const stringToSign = `${ALGORITHM}\n${sha256Hex(canonicalRequest)}`;
  const expected = createHmac('sha256', credentials.accessKeySecret).update(stringToSign).digest();
  const given = Buffer.from(signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'signature does not match the canonical request' };
  return { ok: true };
}
