/**
 * How many instances FC keeps for a function, in the fake FC API: the scaling config and the provision config (per
 * qualifier, `?qualifier=` as the SDK sends it) and the reserved concurrency (per function). A qualifier must be
 * LATEST, a version or an alias of the function. FC keeps either a scaling config or a provision config on a
 * qualifier, not both (fc3 refuses both at once too, and retries after deleting one when FC answers
 * ProvisionConfigExist); the fake refuses the second one.
 */
import {
  type Answer,
  copy,
  type FcRequest,
  type FcState,
  functionNotFound,
  functionPath,
  noContent,
  ok,
  type Resource,
  type RestRoute,
  type Result,
  refuse,
} from './fake-fc-state';
import { checkQualifier } from './fake-fc-versions';

/** PutProvisionConfigInput: "The number of target provisioned instances. Valid values: [0,10000]." */
const MAX_PROVISIONED = 10_000;

const isCount = (value: unknown, max = Number.MAX_SAFE_INTEGER): boolean =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;

/** The `<function>/<qualifier>` a per-qualifier request names and its ARN, or why they do not exist. */
function target(state: FcState, req: FcRequest): Result<{ key: string; arn: string }> {
  const [name = ''] = req.params;
  const fn = state.functions.get(name);
  if (fn === undefined) return { refusal: functionNotFound(name) };
  const qualifier = req.query.qualifier;
  if (qualifier === undefined) return { refusal: refuse(400, 'InvalidArgument', 'qualifier is required') };
  const problem = checkQualifier(state, name, qualifier);
  if (problem !== undefined) return { refusal: problem };
  return { value: { key: `${name}/${qualifier}`, arn: `${String(fn.functionArn)}/${qualifier}` } };
}

function putScaling(state: FcState, req: FcRequest): Answer {
  const found = target(state, req);
  if ('refusal' in found) return found.refusal;
  const at = found.value;
  const { minInstances } = req.body;
  if (minInstances !== undefined && !isCount(minInstances))
    return refuse(400, 'InvalidArgument', `minInstances must be a non-negative integer (got ${String(minInstances)})`);
  if (state.provisionConfigs.has(at.key))
    return refuse(400, 'ProvisionConfigExist', `${at.key} has a provision config: delete it before a scaling config`);
  const instances = typeof minInstances === 'number' ? minInstances : 0;
  const config: Resource = {
    ...req.body,
    functionArn: at.arn,
    currentInstances: instances,
    targetInstances: instances,
  };
  state.scalingConfigs.set(at.key, copy(config));
  return ok(config);
}

function putProvision(state: FcState, req: FcRequest): Answer {
  const found = target(state, req);
  if ('refusal' in found) return found.refusal;
  const at = found.value;
  // `target` is deprecated in favour of defaultTarget; FC takes either.
  const count = req.body.defaultTarget ?? req.body.target;
  if (!isCount(count, MAX_PROVISIONED))
    return refuse(400, 'InvalidArgument', `defaultTarget must be an integer in 0–${MAX_PROVISIONED}`);
  if (state.scalingConfigs.has(at.key))
    return refuse(400, 'ScalingConfigExists', `${at.key} has a scaling config: delete it before a provision config`);
  const config: Resource = { ...req.body, functionArn: at.arn, defaultTarget: count, target: count, current: count };
  state.provisionConfigs.set(at.key, copy(config));
  return ok(config);
}

function putConcurrency(state: FcState, req: FcRequest): Answer {
  const [name = ''] = req.params;
  const fn = state.functions.get(name);
  if (fn === undefined) return functionNotFound(name);
  const { reservedConcurrency } = req.body;
  if (!isCount(reservedConcurrency))
    return refuse(400, 'InvalidArgument', 'reservedConcurrency must be a non-negative integer');
  const config = { functionArn: fn.functionArn, reservedConcurrency };
  state.concurrencyConfigs.set(name, copy(config));
  return ok(config);
}

type Handler = RestRoute['handle'];

/** Get and Delete of one kind of setting, found by `key`: 404 `<Kind>NotFound` when there is none. */
function readAndDelete(
  kind: 'ScalingConfig' | 'ProvisionConfig' | 'ConcurrencyConfig',
  pick: (state: FcState) => Map<string, Resource>,
  key: (state: FcState, req: FcRequest) => Result<string>,
): { get: Handler; remove: Handler } {
  const find = (state: FcState, req: FcRequest): Result<{ key: string; config: Resource }> => {
    const at = key(state, req);
    if ('refusal' in at) return at;
    const config = pick(state).get(at.value);
    return config === undefined
      ? { refusal: refuse(404, `${kind}NotFound`, `${at.value} has no ${kind}`) }
      : { value: { key: at.value, config } };
  };
  return {
    get: (state, req) => {
      const found = find(state, req);
      return 'refusal' in found ? found.refusal : ok(found.value.config);
    },
    remove: (state, req) => {
      const found = find(state, req);
      if ('refusal' in found) return found.refusal;
      pick(state).delete(found.value.key);
      return noContent();
    },
  };
}

const qualifierKey = (state: FcState, req: FcRequest): Result<string> => {
  const found = target(state, req);
  return 'refusal' in found ? found : { value: found.value.key };
};
const functionKey = (state: FcState, req: FcRequest): Result<string> => {
  const [name = ''] = req.params;
  return state.functions.has(name) ? { value: name } : { refusal: functionNotFound(name) };
};

const scaling = readAndDelete('ScalingConfig', (s) => s.scalingConfigs, qualifierKey);
const provision = readAndDelete('ProvisionConfig', (s) => s.provisionConfigs, qualifierKey);
const concurrency = readAndDelete('ConcurrencyConfig', (s) => s.concurrencyConfigs, functionKey);

const SCALING = functionPath('/scaling-config');
const PROVISION = functionPath('/provision-config');
const CONCURRENCY = functionPath('/concurrency');

export const CAPACITY_ROUTES: RestRoute[] = [
  { method: 'PUT', pattern: SCALING, action: 'PutScalingConfig', handle: putScaling },
  { method: 'GET', pattern: SCALING, action: 'GetScalingConfig', handle: scaling.get },
  { method: 'DELETE', pattern: SCALING, action: 'DeleteScalingConfig', handle: scaling.remove },
  { method: 'PUT', pattern: PROVISION, action: 'PutProvisionConfig', handle: putProvision },
  { method: 'GET', pattern: PROVISION, action: 'GetProvisionConfig', handle: provision.get },
  { method: 'DELETE', pattern: PROVISION, action: 'DeleteProvisionConfig', handle: provision.remove },
  { method: 'PUT', pattern: CONCURRENCY, action: 'PutConcurrencyConfig', handle: putConcurrency },
  { method: 'GET', pattern: CONCURRENCY, action: 'GetConcurrencyConfig', handle: concurrency.get },
  { method: 'DELETE', pattern: CONCURRENCY, action: 'DeleteConcurrencyConfig', handle: concurrency.remove },
];
