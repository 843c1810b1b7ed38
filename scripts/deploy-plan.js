/**
 * Parsed options + environment → one validated DeploymentPlan, the single source for config.yaml, s.yaml and the FC
 * API calls. Reports every problem at once (exit 2) and the warnings worth reading.
 */
'use strict';

const { resolveAuth } = require('./auth-tokens');
const { FUNCTION_TIMEOUT_MARGIN_S, INSTANCE_CONCURRENCY, RUNTIMES, TOOL_TIMEOUT_MAX_S, TRIGGER_NAME, DISK_MB } = require('./fc-limits');
const { validatePlan } = require('./validate-plan');

/** A variable name FC takes: a letter, then letters, digits and _. */
const VARIABLE_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;

/** Variables the CLI sets itself; --env may not override them. */
const MANAGED_NAMES = new Set([
  'MCP_AUTH',
  'MCP_AUTH_TOKENS',
  'MCP_AUTH_TOKEN_FILE',
  'MCP_SESSION_SECRET',
  'MCP_SESSION_IDLE_TTL_S',
  'MCP_SESSION_MAX_AGE_S',
  'MCP_MAX_SESSIONS',
  'MCP_FUNCTION_TIMEOUT_S',
  'MCP_TOOL_TIMEOUT_MAX_S',
  'E2B_API_KEY',
  'E2B_DOMAIN',
  'E2B_API_URL',
  'E2B_TEMPLATE',
  'LOG_LEVEL',
  'PORT',
  'HOST',
]);

/**
 * @typedef {object} SecretVariable
 * @property {string} name environment variable of the function and of the operator's shell
 * @property {boolean} required whether `s deploy` must find it set (`${env(NAME)}`) or may leave it empty
 */

/**
 * @typedef {object} DeploymentPlan
 * @property {string} name
 * @property {string} region
 * @property {string} runtime
 * @property {string | undefined} nodePath
 * @property {number} memoryMb
 * @property {number} cpu
 * @property {number} diskMb
 * @property {number} timeoutS
 * @property {number} toolTimeoutMaxS
 * @property {number} instanceConcurrency
 * @property {boolean} sessionAffinity
 * @property {number} sessionConcurrency
 * @property {number} sessionIdleTtlS
 * @property {number} sessionTtlS
 * @property {string} triggerName
 * @property {string[]} triggerMethods
 * @property {string | undefined} customDomain
 * @property {'bearer' | 'none'} auth
 * @property {{ domain?: string, apiUrl?: string, template?: string }} e2b
 * @property {Record<string, string>} environment the function's non-secret variables, with values
 * @property {SecretVariable[]} secrets the function's secret variables: names only; values come from the environment
 * @property {string[]} unset variables of an existing function to remove on update (--unset)
 */

/**
 * @typedef {object} PlanResult
 * @property {DeploymentPlan} plan
 * @property {import('./auth-tokens').AuthChoice} authChoice
 * @property {string[]} problems
 * @property {string[]} warnings
 */

/**
 * Builds and validates the plan.
 * @param {Record<string, unknown>} args parsed options (camelCase keys from yargs)
 * @param {Record<string, string | undefined>} env the operator's environment (read for secrets' presence and sizes)
 * @returns {PlanResult}
 */
