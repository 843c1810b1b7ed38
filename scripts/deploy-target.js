/**
 * --deploy's reads before anything is written or changed: the credentials, the function and the custom domain as FC
 * has them, a --domain-cert-id certificate; then everything the plan still lacks or would break is refused at once
 * (a token, an E2B key, a certificate, room in FC's 4 KB of variables, the rest of an OAuth configuration, logs, a
 * NAS mount it would drop, an isolation mode that breaks affinity).
 */
'use strict';

const { createRpcApi } = require('./aliyun-rpc');
const { UsageError } = require('./deploy-errors');
const { checkAgainstFunction } = require('./deploy-plan');
const { checkAgainstDomain } = require('./domain-plan');
const { createFcApi } = require('./fc-api');
const { resolveFcCredentials } = require('./fc-credentials');
const { createCaller, lookUpCustomDomain, lookUpFunction } = require('./fc-deploy');
const { ISOLATION_MODE, toLogPlacement } = require('./fc-function-config');
const { toVariables } = require('./function-variables');
const { checkOAuthVariables } = require('./oauth-settings');
const { optionalString } = require('./option-values');
const { readServiceCertificate } = require('./service-certificate');
const { checkStateAgainstFunction } = require('./state-plan');
const { checkVariablesSize } = require('./validate-plan');

const NO_LOGS = '--no-logs: FC keeps no logs of this function';

/** Stands in for a token still to generate (auth-tokens.js makes 64 hex digits): only its length is ever used. */
const TOKEN_TO_GENERATE = '-'.repeat(64);

/**
 * @typedef {object} Target
 * @property {import('./fc-api').FcApi} api
 * @property {import('./aliyun-rpc').RpcCall} resourceManager
 * @property {Record<string, any> | undefined} existing the function (undefined: it does not exist yet)
 * @property {Record<string, any> | undefined} existingDomain
 * @property {import('./domain-certificate').CertConfig | undefined} certConfig read from the certificate service
 * @property {boolean} tokensKept
 */

/**
 * The FC API and the RPC callers, with the credentials of the default chain (or --profile / --s-access).
 * @param {{ args: Record<string, unknown>, env: Record<string, string | undefined>, endpoint: { host: string,
 *   protocol: 'http' | 'https' }, log: (line: string) => void }} options
 */
async function connect({ args, env, endpoint, log }) {
  const credentials = await resolveFcCredentials({
    env,
    home: env.HOME,
    profile: optionalString(args.profile),
    sAccess: optionalString(args.sAccess),
  });
  log(`Credentials: ${credentials.source}.`);
  const keys = {
    accessKeyId: credentials.accessKeyId,
    accessKeySecret: credentials.accessKeySecret,
    securityToken: credentials.securityToken,
  };
  return {
    api: createFcApi({ ...endpoint, ...keys }),
    resourceManager: createRpcApi({
      endpoint: optionalString(args.resourceManagerEndpoint) ?? 'resourcemanager.aliyuncs.com',
      ...keys,
    }),
    cas: createRpcApi({ endpoint: optionalString(args.casEndpoint) ?? 'cas.aliyuncs.com', ...keys }),
  };
}

/**
 * @param {{ args: Record<string, unknown>, env: Record<string, string | undefined>, plan:
 *   import('./deploy-plan').DeploymentPlan, authChoice: import('./auth-tokens').AuthChoice, endpoint: { host: string,
 *   protocol: 'http' | 'https' }, log: (line: string) => void, warnings: string[] }} options
 * @returns {Promise<Target>}
 */
