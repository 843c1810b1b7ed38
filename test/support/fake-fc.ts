/**
 * A loopback fake of the Function Compute 3.0 API (2023-03-30) for the deploy CLI: the REST paths the SDK calls for
 * functions, triggers and custom domains, each request's ACS3-HMAC-SHA256 signature (Alibaba Cloud's signature method
 * V3) recomputed and checked as @alicloud/openapi-core signs: canonical URI, sorted query, the x-acs-*, host and
 * content-type headers, the body hash (docs/platform-facts.md); every call recorded, and failures scriptable
 * (throttling, 5xx, AccessDenied, pending).
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export const API_VERSION = '2023-03-30';
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

export interface RecordedCall {
  method: string;
  path: string;
  /** The route's API action (GetFunction, CreateTrigger, …), or undefined for an unknown route. */
  action: string | undefined;
  query: Record<string, string>;
  /** The parsed JSON body, if any. */
  body: Record<string, unknown> | undefined;
  signature: SignatureCheck;
  /** What the fake answered. */
  status: number;
  code: string | undefined;
  requestId: string;
}

export interface ScriptedFailure {
  status: number;
  code: string;
  message?: string;
  /** How many matching calls fail this way. @default 1 */
  times?: number;
}

export interface FakeFc {
  /** `http://127.0.0.1:<port>`: pass as --endpoint. */
  readonly endpoint: string;
  readonly calls: RecordedCall[];
  readonly functions: Map<string, Record<string, unknown>>;
  /** Keyed `<function>/<trigger>`. */
  readonly triggers: Map<string, Record<string, unknown>>;
  readonly domains: Map<string, Record<string, unknown>>;
  /** Makes the next calls of `action` fail with `failure`. */
  fail(action: string, failure: ScriptedFailure): void;
  /** After each create or update, this many GetFunction answers say Pending / InProgress. @default 0 */
  pendingPolls: number;
  /** The next this-many GetFunction calls miss (404) even when the function exists: a concurrent create. @default 0 */
  hiddenGets: number;
  close(): Promise<void>;
}

interface Route {
  action: string;
  params: string[];
}

const ROUTES: Array<{ method: string; pattern: RegExp; action: string }> = [
  { method: 'GET', pattern: /^\/2023-03-30\/functions\/([^/]+)$/, action: 'GetFunction' },
  { method: 'POST', pattern: /^\/2023-03-30\/functions$/, action: 'CreateFunction' },
  { method: 'PUT', pattern: /^\/2023-03-30\/functions\/([^/]+)$/, action: 'UpdateFunction' },
  { method: 'GET', pattern: /^\/2023-03-30\/functions\/([^/]+)\/triggers\/([^/]+)$/, action: 'GetTrigger' },
  { method: 'POST', pattern: /^\/2023-03-30\/functions\/([^/]+)\/triggers$/, action: 'CreateTrigger' },
  { method: 'PUT', pattern: /^\/2023-03-30\/functions\/([^/]+)\/triggers\/([^/]+)$/, action: 'UpdateTrigger' },
  { method: 'GET', pattern: /^\/2023-03-30\/custom-domains\/([^/]+)$/, action: 'GetCustomDomain' },
  { method: 'POST', pattern: /^\/2023-03-30\/custom-domains$/, action: 'CreateCustomDomain' },
  { method: 'PUT', pattern: /^\/2023-03-30\/custom-domains\/([^/]+)$/, action: 'UpdateCustomDomain' },
];

function matchRoute(method: string, path: string): Route | undefined {
  for (const route of ROUTES) {
    const match = route.method === method ? route.pattern.exec(path) : null;
    if (match !== null) return { action: route.action, params: match.slice(1).map((p) => decodeURIComponent(p)) };
  }
  return undefined;
}

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

/**
 * The recorded calls the fake refused as badly signed (an empty list when every request was signed). A retried
 * request that was sent again without being signed again fails too: its nonce was used before.
 */
export function unsignedCalls(
  calls: readonly RecordedCall[],
): Array<{ action: string | undefined; signature: SignatureCheck }> {
  return calls.filter((c) => !c.signature.ok).map((c) => ({ action: c.action, signature: c.signature }));
}

