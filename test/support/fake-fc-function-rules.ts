/**
 * What the fake FC API refuses in a function's configuration, as FC would: a NAS mount outside a VPC or at a
 * directory FC does not mount at, a half-given VPC, an unknown isolation mode, and a VPC or log delivery with neither
 * a role nor the service-linked role to act through. The empty forms fc3 sends for "none" ({mountPoints: []},
 * {vpcId: '', vSwitchIds: [], securityGroupId: ''}, a logConfig with an empty project) pass.
 */
import { posix } from 'node:path';

import { type Answer, type FcState, isObject, refuse } from './fake-fc-state';

/** The SDK leaves the values undocumented; FC documents no isolation, request isolation and session isolation. */
const ISOLATION_MODES = ['SHARE', 'REQUEST_EXCLUSIVE', 'SESSION_EXCLUSIVE'];
/** "A function supports at most 5 NAS mount points" (FC's NAS page). */
const MAX_NAS_MOUNTS = 5;
/**
 * The fake's rule for a mount directory: a directory of its own under one of the roots FC 3.0 names for it ("use a
 * subdirectory of /home, /mnt, /tmp or /data"; system directories such as /bin, /opt, /var, /dev fail to mount, and
 * /code holds the function's code).
 */
const MOUNT_ROOTS = ['/home', '/mnt', '/tmp', '/data'];
/** `<mount target host>:/<directory>`, as NASMountConfig.serverAddr (`***-uni85.cn-hangzhou.nas.com:/`). */
const SERVER_ADDR = /^[A-Za-z0-9.-]+:\/\S*$/;
export const SERVICE_LINKED_ROLE = 'AliyunServiceRoleForFC';

const invalid = (message: string): Answer => refuse(400, 'InvalidArgument', message);
const filled = (value: unknown): boolean => (typeof value === 'string' ? value !== '' : value !== undefined);

/** Whether the function is in a VPC; a refusal when the VPC is half given. */
function vpcOf(config: Record<string, unknown>): boolean | Answer {
  const vpc = config.vpcConfig;
  if (vpc === undefined || vpc === null) return false;
  if (!isObject(vpc)) return invalid('vpcConfig must be an object');
  const switches = vpc.vSwitchIds ?? [];
  if (!Array.isArray(switches)) return invalid('vpcConfig.vSwitchIds must be an array');
  const given = [filled(vpc.vpcId), switches.length > 0, filled(vpc.securityGroupId)];
  if (given.every((g) => !g)) return false;
  return given.every((g) => g) ? true : invalid('vpcConfig needs vpcId, vSwitchIds and securityGroupId together');
}

/** `dir` without a trailing slash ("/" stays). */
const trimmed = (dir: string): string => (dir.length > 1 ? dir.replace(/\/+$/, '') : dir);

function checkMountDir(dir: unknown, taken: string[]): string | undefined {
  const path = typeof dir === 'string' ? trimmed(dir) : '';
  if (!path.startsWith('/') || posix.normalize(path) !== path)
    return `mountDir ${JSON.stringify(dir)} must be a normalised absolute path`;
  if (!MOUNT_ROOTS.some((root) => path.startsWith(`${root}/`)))
    return `mountDir ${path} must be a directory under ${MOUNT_ROOTS.join(', ')}`;
  if (taken.some((other) => other === path || other.startsWith(`${path}/`) || path.startsWith(`${other}/`)))
    return `mountDir ${path} overlaps another mount point`;
  return undefined;
}

function checkNas(config: Record<string, unknown>, inVpc: boolean): Answer | undefined {
  const nas = config.nasConfig;
  if (nas === undefined || nas === null) return undefined;
  if (!isObject(nas)) return invalid('nasConfig must be an object');
  const mounts = nas.mountPoints ?? [];
  if (!Array.isArray(mounts)) return invalid('nasConfig.mountPoints must be an array');
  if (mounts.length === 0) return undefined;
  if (!inVpc)
    return invalid('nasConfig needs a vpcConfig with vpcId, vSwitchIds and securityGroupId: FC mounts NAS in a VPC');
  if (mounts.length > MAX_NAS_MOUNTS) return invalid(`nasConfig has ${mounts.length} mount points, over 5`);
  const taken: string[] = [];
  for (const mount of mounts) {
    if (!isObject(mount)) return invalid('each nasConfig mount point must be an object');
    if (typeof mount.serverAddr !== 'string' || !SERVER_ADDR.test(mount.serverAddr))
      return invalid(`serverAddr ${JSON.stringify(mount.serverAddr)} is not <mount target>:/<directory>`);
    const problem = checkMountDir(mount.mountDir, taken);
    if (problem !== undefined) return invalid(problem);
    taken.push(trimmed(String(mount.mountDir)));
  }
  return undefined;
}

/**
 * Undefined when FC would take the configuration. A function reaches its VPC and delivers its logs as its role, or
 * without one as FC's service-linked role: the fake's model of why fc3 creates AliyunServiceRoleForFC (when the
 * function has no role) before deploying a VPC or logs.
 */
export function checkFunctionConfig(state: FcState, config: Record<string, unknown>): Answer | undefined {
  const mode = config.instanceIsolationMode;
  if (mode !== undefined && !ISOLATION_MODES.includes(String(mode)))
    return invalid(`instanceIsolationMode must be one of ${ISOLATION_MODES.join(', ')} (got "${String(mode)}")`);
  const inVpc = vpcOf(config);
  if (typeof inVpc !== 'boolean') return inVpc;
  const nasProblem = checkNas(config, inVpc);
  if (nasProblem !== undefined) return nasProblem;
  const logs = isObject(config.logConfig) && filled(config.logConfig.project);
  if ((inVpc || logs) && !filled(config.role) && !state.serviceLinkedRole) {
    const arn = `acs:ram::${state.accountId}:role/${SERVICE_LINKED_ROLE.toLowerCase()}`;
    return refuse(
      400,
      'EntityNotExist.Role',
      `the function has ${inVpc ? 'a VPC' : 'log delivery'} and no role, and the service-linked role ` +
        `${SERVICE_LINKED_ROLE} (${arn}) does not exist: create it (Resource Manager CreateServiceLinkedRole, ` +
        'ServiceName fc.aliyuncs.com) or give the function a role',
    );
  }
  return undefined;
}
