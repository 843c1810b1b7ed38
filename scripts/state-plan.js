/**
 * Shared state on FC: the NAS file system every instance mounts, the VPC it is reached through, and E2B_STATE_DIR,
 * which must lie under that mount (a directory on an instance's own disk is seen by no other instance and lost with
 * it). Both deploy paths mount the same thing: --deploy sends nasConfig and vpcConfig, s.yaml states them (or `auto`,
 * which fc3 resolves to the function's current ones, or creates).
 */
'use strict';

const { posix } = require('node:path');

const { optionalString } = require('./option-values');

/** FC mounts file systems only at a directory of its own under one of these (the runtime owns the rest). */
const MOUNT_ROOTS = Object.freeze(['/mnt/', '/home/', '/data/']);
/** A NAS mount target and the directory in it: `<id>.<region>.nas.aliyuncs.com:/path`. */
const SERVER_ADDR = /^[A-Za-z0-9.-]+\.nas\.aliyuncs\.com:\/[^\s]*$/;
const VPC_ID = /^vpc-[a-z0-9]+$/;
const VSWITCH_ID = /^vsw-[a-z0-9]+$/;
const SECURITY_GROUP_ID = /^sg-[a-z0-9]+$/;

/**
 * @typedef {{ mode: 'none' } | { mode: 'auto', mountDir: string } | { mode: 'mount', serverAddr: string,
 *   mountDir: string }} NasPlan
 * @typedef {{ vpcId: string, vSwitchIds: string[], securityGroupId: string }} VpcPlan
 * @typedef {object} StatePlan
 * @property {NasPlan} nas
 * @property {boolean} nasGiven whether --nas was given (without it, --deploy refuses to remove a mount it finds)
 * @property {VpcPlan | undefined} vpc the VPC of a `mount` NAS
 * @property {string | undefined} stateDir E2B_STATE_DIR as this deploy sets it
 */

/**
 * The NAS, the VPC and E2B_STATE_DIR of a deploy. --env E2B_STATE_DIR must lie under the mount; with a mount and no
 * such --env, E2B_STATE_DIR is the mount directory itself.
 * @param {Record<string, unknown>} args
 * @param {Record<string, string>} environment the variables the deploy sets (E2B_STATE_DIR is added here)
 * @param {'e2b' | 'local'} sandbox
 * @param {string[]} problems
 * @returns {StatePlan}
 */
function planState(args, environment, sandbox, problems) {
  const given = optionalString(args.nas);
  const mountDir = posix.normalize(optionalString(args.nasMountDir) ?? '/mnt/state').replace(/\/$/, '');
  const vpc = {
    vpcId: optionalString(args.vpcId),
    vSwitchIds: [...new Set(/** @type {string[]} */ (args.vswitchId ?? []).map((v) => String(v).trim()))].filter(
      (v) => v !== '',
    ),
    securityGroupId: optionalString(args.securityGroupId),
  };
  const vpcGiven = vpc.vpcId !== undefined || vpc.vSwitchIds.length > 0 || vpc.securityGroupId !== undefined;

  /** @type {NasPlan} */
  let nas = { mode: 'none' };
  if (given === undefined || given === 'none') {
    if (vpcGiven) problems.push('--vpc-id, --vswitch-id and --security-group-id go with --nas SERVER:/PATH');
  } else if (given === 'auto') {
    if (vpcGiven)
      problems.push(
        "--nas auto makes its own VPC (s deploy) or keeps the function's: drop --vpc-id, --vswitch-id and " +
          '--security-group-id',
      );
    nas = { mode: 'auto', mountDir };
  } else if (!SERVER_ADDR.test(given)) {
    problems.push(
      `--nas "${given}" is not auto, none or a NAS mount target with its directory, such as ` +
        '0a1b2c3d4e-abc12.cn-hangzhou.nas.aliyuncs.com:/sandbox-mcp',
    );
  } else {
    nas = { mode: 'mount', serverAddr: given, mountDir };
    problems.push(...checkVpc(vpc));
  }
  if (nas.mode !== 'none' && !isMountDir(mountDir)) {
    problems.push(
      `--nas-mount-dir ${mountDir} must be an absolute directory under ${MOUNT_ROOTS.join(', ')} (FC mounts nothing ` +
        'elsewhere)',
    );
  }

  const fromEnv = environment.E2B_STATE_DIR;
  if (nas.mode !== 'none' && sandbox !== 'e2b')
    problems.push('--nas holds E2B_STATE_DIR, which only the E2B backend uses: drop it with --sandbox-backend local');
  if (fromEnv !== undefined && nas.mode === 'none') {
    problems.push(
      `--env E2B_STATE_DIR=${fromEnv} is not on storage the instances share: pass --nas (a mount target, or auto) ` +
        'and leave E2B_STATE_DIR to it, or put it under --nas-mount-dir',
    );
  } else if (fromEnv !== undefined && !isUnder(fromEnv, mountDir)) {
    problems.push(`--env E2B_STATE_DIR=${fromEnv} is not under the NAS mount ${mountDir}: every instance must see it`);
  }
  const stateDir = nas.mode === 'none' ? fromEnv : (fromEnv ?? mountDir);
  if (stateDir !== undefined && sandbox === 'e2b') environment.E2B_STATE_DIR = stateDir;
  return {
    nas,
    nasGiven: given !== undefined,
    vpc: nas.mode === 'mount' ? /** @type {VpcPlan} */ (vpc) : undefined,
    stateDir,
  };
}

