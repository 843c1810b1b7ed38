/**
 * What `s deploy` sends as the function's UpdateFunction body, from the fc3 props `s preview` rendered and the
 * function as FC has it. `s preview` does not load fc3, so this restates the steps of fc3's function deploy that
 * shape the request (https://github.com/devsapp/fc3, src/subCommands/deploy/impl/function.ts and
 * src/resources/fc/impl/replace-function-config.ts):
 *
 * 1. the props that are not the function's are dropped (region, triggers, scaling, concurrency, …);
 * 2. `auto` NAS, VPC and logs take the function's current ones when it has them; an unset role becomes '';
 * 3. every field still missing gets fc3's empty default (FC_RESOURCES_EMPTY_CONFIG in src/default/config.ts),
 *    a shallow fill: a field the props state is sent as stated;
 * 4. an object sessionAffinityConfig is sent as JSON text, customRuntimeConfig gets empty command/args defaults;
 * 5. the body is the FC SDK's UpdateFunctionInput of that, the same model the deploy CLI sends (scripts/fc-api.js).
 *
 * `auto` that the function cannot resolve (a new function) would make fc3 create SLS, VPC or NAS resources: that is
 * refused here, since no request body can be said for it.
 */
import { UpdateFunctionInput } from '@alicloud/fc20230330';

import type { Fc3Props } from './fc3-rules';

/** Props that are not the function's: fc3 deploys them with their own calls. */
const NOT_THE_FUNCTION = [
  'region',
  'triggers',
  'asyncInvokeConfig',
  'vpcBinding',
  'customDomain',
  'provisionConfig',
  'scalingConfig',
  'concurrencyConfig',
  'endpoint',
] as const;

/** fc3's FC_RESOURCES_EMPTY_CONFIG: what a field the s.yaml leaves out is reset to. */
const EMPTY_CONFIG: Record<string, unknown> = {
  vpcConfig: { securityGroupId: '', vSwitchIds: [], vpcId: '' },
  tracingConfig: {},
  ossMountConfig: { mountPoints: [] },
  nasConfig: { groupId: 0, userId: 0, mountPoints: [] },
  logConfig: {
    enableInstanceMetrics: false,
    enableRequestMetrics: false,
    logBeginRule: 'None',
    logstore: '',
    project: '',
  },
  environmentVariables: {},
  layers: [],
  instanceIsolationMode: 'SHARE',
  sessionAffinity: 'NONE',
};

/** fc3's isAuto: `auto`, or `auto|key=value|…`, in any case. */
function isAuto(value: unknown): boolean {
  return typeof value === 'string' && value.split('|')[0]?.toUpperCase() === 'AUTO';
}

function hasMounts(config: unknown): boolean {
  const mounts = (config as { mountPoints?: unknown[] } | undefined)?.mountPoints;
  return Array.isArray(mounts) && mounts.length > 0;
}

/**
 * The UpdateFunction body `s deploy` would send for `props` onto the function `remote` (its GetFunction answer).
 * @throws when an `auto` field has nothing on the function to resolve to
 */
export function fc3UpdateFunctionBody(props: Fc3Props, remote: Record<string, unknown>): Record<string, unknown> {
  const local: Record<string, unknown> = structuredClone(props) as unknown as Record<string, unknown>;
  for (const name of NOT_THE_FUNCTION) delete local[name];

  const nasAuto = isAuto(local.nasConfig);
  const vpcAuto = isAuto(local.vpcConfig) || (local.vpcConfig === undefined && nasAuto);
  if (nasAuto && hasMounts(remote.nasConfig)) local.nasConfig = remote.nasConfig;
  const remoteVpcId = (remote.vpcConfig as { vpcId?: string } | undefined)?.vpcId;
  if (vpcAuto && typeof local.vpcConfig === 'string' && remoteVpcId) local.vpcConfig = remote.vpcConfig;
  const remoteProject = (remote.logConfig as { project?: string } | undefined)?.project;
  if (isAuto(local.logConfig) && remoteProject) local.logConfig = remote.logConfig;
  // An unset role stays '' unless OSS is mounted, where fc3 keeps the function's (or makes one).
  if (!local.role) local.role = local.role === undefined && hasMounts(local.ossMountConfig) ? remote.role : '';
  for (const name of ['nasConfig', 'vpcConfig', 'logConfig', 'ossMountConfig'])
    if (isAuto(local[name])) throw new Error(`${name} is auto and the function has none: fc3 would create one`);
  if (local.handler === undefined) local.handler = remote.handler ?? 'handler';

  for (const [name, empty] of Object.entries(EMPTY_CONFIG))
    if (local[name] === undefined) local[name] = structuredClone(empty);
  if (typeof local.sessionAffinityConfig === 'object' && local.sessionAffinityConfig !== null)
    local.sessionAffinityConfig = JSON.stringify(local.sessionAffinityConfig);
  const runtimeConfig = local.customRuntimeConfig as Record<string, unknown> | undefined;
  if (runtimeConfig !== undefined) {
    runtimeConfig.command ??= [];
    runtimeConfig.args ??= [];
  }
  return wireBody(local);
}

/** The JSON a deploy puts on the wire for an UpdateFunction of `config`: the SDK model's map, without nulls. */
export function wireBody(config: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(new UpdateFunctionInput(config).toMap())) as Record<string, unknown>;
}
