/**
 * Functions in the fake FC API: GetFunction (LATEST, or a version's or an alias's configuration with ?qualifier=),
 * CreateFunction and UpdateFunction (a partial update). Every field sent is kept and given back; the code is kept as
 * its size. A create or update leaves the function Pending for `pendingPolls` reads.
 */
import { checkFunctionConfig } from './fake-fc-function-rules';
import {
  type Answer,
  API_VERSION,
  copy,
  type FcRequest,
  type FcState,
  functionNotFound,
  functionPath,
  ok,
  type Resource,
  type RestRoute,
  refuse,
} from './fake-fc-state';
import { checkQualifier, findVersion } from './fake-fc-versions';

function codeSize(code: unknown): number {
  const zipFile = typeof code === 'object' && code !== null && 'zipFile' in code ? String(code.zipFile) : '';
  return Buffer.from(zipFile, 'base64').length;
}

/**
 * The fields FC gives back in another shape than it takes them: layers are sent as ARNs and answered as
 * FunctionLayer objects ({arn, size}; the fake knows no size).
 */
function asStored(config: Resource): Resource {
  const { layers } = config;
  if (!Array.isArray(layers)) return config;
  return { ...config, layers: layers.map((layer: unknown) => (typeof layer === 'string' ? { arn: layer } : layer)) };
}

/** A version's or an alias's configuration: what FC runs for that qualifier. */
function qualified(state: FcState, name: string, qualifier: string): Answer {
  const problem = checkQualifier(state, name, qualifier);
  if (problem !== undefined) return problem;
  const alias = state.aliases.get(`${name}/${qualifier}`);
  const version = findVersion(state, name, String(alias?.versionId ?? qualifier));
  return ok({ ...version?.config, state: 'Active', lastUpdateStatus: 'Successful' });
}

function get(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  const fn = state.hiddenGets > 0 ? undefined : state.functions.get(name);
  state.hiddenGets = Math.max(0, state.hiddenGets - 1);
  if (fn === undefined) return functionNotFound(name);
  const { qualifier = 'LATEST' } = req.query;
  if (qualifier !== 'LATEST') return qualified(state, name, qualifier);
  const left = state.pending.get(name) ?? 0;
  if (left > 0) state.pending.set(name, left - 1);
  return ok({
    ...fn,
    state: left > 0 ? 'Pending' : 'Active',
    lastUpdateStatus: left > 0 ? 'InProgress' : 'Successful',
  });
}

function create(state: FcState, req: FcRequest): Answer {
  const fnName = String(req.body.functionName ?? '');
  if (state.functions.has(fnName)) return refuse(409, 'FunctionAlreadyExists', `function '${fnName}' already exists`);
  const { code, ...config } = req.body;
  const fn: Resource = {
    ...asStored(config),
    codeSize: codeSize(code),
    functionArn: `acs:fc:cn:${state.accountId}:functions/${fnName}`,
    createdTime: req.now,
    lastModifiedTime: req.now,
  };
  const problem = checkFunctionConfig(state, fn);
  if (problem !== undefined) return problem;
  state.functions.set(fnName, copy(fn));
  state.pending.set(fnName, state.pendingPolls);
  return ok({ ...fn, state: 'Pending', lastUpdateStatus: 'InProgress' });
}

function update(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  const fn = state.functions.get(name);
  if (fn === undefined) return functionNotFound(name);
  const { code, ...config } = req.body;
  const updated: Resource = {
    ...fn,
    ...asStored(config),
    ...(code !== undefined && { codeSize: codeSize(code) }),
    lastModifiedTime: req.now,
  };
  const problem = checkFunctionConfig(state, updated);
  if (problem !== undefined) return problem;
  state.functions.set(name, copy(updated));
  state.pending.set(name, state.pendingPolls);
  return ok({ ...updated, state: 'Active', lastUpdateStatus: 'InProgress' });
}

export const FUNCTION_ROUTES: RestRoute[] = [
  { method: 'GET', pattern: functionPath(), action: 'GetFunction', handle: get },
  { method: 'POST', pattern: new RegExp(`^/${API_VERSION}/functions$`), action: 'CreateFunction', handle: create },
  { method: 'PUT', pattern: functionPath(), action: 'UpdateFunction', handle: update },
];
