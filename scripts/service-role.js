/**
 * FC writes a function's logs to SLS, and attaches it to a VPC, through the service-linked role
 * AliyunServiceRoleForFC, which an account has only once something made it (the console does on first use; fc3 does
 * before a deploy with logs or a VPC). --deploy checks it through Resource Manager and makes it when missing; when the
 * credentials may not, it stops before changing anything and says how to make it.
 */
'use strict';

const { DeployError } = require('./deploy-errors');

const SERVICE_NAME = 'fc.aliyuncs.com';
const ROLE_NAME = 'AliyunServiceRoleForFC';
const API_VERSION = '2020-03-31';

/** How to make the role by hand, for the refusal. */
const HOW_TO_CREATE =
  `make it once: open the FC console (https://fcnext.console.aliyun.com), which offers to create ${ROLE_NAME}, or ` +
  `run \`aliyun resourcemanager CreateServiceLinkedRole --ServiceName ${SERVICE_NAME}\` as a user allowed ` +
  'ram:CreateServiceLinkedRole; then re-run';

/**
 * Makes sure the role exists: one check, and a create when it is missing.
 * @param {{ call: <T>(what: string, fn: () => Promise<T>) => Promise<T>, rpc: import('./aliyun-rpc').RpcCall,
 *   step: (line: string) => void, why: string }} options `why`: what needs it (logs, the VPC)
 * @returns {Promise<'exists' | 'created'>}
 */
async function ensureServiceLinkedRole({ call, rpc, step, why }) {
  step(`Checking the service-linked role ${ROLE_NAME} (${why} need it)…`);
  const found = await call('CheckServiceLinkedRoleExistence', () =>
    rpc('CheckServiceLinkedRoleExistence', API_VERSION, { ServiceName: SERVICE_NAME }),
  ).catch((err) => {
    throw withHowTo(err);
  });
  if (found.Exists === true) return 'exists';
  step(`  ${ROLE_NAME} is missing; creating it…`);
  await call('CreateServiceLinkedRole', () =>
    rpc('CreateServiceLinkedRole', API_VERSION, { ServiceName: SERVICE_NAME }),
  ).catch((err) => {
    throw withHowTo(err);
  });
  return 'created';
}

/**
 * The DeployError of a failed check or create, its hint saying how to make the role by hand.
 * @param {unknown} err
 */
function withHowTo(err) {
  if (!(err instanceof DeployError)) return err;
  return new DeployError(`${err.message} (the service-linked role ${ROLE_NAME} could not be checked or made)`, {
    step: err.step,
    code: err.code,
    statusCode: err.statusCode,
    requestId: err.requestId,
    hint: `FC needs ${ROLE_NAME} to write logs and to reach a VPC: ${HOW_TO_CREATE}.`,
    cause: err,
  });
}

module.exports = { ensureServiceLinkedRole, ROLE_NAME, HOW_TO_CREATE };