function createPlan(args, env) {
  const problems = [];
  const warnings = [];
  const runtime = String(args.runtime);
  const timeoutS = Number(args.timeout);
  const toolTimeoutMaxS = args.toolTimeoutMax === undefined ? Math.min(TOOL_TIMEOUT_MAX_S, timeoutS - FUNCTION_TIMEOUT_MARGIN_S) : Number(args.toolTimeoutMax);
  const sessionConcurrency = Number(args.sessionConcurrency);
  const sessionIdleTtlS = Number(args.sessionIdleTtl);
  const sessionTtlS = Number(args.sessionTtl);
  const e2b = {
    domain: optionalString(args.e2bDomain),
    apiUrl: optionalString(args.e2bApiUrl),
    template: optionalString(args.template),
  };

  const auth = resolveAuth(
    { auth: args.auth !== false, generateToken: args.generateToken === true, authTokenFile: optionalString(args.authTokenFile), outputDir: String(args.outputDir) },
    env,
  );
  problems.push(...auth.problems);
  warnings.push(...auth.warnings);

  /** @type {Record<string, string>} */
  const environment = {
    MCP_FUNCTION_TIMEOUT_S: String(timeoutS),
    MCP_TOOL_TIMEOUT_MAX_S: String(toolTimeoutMaxS),
    MCP_SESSION_IDLE_TTL_S: String(sessionIdleTtlS),
    MCP_SESSION_MAX_AGE_S: String(sessionTtlS),
    MCP_MAX_SESSIONS: String(sessionConcurrency),
    LOG_LEVEL: String(args.logLevel),
  };
  if (auth.choice.mode === 'none') environment.MCP_AUTH = 'none';
  if (e2b.template !== undefined) environment.E2B_TEMPLATE = e2b.template;
  if (e2b.domain !== undefined) environment.E2B_DOMAIN = e2b.domain;
  if (e2b.apiUrl !== undefined) environment.E2B_API_URL = e2b.apiUrl;
  for (const entry of /** @type {string[]} */ (args.env ?? [])) {
    const at = entry.indexOf('=');
    const name = entry.slice(0, at);
    if (at === -1 || !VARIABLE_NAME.test(name)) {
      problems.push(`--env "${entry.split('=')[0]}" must be NAME=VALUE with a NAME of letters, digits and _ that starts with a letter`);
    } else if (MANAGED_NAMES.has(name)) {
      problems.push(`--env ${name} is set by this CLI; use its own option (see --help) instead`);
    } else {
      environment[name] = entry.slice(at + 1);
    }
  }

  const unset = [...new Set(/** @type {string[]} */ (args.unset ?? []))];
  for (const name of unset) {
    if (!VARIABLE_NAME.test(name)) problems.push(`--unset "${name}" must be a variable name (letters, digits and _, starting with a letter)`);
    else if (Object.hasOwn(environment, name)) problems.push(`--unset ${name} conflicts with this deploy, which sets it`);
  }

  /** @type {SecretVariable[]} */
  const secrets = [
    ...(auth.choice.mode === 'bearer' ? [{ name: 'MCP_AUTH_TOKENS', required: true }] : []),
    { name: 'MCP_SESSION_SECRET', required: true },
    { name: 'E2B_API_KEY', required: false },
  ];

  /** @type {DeploymentPlan} */
  const plan = {
    name: String(args.name),
    region: String(args.region),
    runtime,
    nodePath: optionalString(args.nodePath) ?? (Object.hasOwn(RUNTIMES, runtime) ? RUNTIMES[/** @type {keyof typeof RUNTIMES} */ (runtime)].nodePath : undefined),
    memoryMb: Number(args.memory),
    cpu: Number(args.cpu),
    diskMb: DISK_MB,
    timeoutS,
    toolTimeoutMaxS,
    instanceConcurrency: INSTANCE_CONCURRENCY,
    sessionAffinity: args.enableSessionAffinity !== false,
    sessionConcurrency,
    sessionIdleTtlS,
    sessionTtlS,
    triggerName: TRIGGER_NAME,
    triggerMethods: [...new Set(/** @type {string[]} */ (args.triggerMethods))],
    customDomain: optionalString(args.customDomain),
    auth: auth.choice.mode,
    e2b,
    environment,
    secrets,
    unset,
  };

  const tokensBytes = auth.choice.source === 'generated' ? 64 : auth.choice.tokens.join(',').length;
  const secretSizes = {
    MCP_AUTH_TOKENS: tokensBytes,
    MCP_SESSION_SECRET: Buffer.byteLength(env.MCP_SESSION_SECRET ?? '') || 43,
    E2B_API_KEY: Buffer.byteLength(env.E2B_API_KEY ?? ''),
  };
  problems.push(...validatePlan(plan, { secretSizes }));

  if (auth.choice.source === 'missing') {
    if (args.deploy === true) {
      problems.push('refusing to deploy without an auth token: pass --generate-token or --auth-token-file FILE, set MCP_AUTH_TOKENS, or pass --no-auth to deploy an open server on purpose');
    } else {
      warnings.push('no auth token yet: s.yaml reads MCP_AUTH_TOKENS from the environment at `s deploy` and fails without it; set it, or re-run with --generate-token');
    }
  }
  if (args.deploy === true) problems.push(...checkDeployAccess(args, env));
  const accountId = optionalString(args.accountId);
  if (accountId !== undefined && !/^\d{6,20}$/.test(accountId)) problems.push(`--account-id "${accountId}" must be your numeric Alibaba Cloud account id`);

  const sessionSecret = env.MCP_SESSION_SECRET ?? '';
  if (sessionSecret !== '' && Buffer.byteLength(sessionSecret) < 32) problems.push('MCP_SESSION_SECRET must be at least 32 bytes (openssl rand -base64 32); it is not shown here');
  if ((env.E2B_API_KEY ?? '').trim() === '') {
    warnings.push(
      'E2B_API_KEY is not set: the function would fall back to the local sandbox backend, i.e. plain processes inside the FC instance (not isolated, files lost when FC reclaims it); export E2B_API_KEY before deploying',
    );
  }
  if (plan.customDomain !== undefined) {
    warnings.push(`--custom-domain ${plan.customDomain} is routed over HTTP; add an HTTPS certificate to it in the FC console before clients send tokens to it`);
  }
  return { plan, authChoice: auth.choice, problems, warnings };
}

/**
 * Credentials and endpoint for --deploy (a dry run needs no credentials).
 * @param {Record<string, unknown>} args
 * @param {Record<string, string | undefined>} env
 */
function checkDeployAccess(args, env) {
  const problems = [];
  if (args.dryRun !== true && (!env.ALIBABA_CLOUD_ACCESS_KEY_ID || !env.ALIBABA_CLOUD_ACCESS_KEY_SECRET)) {
    problems.push('--deploy needs credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (and ALIBABA_CLOUD_SECURITY_TOKEN for an STS token)');
  }
  const endpoint = optionalString(args.endpoint);
  if (endpoint !== undefined && !/^(https?:\/\/)?[A-Za-z0-9.-]+(:\d{1,5})?\/?$/.test(endpoint)) {
    problems.push(`--endpoint "${endpoint}" must be a host such as 123456789.cn-hangzhou.fc.aliyuncs.com, or http(s)://host:port`);
  }
  return problems;
}

/** @param {unknown} value */
function optionalString(value) {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

module.exports = { createPlan };