async function lookUpTarget({ args, env, plan, authChoice, endpoint, log, warnings }) {
  const { api, resourceManager, cas } = await connect({ args, env, endpoint, log });
  const existing = await lookUpFunction({ api, step: log, name: plan.name, region: plan.region });
  const existingDomain =
    plan.customDomain === undefined
      ? undefined
      : await lookUpCustomDomain({ api, step: log, domain: plan.customDomain });
  const certificate = plan.domainCertificate;
  const fromService =
    certificate !== undefined && 'certId' in certificate
      ? await readServiceCertificate({
          call: createCaller({ api, step: log }),
          rpc: cas,
          certId: certificate.certId,
          domain: /** @type {string} */ (plan.customDomain),
          step: log,
        })
      : undefined;
  if (fromService !== undefined) for (const warning of fromService.warnings) log(`warning: ${warning}`);
  const shell = shellValues(plan, authChoice, env);
  const { variables } = toVariables(plan, shell, existing);
  const refused = [
    ...checkAgainstFunction(plan, authChoice, shell, existing),
    ...checkAgainstDomain(plan, existingDomain),
    ...checkVariablesSize(variables),
    ...checkOAuthVariables(variables),
    ...checkStateAgainstFunction(plan, existing, variables),
    ...checkLogs(plan, existing),
    ...checkIsolation(plan, existing),
  ];
  if (refused.length > 0) throw new UsageError(refused);
  log(describeLogs(plan, existing));
  if (!plan.logs) warnings.push(NO_LOGS);
  return {
    api,
    resourceManager,
    existing,
    existingDomain,
    certConfig: fromService?.certConfig,
    tokensKept: variables.MCP_AUTH_TOKENS !== undefined,
  };
}

/**
 * A function deployed without a way to read what it did is refused: logs must be named, kept, or refused on purpose.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existing
 * @returns {string[]}
 */
function checkLogs(plan, existing) {
  if (toLogPlacement(plan, existing) !== undefined) return [];
  return [
    `function ${plan.name} ${existing === undefined ? 'is new' : 'keeps no logs'}, and FC would keep none: pass ` +
      '--sls-project P --sls-logstore L (an SLS project and logstore in the same region; s deploy with the ' +
      'generated s.yaml creates them), or --no-logs to deploy without logs on purpose',
  ];
}

/**
 * Instances shared by sessions is what MCP_STREAMABLE affinity fills (sessionConcurrencyPerInstance of them each); an
 * isolation mode set elsewhere that gives each session or request an instance of its own breaks that count, and this
 * deploy would silently replace it.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existing
 * @returns {string[]}
 */
function checkIsolation(plan, existing) {
  const mode = existing?.instanceIsolationMode;
  if (typeof mode !== 'string' || mode === '' || mode === ISOLATION_MODE) return [];
  return [
    `function ${plan.name} has instanceIsolationMode ${mode} (set outside this CLI): MCP_STREAMABLE affinity puts ` +
      `up to ${plan.sessionConcurrency} sessions on one shared instance (${ISOLATION_MODE}), which ${mode} breaks, ` +
      `and this deploy sets ${ISOLATION_MODE}: set it back to ${ISOLATION_MODE} in the FC console (function → ` +
      'Configuration → Instance isolation) if that is meant, then re-run',
  ];
}

/**
 * Where the function's logs will go.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existing
 */
function describeLogs(plan, existing) {
  if (plan.logConfig !== undefined)
    return `Logs: SLS project ${plan.logConfig.project}, logstore ${plan.logConfig.logstore}.`;
  if (!plan.logs) return `warning: ${NO_LOGS}`;
  const current = existing?.logConfig;
  return `Logs: kept (SLS project ${current?.project}, logstore ${current?.logstore}).`;
}

/**
 * The values of the plan's shell variables given now: the tokens as resolved (or a stand-in for one a dry run would
 * generate), the rest from the environment, trimmed; empty means not given.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {import('./auth-tokens').AuthChoice} authChoice
 * @param {Record<string, string | undefined>} env
 * @returns {Record<string, string | undefined>}
 */
function shellValues(plan, authChoice, env) {
  /** @type {Record<string, string | undefined>} */
  const values = {};
  for (const { name } of plan.fromShell) values[name] = env[name]?.trim() || undefined;
  if (plan.auth === 'bearer') {
    values.MCP_AUTH_TOKENS =
      authChoice.tokens.join(',') || (authChoice.source === 'generated' ? TOKEN_TO_GENERATE : undefined);
  }
  return values;
}

module.exports = { connect, lookUpTarget, shellValues };
