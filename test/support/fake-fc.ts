/**
 * A loopback fake of the Function Compute 3.0 API (2023-03-30) for the deploy CLI: the REST paths the SDK calls for
 * functions, versions, aliases, triggers, custom domains and capacity settings, and at `/` the RPC actions of Resource
 * Manager (FC's service-linked role) and Certificate Management Service. Each request's ACS3-HMAC-SHA256 signature
 * (Alibaba Cloud's signature method V3) is recomputed and checked as @alicloud/openapi-core signs
 * (fake-fc-signature.ts, docs/platform-facts.md); every call recorded, and failures scriptable (throttling, 5xx,
 * AccessDenied, pending).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

import { ALIAS_ROUTES } from './fake-fc-aliases';
import { CAPACITY_ROUTES } from './fake-fc-capacity';
import { DOMAIN_ROUTES } from './fake-fc-domains';
import { FUNCTION_ROUTES } from './fake-fc-functions';
import { RPC_ACTIONS } from './fake-fc-rpc';
import { type Credentials, type SignatureCheck, verifyAcs3Signature } from './fake-fc-signature';
import {
  type Answer,
  API_VERSION,
  type Certificate,
  createState,
  type FcRequest,
  type FcState,
  type FunctionVersion,
  type Resource,
  type RestRoute,
  type Result,
  refuse,
} from './fake-fc-state';
import { TRIGGER_ROUTES } from './fake-fc-triggers';
import { VERSION_ROUTES } from './fake-fc-versions';

export { type Credentials, type SignatureCheck, type SignedRequest, verifyAcs3Signature } from './fake-fc-signature';
export { API_VERSION, type Certificate, type FunctionVersion } from './fake-fc-state';

export interface RecordedCall {
  method: string;
  path: string;
  /** The API action (GetFunction, CreateTrigger, CreateServiceLinkedRole, …), or undefined for an unknown one. */
  action: string | undefined;
  query: Record<string, string>;
  /** The parsed body (JSON, or an RPC form), if any. */
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
  /** Published versions per function, oldest first, each with the configuration it snapshotted. */
  readonly versions: Map<string, FunctionVersion[]>;
  /** Keyed `<function>/<alias>`. */
  readonly aliases: Map<string, Record<string, unknown>>;
  /** Keyed `<function>/<qualifier>`, as PutScalingConfig answered. */
  readonly scalingConfigs: Map<string, Record<string, unknown>>;
  /** Keyed `<function>/<qualifier>`, as PutProvisionConfig answered. */
  readonly provisionConfigs: Map<string, Record<string, unknown>>;
  /** Keyed by function: {functionArn, reservedConcurrency}. */
  readonly concurrencyConfigs: Map<string, Record<string, unknown>>;
  /** Certificate Management Service's certificates by id, for GetUserCertificateDetail. */
  readonly certificates: Map<string, Certificate>;
  /** Whether the account has FC's service-linked role AliyunServiceRoleForFC. @default false */
  serviceLinkedRole: boolean;
  /** Makes the next calls of `action` (a REST or an RPC action) fail with `failure`. */
  fail(action: string, failure: ScriptedFailure): void;
  /** After each create or update, this many GetFunction answers say Pending / InProgress. @default 0 */
  pendingPolls: number;
  /** The next this-many GetFunction calls miss (404) even when the function exists: a concurrent create. @default 0 */
  hiddenGets: number;
  close(): Promise<void>;
}

const ROUTES: RestRoute[] = [
  ...FUNCTION_ROUTES,
  ...VERSION_ROUTES,
  ...ALIAS_ROUTES,
  ...TRIGGER_ROUTES,
  ...DOMAIN_ROUTES,
  ...CAPACITY_ROUTES,
];

/** What a request is: a REST route with its path parameters, an RPC action at `/`, or nothing the fake serves. */
type Target =
  | { kind: 'rest'; route: RestRoute; params: string[] }
  | { kind: 'rpc'; action: string | undefined }
  | { kind: 'none' };

function target(method: string, path: string, actionHeader: string): Target {
  if (path === '/' && (method === 'POST' || method === 'GET'))
    return { kind: 'rpc', action: Object.hasOwn(RPC_ACTIONS, actionHeader) ? actionHeader : undefined };
  for (const route of ROUTES) {
    const match = route.method === method ? route.pattern.exec(path) : null;
    if (match !== null) return { kind: 'rest', route, params: match.slice(1).map((p) => decodeURIComponent(p)) };
  }
  return { kind: 'none' };
}

/** The body as JSON (REST) or a form (RPC); `invalid` when it claims JSON and is not a JSON object. */
function parseBody(contentType: string, body: Buffer): Resource | undefined | 'invalid' {
  if (body.length === 0) return undefined;
  const text = body.toString('utf8');
  if (contentType.startsWith('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(text));
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Resource) : 'invalid';
  } catch {
    return 'invalid';
  }
}