/** Starts the fake on a free loopback port. */
export async function startFakeFc(credentials: Credentials, accountId = '1234567890123456'): Promise<FakeFc> {
  const calls: RecordedCall[] = [];
  const functions = new Map<string, Record<string, unknown>>();
  const triggers = new Map<string, Record<string, unknown>>();
  const domains = new Map<string, Record<string, unknown>>();
  const failures = new Map<string, ScriptedFailure[]>();
  const nonces = new Set<string>();
  const pending = new Map<string, number>();
  const state = { pendingPolls: 0, hiddenGets: 0 };

  const handle = (req: IncomingMessage, body: Buffer, res: ServerResponse): void => {
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://fake');
    const route = matchRoute(req.method ?? 'GET', url.pathname);
    const parsed = body.length > 0 ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : undefined;
    const call: RecordedCall = {
      method: req.method ?? 'GET',
      path: url.pathname,
      action: route?.action,
      query: Object.fromEntries(url.searchParams),
      body: parsed,
      signature: verifyAcs3Signature(req, body, credentials),
      status: 200,
      code: undefined,
      requestId,
    };
    calls.push(call);
    const reply = (status: number, payload: unknown, code?: string): void => {
      call.status = status;
      call.code = code;
      res.writeHead(status, { 'content-type': 'application/json', 'x-fc-request-id': requestId });
      res.end(JSON.stringify(payload));
    };
    const error = (status: number, code: string, message: string): void =>
      reply(status, { Code: code, Message: message, RequestId: requestId }, code);

    const nonce = String(req.headers['x-acs-signature-nonce'] ?? '');
    if (call.signature.ok && nonces.has(nonce))
      call.signature = { ok: false, reason: 'x-acs-signature-nonce was used before' };
    nonces.add(nonce);
    if (!call.signature.ok)
      return error(
        403,
        'SignatureDoesNotMatch',
        `The request signature does not conform to Aliyun standards: ${call.signature.reason}`,
      );
    if (route === undefined) return error(404, 'NotFound', `no route for ${req.method} ${url.pathname}`);
    if (req.headers['x-acs-action'] !== route.action || req.headers['x-acs-version'] !== API_VERSION) {
      return error(400, 'InvalidAction', `x-acs-action/x-acs-version do not match ${route.action} ${API_VERSION}`);
    }
    const scripted = failures.get(route.action)?.[0];
    if (scripted !== undefined) {
      scripted.times = (scripted.times ?? 1) - 1;
      if (scripted.times <= 0) failures.get(route.action)?.shift();
      return error(scripted.status, scripted.code, scripted.message ?? `scripted ${scripted.code}`);
    }

    const [name = '', second = ''] = route.params;
    const now = new Date().toISOString();
    switch (route.action) {
      case 'GetFunction': {
        const fn = state.hiddenGets > 0 ? undefined : functions.get(name);
        state.hiddenGets = Math.max(0, state.hiddenGets - 1);
        if (fn === undefined) return error(404, 'FunctionNotFound', `function '${name}' does not exist`);
        const left = pending.get(name) ?? 0;
        if (left > 0) pending.set(name, left - 1);
        return reply(200, {
          ...fn,
          state: left > 0 ? 'Pending' : 'Active',
          lastUpdateStatus: left > 0 ? 'InProgress' : 'Successful',
        });
      }
      case 'CreateFunction': {
        const fnName = String(parsed?.functionName ?? '');
        if (functions.has(fnName)) return error(409, 'FunctionAlreadyExists', `function '${fnName}' already exists`);
        const { code, ...config } = parsed ?? {};
        const fn = {
          ...config,
          codeSize: codeSize(code),
          functionArn: `acs:fc:cn:${accountId}:functions/${fnName}`,
          createdTime: now,
          lastModifiedTime: now,
        };
        functions.set(fnName, fn);
        pending.set(fnName, state.pendingPolls);
        return reply(200, { ...fn, state: 'Pending', lastUpdateStatus: 'InProgress' });
      }
      case 'UpdateFunction': {
        const fn = functions.get(name);
        if (fn === undefined) return error(404, 'FunctionNotFound', `function '${name}' does not exist`);
        const { code, ...config } = parsed ?? {};
        const updated = {
          ...fn,
          ...config,
          ...(code !== undefined && { codeSize: codeSize(code) }),
          lastModifiedTime: now,
        };
        functions.set(name, updated);
        pending.set(name, state.pendingPolls);
        return reply(200, { ...updated, state: 'Active', lastUpdateStatus: 'InProgress' });
      }
      case 'GetTrigger': {
        const trigger = triggers.get(`${name}/${second}`);
        return trigger === undefined
          ? error(404, 'TriggerNotFound', `trigger '${second}' does not exist`)
          : reply(200, trigger);
      }
      case 'CreateTrigger': {
        if (!functions.has(name)) return error(404, 'FunctionNotFound', `function '${name}' does not exist`);
        const triggerName = String(parsed?.triggerName ?? '');
        if (triggers.has(`${name}/${triggerName}`))
          return error(409, 'TriggerAlreadyExists', `trigger '${triggerName}' already exists`);
        const trigger = {
          ...parsed,
          triggerId: randomUUID(),
          createdTime: now,
          lastModifiedTime: now,
          httpTrigger: {
            urlInternet: `https://${name}-abcdefghij.cn-hangzhou.fcapp.run`,
            urlIntranet: `https://${name}-abcdefghij.cn-hangzhou-vpc.fcapp.run`,
          },
        };
        triggers.set(`${name}/${triggerName}`, trigger);
        return reply(200, trigger);
      }
      case 'UpdateTrigger': {
        const trigger = triggers.get(`${name}/${second}`);
        if (trigger === undefined) return error(404, 'TriggerNotFound', `trigger '${second}' does not exist`);
        const updated = { ...trigger, ...parsed, lastModifiedTime: now };
        triggers.set(`${name}/${second}`, updated);
        return reply(200, updated);
      }
      case 'GetCustomDomain': {
        const domain = domains.get(name);
        return domain === undefined
          ? error(404, 'DomainNameNotFound', `domain '${name}' does not exist`)
          : reply(200, withoutPrivateKey(domain));
      }
      case 'CreateCustomDomain': {
        const domainName = String(parsed?.domainName ?? '');
        if (domains.has(domainName))
          return error(409, 'DomainNameAlreadyExists', `domain '${domainName}' already exists`);
        const tlsProblem = checkDomainTls({ protocol: 'HTTP', ...parsed });
        if (tlsProblem !== undefined) return error(400, 'InvalidArgument', tlsProblem);
        const domain = { protocol: 'HTTP', ...parsed, accountId, createdTime: now, lastModifiedTime: now };
        domains.set(domainName, domain);
        return reply(200, domain);
      }
      case 'UpdateCustomDomain': {
        const domain = domains.get(name);
        if (domain === undefined) return error(404, 'DomainNameNotFound', `domain '${name}' does not exist`);
        // A partial update: fields left out stay as they are (the certificate too).
        const updated = { ...domain, ...parsed, lastModifiedTime: now };
        const tlsProblem = checkDomainTls(updated);
        if (tlsProblem !== undefined) return error(400, 'InvalidArgument', tlsProblem);
        domains.set(name, updated);
        return reply(200, withoutPrivateKey(updated));
      }
      default:
        return error(404, 'NotFound', route.action);
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, Buffer.concat(chunks), res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the fake FC API has no TCP address');
  const { port } = address;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    functions,
    triggers,
    domains,
    fail(action, failure) {
      failures.set(action, [...(failures.get(action) ?? []), { ...failure }]);
    },
    get pendingPolls() {
      return state.pendingPolls;
    },
    set pendingPolls(value: number) {
      state.pendingPolls = value;
    },
    get hiddenGets() {
      return state.hiddenGets;
    },
    set hiddenGets(value: number) {
      state.hiddenGets = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** FC serves HTTPS only with a whole certificate: name, certificate and private key. */
function checkDomainTls(domain: Record<string, unknown>): string | undefined {
  const protocol = String(domain.protocol ?? '');
  if (!['HTTP', 'HTTPS', 'HTTP,HTTPS'].includes(protocol))
    return `protocol must be HTTP, HTTPS or HTTP,HTTPS (got "${protocol}")`;
  const cert = (domain.certConfig ?? undefined) as Record<string, unknown> | undefined;
  if (
    cert !== undefined &&
    !['certName', 'certificate', 'privateKey'].every((field) => typeof cert[field] === 'string' && cert[field] !== '')
  ) {
    return 'certConfig needs certName, certificate and privateKey';
  }
  if (protocol.includes('HTTPS') && cert === undefined) return `protocol ${protocol} needs certConfig`;
  return undefined;
}

/** The fake never gives a private key back: a deploy that needs FC to return one (to re-send it) fails here. */
function withoutPrivateKey(domain: Record<string, unknown>): Record<string, unknown> {
  const cert = domain.certConfig as Record<string, unknown> | undefined;
  if (cert === undefined) return domain;
  const { privateKey: _privateKey, ...rest } = cert;
  return { ...domain, certConfig: rest };
}

function codeSize(code: unknown): number {
  const zipFile = typeof code === 'object' && code !== null && 'zipFile' in code ? String(code.zipFile) : '';
  return Buffer.from(zipFile, 'base64').length;
}