/**
 * @param {{ vpcId?: string, vSwitchIds: string[], securityGroupId?: string }} vpc
 * @returns {string[]}
 */
function checkVpc(vpc) {
  const problems = [];
  if (vpc.vpcId === undefined || vpc.vSwitchIds.length === 0 || vpc.securityGroupId === undefined) {
    problems.push(
      '--nas SERVER:/PATH needs the VPC its mount target is in: --vpc-id, --vswitch-id (one or more, in zones FC ' +
        'serves) and --security-group-id',
    );
  }
  if (vpc.vpcId !== undefined && !VPC_ID.test(vpc.vpcId)) problems.push(`--vpc-id "${vpc.vpcId}" is not a VPC id`);
  for (const id of vpc.vSwitchIds) if (!VSWITCH_ID.test(id)) problems.push(`--vswitch-id "${id}" is not a vSwitch id`);
  if (vpc.securityGroupId !== undefined && !SECURITY_GROUP_ID.test(vpc.securityGroupId))
    problems.push(`--security-group-id "${vpc.securityGroupId}" is not a security group id`);
  return problems;
}

/** @param {string} dir */
function isMountDir(dir) {
  return posix.isAbsolute(dir) && MOUNT_ROOTS.some((root) => dir.startsWith(root) && dir.length > root.length);
}

/**
 * Whether `path` is `dir` or lies beneath it.
 * @param {string} path
 * @param {string} dir
 */
function isUnder(path, dir) {
  const normal = posix.normalize(path).replace(/\/$/, '');
  return posix.isAbsolute(normal) && (normal === dir || normal.startsWith(`${dir}/`));
}

/**
 * The mount points of a function as FC returns them (none when it has no NAS).
 * @param {Record<string, any> | undefined} fn
 * @returns {Array<{ serverAddr: string, mountDir: string }>}
 */
function mountsOf(fn) {
  const points = fn?.nasConfig?.mountPoints;
  return Array.isArray(points) ? points.filter((p) => typeof p?.serverAddr === 'string' && p.serverAddr !== '') : [];
}

/**
 * What --deploy refuses once it has read the function: a NAS mount this deploy would remove without --nas none, `auto`
 * with no mount to keep (only fc3 creates one), and an E2B_STATE_DIR kept from the function that is not under the
 * mount this deploy leaves.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existing
 * @param {Record<string, string>} variables the whole environment the deploy would send
 * @returns {string[]}
 */
function checkStateAgainstFunction(plan, existing, variables) {
  const problems = [];
  const mounts = mountsOf(existing);
  const { nas } = plan.state;
  if (nas.mode === 'none' && mounts.length > 0 && !plan.state.nasGiven) {
    problems.push(
      `function ${plan.name} mounts ${mounts.map((m) => `${m.serverAddr} at ${m.mountDir}`).join(', ')}, which ` +
        `this deploy would remove: pass --nas ${mounts[0]?.serverAddr} with --nas-mount-dir, --vpc-id, ` +
        '--vswitch-id and --security-group-id to keep it (or --nas auto), or --nas none to remove it on purpose',
    );
  }
  if (nas.mode === 'auto' && !mounts.some((m) => m.mountDir === nas.mountDir)) {
    problems.push(
      mounts.length === 0
        ? `--nas auto: function ${plan.name} has no NAS to keep, and --deploy does not create one: run s deploy ` +
            'with the generated s.yaml once (fc3 creates the file system, its mount target and a VPC), or pass ' +
            '--nas SERVER:/PATH with --vpc-id, --vswitch-id and --security-group-id'
        : `--nas auto: function ${plan.name} mounts its NAS at ${mounts.map((m) => m.mountDir).join(', ')}, not ` +
            `at ${nas.mountDir}: pass --nas-mount-dir ${mounts[0]?.mountDir}`,
    );
  }
  const stateDir = variables.E2B_STATE_DIR;
  const mountDir = nas.mode === 'none' ? undefined : nas.mountDir;
  if (stateDir !== undefined && plan.sandbox === 'e2b' && (mountDir === undefined || !isUnder(stateDir, mountDir))) {
    problems.push(
      `function ${plan.name} has E2B_STATE_DIR=${stateDir}, which this deploy leaves on no shared mount: pass --nas ` +
        '(a mount target, or auto), or --unset E2B_STATE_DIR',
    );
  }
  return problems;
}

module.exports = { planState, checkStateAgainstFunction, mountsOf, isUnder, MOUNT_ROOTS };
