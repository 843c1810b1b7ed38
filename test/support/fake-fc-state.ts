/**
 * What the fake FC API holds (functions, triggers, domains, versions, aliases, capacity settings, the service-linked
 * role, certificates) and the shapes its handlers share: a request as a handler sees it and the answer it gives.
 */

/** A published version: what the API returns, plus the function's configuration when it was published. */
export interface FunctionVersion {
  versionId: string;
  description: string;
  createdTime: string;
  lastModifiedTime: string;
  /** The function's configuration at the moment of publishing (what FC runs for this version). */
  config: Record<string, unknown>;
}

/** A certificate in Certificate Management Service, as GetUserCertificateDetail gives it out. */
export interface Certificate {
  name: string;
  /** PEM. */
  cert: string;
  /** PEM. */
  key: string;
}

export type Resource = Record<string, unknown>;

export interface FcState {
  readonly accountId: string;
  readonly functions: Map<string, Resource>;
  /** Keyed `<function>/<trigger>`. */
  readonly triggers: Map<string, Resource>;
  readonly domains: Map<string, Resource>;
  /** Keyed by function, oldest first. */
  readonly versions: Map<string, FunctionVersion[]>;
  /** Keyed `<function>/<alias>`. */
  readonly aliases: Map<string, Resource>;
  /** Keyed `<function>/<qualifier>`. */
  readonly scalingConfigs: Map<string, Resource>;
  /** Keyed `<function>/<qualifier>`. */
  readonly provisionConfigs: Map<string, Resource>;
  /** Keyed by function. */
  readonly concurrencyConfigs: Map<string, Resource>;
  /** Keyed by certificate id (CAS ids are numbers; the fake keeps their decimal text). */
  readonly certificates: Map<string, Certificate>;
  /** Whether the account has AliyunServiceRoleForFC, FC's service-linked role. */
  serviceLinkedRole: boolean;
  /** After each create or update, this many GetFunction answers say Pending / InProgress. */
  pendingPolls: number;
  /** The next this-many GetFunction calls miss (404) even when the function exists. */
  hiddenGets: number;
  /** GetFunction answers still to say Pending, per function. */
  readonly pending: Map<string, number>;
}

export function createState(accountId: string): FcState {
  return {
    accountId,
    functions: new Map(),
    triggers: new Map(),
    domains: new Map(),
    versions: new Map(),
    aliases: new Map(),
    scalingConfigs: new Map(),
    provisionConfigs: new Map(),
    concurrencyConfigs: new Map(),
    certificates: new Map(),
    serviceLinkedRole: false,
    pendingPolls: 0,
    hiddenGets: 0,
    pending: new Map(),
  };
}

/** A request as a handler sees it: the route's action and path parameters, the query, the parsed body. */
export interface FcRequest {
  action: string;
  params: string[];
  query: Record<string, string>;
  /** The parsed JSON body (REST) or form body (RPC); empty when there is none. */
  body: Resource;
  /** ISO 8601, the same for everything one request stamps. */
  now: string;
}

/** What a handler answers: a payload (undefined for 204) or an error the server wraps with the request id. */
export type Answer = { status: number; payload: unknown } | { status: number; code: string; message: string };

/** A value, or the refusal that stands in for it. */
export type Result<T> = { value: T } | { refusal: Answer };

export const ok = (payload: unknown): Answer => ({ status: 200, payload });
export const noContent = (): Answer => ({ status: 204, payload: undefined });
export const refuse = (status: number, code: string, message: string): Answer => ({ status, code, message });

/** A REST route of the FC 3.0 API and its handler. */
export interface RestRoute {
  method: string;
  pattern: RegExp;
  action: string;
  handle(state: FcState, req: FcRequest): Answer;
}

export const API_VERSION = '2023-03-30';

/** `/2023-03-30/functions/{name}` followed by `rest` (a regex source). */
export const functionPath = (rest = ''): RegExp => new RegExp(`^/${API_VERSION}/functions/([^/]+)${rest}$`);

export function functionNotFound(name: string): Answer {
  return refuse(404, 'FunctionNotFound', `function '${name}' does not exist`);
}

export const isObject = (value: unknown): value is Resource =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A deep copy, so that a stored resource never shares objects with a request or an answer. */
export const copy = <T>(value: T): T => structuredClone(value);