/** The action a request runs and how, or why the fake refuses to run it (unknown action, wrong version). */
function resolve(
  to: Exclude<Target, { kind: 'none' }>,
  actionHeader: string,
  versionHeader: string,
  state: FcState,
): Result<{ action: string; run(request: FcRequest): Answer }> {
  if (to.kind === 'rest') {
    const { route } = to;
    if (actionHeader !== route.action || versionHeader !== API_VERSION) {
      const message = `x-acs-action/x-acs-version do not match ${route.action} ${API_VERSION}`;
      return { refusal: refuse(400, 'InvalidAction', message) };
    }
    return { value: { action: route.action, run: (request) => route.handle(state, request) } };
  }
  const known = to.action === undefined ? undefined : RPC_ACTIONS[to.action];
  if (to.action === undefined || known === undefined)
    return { refusal: refuse(400, 'InvalidAction', `the specified action "${actionHeader}" is not valid`) };
  if (versionHeader !== known.version) {
    const message = `${to.action} is of version ${known.version}, not "${versionHeader}"`;
    return { refusal: refuse(400, 'InvalidVersion', message) };
  }
  // An RPC action's parameters are in the query, or in a form body.
  const parameters = (request: FcRequest): Record<string, string> => ({
    ...Object.fromEntries(Object.entries(request.body).map(([key, value]) => [key, String(value)])),
    ...request.query,
  });
  return {
    value: { action: to.action, run: (request) => known.handle(state, { ...request, query: parameters(request) }) },
  };
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
  const state: FcState = createState(accountId);
  const failures = new Map<string, ScriptedFailure[]>();
  const nonces = new Set<string>();

  const handle = (req: IncomingMessage, body: Buffer, res: ServerResponse): void => {
    const requestId = randomUUID();
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://fake');
    const actionHeader = String(req.headers['x-acs-action'] ?? '');
    const versionHeader = String(req.headers['x-acs-version'] ?? '');
    const to = target(method, url.pathname, actionHeader);
    const parsed = parseBody(String(req.headers['content-type'] ?? ''), body);
    const query = Object.fromEntries(url.searchParams);
    const call: RecordedCall = {
      method,
      path: url.pathname,
      action: to.kind === 'rest' ? to.route.action : to.kind === 'rpc' ? to.action : undefined,
      query,
      body: parsed === 'invalid' ? undefined : parsed,
      signature: verifyAcs3Signature(req, body, credentials),
      status: 200,
      code: undefined,
      requestId,
    };
    calls.push(call);
    const reply = (answer: Answer): void => {
      call.status = answer.status;
      call.code = 'code' in answer ? answer.code : undefined;
      if (answer.status === 204) {
        res.writeHead(204, { 'x-fc-request-id': requestId }).end();
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', 'x-fc-request-id': requestId });
      // RPC answers carry their request id in the body, errors of either style too (with HostId for RPC).
      const rpc = to.kind === 'rpc';
      const payload =
        'code' in answer
          ? { Code: answer.code, Message: answer.message, RequestId: requestId, ...(rpc && { HostId: url.host }) }
          : rpc
            ? { RequestId: requestId, ...(answer.payload as Resource) }
            : answer.payload;
      res.end(JSON.stringify(payload));
    };
    const error = (status: number, code: string, message: string): void => reply({ status, code, message });

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
    if (to.kind === 'none') return error(404, 'NotFound', `no route for ${method} ${url.pathname}`);
    const resolved = resolve(to, actionHeader, versionHeader, state);
    if ('refusal' in resolved) return reply(resolved.refusal);
    const { action, run } = resolved.value;
    const scripted = failures.get(action)?.[0];
    if (scripted !== undefined) {
      scripted.times = (scripted.times ?? 1) - 1;
      if (scripted.times <= 0) failures.get(action)?.shift();
      return error(scripted.status, scripted.code, scripted.message ?? `scripted ${scripted.code}`);
    }
    if (parsed === 'invalid') return error(400, 'InvalidArgument', 'the body is not a JSON object');
    const params = to.kind === 'rest' ? to.params : [];
    return reply(run({ action, params, query, body: parsed ?? {}, now: new Date().toISOString() }));
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
    functions: state.functions,
    triggers: state.triggers,
    domains: state.domains,
    versions: state.versions,
    aliases: state.aliases,
    scalingConfigs: state.scalingConfigs,
    provisionConfigs: state.provisionConfigs,
    concurrencyConfigs: state.concurrencyConfigs,
    certificates: state.certificates,
    get serviceLinkedRole() {
      return state.serviceLinkedRole;
    },
    set serviceLinkedRole(value: boolean) {
      state.serviceLinkedRole = value;
    },
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
