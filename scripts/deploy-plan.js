/**
 * Parsed options + environment → one validated DeploymentPlan, the single source for config.yaml, s.yaml and the FC
 * API calls. Reports every problem at once (exit 2) and the warnings worth reading.
 */
'use strict';

const { resolveAuth } = require('./auth-tokens');
const { planDomain } = require('./domain-plan');
const {
  FUNCTION_TIMEOUT_MARGIN_S,
  INSTANCE_CONCURRENCY,
  runtimeOf,
  TOOL_TIMEOUT_MAX_S,
  TRIGGER_NAME,
  DISK_MB,
} = require('./fc-limits');
const { checkOAuthVariables, OAUTH_VARIABLES, planOAuth } = require('./oauth-settings');
const { optionalString } = require('./option-values');
const { planState } = require('./state-plan');
const { validatePlan } = require('./validate-plan');

/** A variable name FC takes: a letter, then letters, digits and _. */
const VARIABLE_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;

/**
 * OpenTelemetry's settings (docs/observability.md), taken from the deploying shell when set there, like the E2B key:
 * endpoints and headers are secrets (an endpoint of Alibaba Cloud's Managed Service for OpenTelemetry carries its
 * token in its path), so they never enter s.yaml or the output. The server checks their values at start-up.
 * [name, secret]
 * @type {ReadonlyArray<[string, boolean]>}
 */
const TELEMETRY_FROM_SHELL = Object.freeze([
  ['OTEL_EXPORTER_OTLP_ENDPOINT', true],
  ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', true],
  ['OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', true],
  ['OTEL_EXPORTER_OTLP_HEADERS', true],
  ['OTEL_EXPORTER_OTLP_TRACES_HEADERS', true],
  ['OTEL_EXPORTER_OTLP_METRICS_HEADERS', true],
  ['OTEL_EXPORTER_OTLP_PROTOCOL', false],
  ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', false],
  ['OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', false],
  ['OTEL_EXPORTER_OTLP_COMPRESSION', false],
  ['OTEL_EXPORTER_OTLP_TIMEOUT', false],
  ['OTEL_TRACES_EXPORTER', false],
  ['OTEL_METRICS_EXPORTER', false],
  ['OTEL_SERVICE_NAME', false],
  ['OTEL_RESOURCE_ATTRIBUTES', false],
  ['OTEL_TRACES_SAMPLER', false],
  ['OTEL_TRACES_SAMPLER_ARG', false],
  ['OTEL_BSP_SCHEDULE_DELAY', false],
  ['OTEL_METRIC_EXPORT_INTERVAL', false],
  ['OTEL_SDK_DISABLED', false],
  ['MCP_TELEMETRY_COMMAND_TEXT', false],
]);

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
  ...OAUTH_VARIABLES,
  'SANDBOX_BACKEND',
  'LOG_LEVEL',
  'PORT',
  'HOST',
  ...TELEMETRY_FROM_SHELL.map(([name]) => name),
]);

/**
 * A variable of the function whose value comes from the operator's shell (or a token file), never from a file this
 * CLI writes: secrets, and E2B settings not given as options.
 * @typedef {object} ShellVariable
 * @property {string} name environment variable of the function and of the operator's shell
 * @property {boolean} required whether `s deploy` must find it set (`${env(NAME)}`) or may leave it empty
 * @property {boolean} secret whether its value is a secret (masked wherever it is shown)
 */

/**
 * What `--sandbox-backend local` means on FC, printed whenever it is chosen: FC's runtime image has no bubblewrap,
 * so the local backend runs with LOCAL_SANDBOX_ISOLATION=none there (docs/security.md, "Isolation modes").
 */
const LOCAL_ON_FC =
  '--sandbox-backend local: sandboxes are processes inside the FC instance (LOCAL_SANDBOX_ISOLATION=none; FC has ' +
  'no bubblewrap). ' +
  'What holds: a user of its own per sandbox when the function runs as root, rlimits, a minimal environment. ' +
  "What does not: no mount, process or network isolation (sandbox code sees the instance's whole file system " +
  "with that user's rights, and the internet); " +
  'files are lost when FC reclaims the instance and are not shared between instances. Use it for one trusted ' +
  'user, or set E2B_API_KEY and drop the flag';

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
 * @property {'https' | 'http-only' | 'keep' | undefined} domainProtocol with a custom domain: HTTPS with the given
 *   certificate, HTTP on purpose, or (no option given) what the existing domain has, which must be HTTPS
 * @property {{ certName: string, certFile: string, keyFile: string } | { certId: string } | undefined}
 *   domainCertificate the PEM files, or the id of a certificate in Alibaba Cloud's certificate service
 * @property {{ project: string, logstore: string } | undefined} logConfig the SLS project and logstore for the logs
 * @property {boolean} logs false with --no-logs: the function keeps no logs, on purpose
 * @property {import('./state-plan').StatePlan} state the NAS, its VPC and E2B_STATE_DIR
 * @property {string} alias the alias each deploy publishes a version behind; the trigger and the domain route to it
 * @property {number} minInstances instances kept warm for the alias (0: no scaling config)
 * @property {number | undefined} maxConcurrency the function's reserved concurrency (undefined: none)
 * @property {boolean} disableUrlInternet whether the trigger's public fcapp.run URL is off
 * @property {'bearer' | 'none'} auth
 * @property {'e2b' | 'local'} sandbox the backend (SANDBOX_BACKEND)
 * @property {{ domain?: string, apiUrl?: string, template?: string }} e2b
 * @property {Record<string, string>} environment the variables this deploy sets, with their values
 * @property {ShellVariable[]} fromShell the variables whose values come from the operator's shell: names only
 * @property {string[]} unset variables of an existing function to remove on update (--unset)
 */

/**
 * @typedef {object} PlanResult
 * @property {DeploymentPlan} plan
 * @property {import('./auth-tokens').AuthChoice} authChoice
 * @property {import('./domain-certificate').CertConfig | undefined} certConfig the domain's certificate, read and
 * checked
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
  const toolTimeoutMaxS =
    args.toolTimeoutMax === undefined
      ? Math.min(TOOL_TIMEOUT_MAX_S, timeoutS - FUNCTION_TIMEOUT_MARGIN_S)
      : Number(args.toolTimeoutMax);
  const sessionConcurrency = Number(args.sessionConcurrency);
  const sessionIdleTtlS = Number(args.sessionIdleTtl);
  const sessionTtlS = Number(args.sessionTtl);
  const sandbox = args.sandboxBackend === 'local' ? 'local' : 'e2b';
  const e2b = {
    domain: optionalString(args.e2bDomain),
    apiUrl: optionalString(args.e2bApiUrl),
    template: optionalString(args.template),
  };
  if (sandbox === 'local' && Object.values(e2b).some((v) => v !== undefined)) {
    problems.push(
      '--e2b-domain, --e2b-api-url and --template configure E2B: drop them, or drop --sandbox-backend local',
    );
  }

  const auth = resolveAuth(
    {
      auth: args.auth !== false,
      generateToken: args.generateToken === true,
      authTokenFile: optionalString(args.authTokenFile),
      outputDir: String(args.outputDir),
    },
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
    SANDBOX_BACKEND: sandbox,
  };
  if (auth.choice.mode === 'none') environment.MCP_AUTH = 'none';
  if (e2b.template !== undefined) environment.E2B_TEMPLATE = e2b.template;
  if (e2b.domain !== undefined) environment.E2B_DOMAIN = e2b.domain;
  if (e2b.apiUrl !== undefined) environment.E2B_API_URL = e2b.apiUrl;
  Object.assign(environment, planOAuth(args, problems));
  // With OAuth given now, static tokens are optional: the server takes either (functions/mcp/config.ts, loadAuth).
  const oauthOnly = environment.MCP_OAUTH_ISSUER !== undefined && auth.choice.source === 'missing';
  for (const entry of /** @type {string[]} */ (args.env ?? [])) {
    const at = entry.indexOf('=');
    const name = entry.slice(0, at);
    if (at === -1 || !VARIABLE_NAME.test(name)) {
      problems.push(
        `--env "${entry.split('=')[0]}" must be NAME=VALUE with a NAME of letters, digits and _ that starts with ` +
          `a letter`,
      );
    } else if (TELEMETRY_FROM_SHELL.some(([telemetry]) => telemetry === name)) {
      problems.push(
        `--env ${name}: telemetry settings come from the shell you deploy from (export ${name}=…), so that an ` +
          'endpoint or header that carries a credential enters neither s.yaml nor the command line',
      );
    } else if (MANAGED_NAMES.has(name)) {
      problems.push(`--env ${name} is set by this CLI; use its own option (see --help) instead`);
    } else {
      environment[name] = entry.slice(at + 1);
    }
  }
  if (sandbox === 'local') {
    environment.LOCAL_SANDBOX_ISOLATION ??= 'none';
    warnings.push(LOCAL_ON_FC);
  }

  const unset = [...new Set(/** @type {string[]} */ (args.unset ?? []))];
  for (const name of unset) {
    if (!VARIABLE_NAME.test(name))
      problems.push(`--unset "${name}" must be a variable name (letters, digits and _, starting with a letter)`);
    else if (Object.hasOwn(environment, name))
      problems.push(`--unset ${name} conflicts with this deploy, which sets it`);
  }

  // E2B_DOMAIN is required so that `s deploy` never sends an Alibaba Cloud key to E2B's cloud for want of it.
  // E2B_API_URL and E2B_TEMPLATE are optional (empty means the server's default) unless this shell sets them: then
  // an `s deploy` from a shell without them stops, instead of moving the function back to the default silently.
  const setHere = (/** @type {string} */ name) => Boolean(env[name]?.trim());
  /** @type {ShellVariable[]} */
  const fromShell = [
    ...(auth.choice.mode === 'bearer' ? [{ name: 'MCP_AUTH_TOKENS', required: !oauthOnly, secret: true }] : []),
    { name: 'MCP_SESSION_SECRET', required: true, secret: true },
    ...(sandbox === 'e2b' ? [{ name: 'E2B_API_KEY', required: true, secret: true }] : []),
    ...(sandbox === 'e2b' && e2b.domain === undefined ? [{ name: 'E2B_DOMAIN', required: true, secret: false }] : []),
    ...(sandbox === 'e2b' && e2b.apiUrl === undefined
      ? [{ name: 'E2B_API_URL', required: setHere('E2B_API_URL'), secret: false }]
      : []),
    ...(sandbox === 'e2b' && e2b.template === undefined
      ? [{ name: 'E2B_TEMPLATE', required: setHere('E2B_TEMPLATE'), secret: false }]
      : []),
    // Telemetry's settings as this shell has them: each then required at s deploy, like E2B_TEMPLATE.
    ...TELEMETRY_FROM_SHELL.filter(([name]) => setHere(name)).map(([name, secret]) => ({
      name,
      required: true,
      secret,
    })),
  ];

  const domain = planDomain(args, problems, warnings);
  const logConfig = planLogs(args, problems);
  const state = planState(args, environment, sandbox, problems);

  /** @type {DeploymentPlan} */
  const plan = {
    name: String(args.name),
    region: String(args.region),
    runtime,
    nodePath: optionalString(args.nodePath) ?? runtimeOf(runtime)?.nodePath,
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
    customDomain: domain.customDomain,
    domainProtocol: domain.protocol,
    domainCertificate: domain.certificate,
    logConfig,
    logs: args.logs !== false,
    state,
    alias: String(args.alias ?? 'live'),
    minInstances: Number(args.minInstances ?? 0),
    maxConcurrency: args.maxConcurrency === undefined ? undefined : Number(args.maxConcurrency),
    disableUrlInternet: args.disableFcappUrl === true,
    auth: auth.choice.mode,
    sandbox,
    e2b,
    environment,
    fromShell,
    unset,
  };

  const tokensBytes = auth.choice.source === 'generated' ? 64 : auth.choice.tokens.join(',').length;
  /** @type {Record<string, number>} */
  const secretSizes = {
    MCP_AUTH_TOKENS: tokensBytes,
    MCP_SESSION_SECRET: Buffer.byteLength(env.MCP_SESSION_SECRET ?? '') || 43,
  };
  for (const { name } of fromShell) secretSizes[name] ??= Buffer.byteLength(env[name]?.trim() ?? '');
  problems.push(...validatePlan(plan, { secretSizes }));
  warnings.push(...runtimeWarnings(plan));
  problems.push(...checkE2bRegion(plan, env));

  // With --deploy, a token, an E2B key or OAuth settings the function already has will do: checkAgainstFunction and
  // checkOAuthVariables (run-deploy.js, lookUpTarget) decide. Without it, s.yaml holds only what this run sets.
  if (args.deploy !== true) problems.push(...checkOAuthVariables(environment));
  if (auth.choice.source === 'missing' && !oauthOnly && args.deploy !== true) {
    warnings.push(
      'no auth token yet: s.yaml reads MCP_AUTH_TOKENS from the environment at `s deploy` and fails without it; ' +
        'set it, or re-run with --generate-token',
    );
  }
  if (sandbox === 'e2b' && (env.E2B_API_KEY ?? '').trim() === '' && args.deploy !== true) {
    warnings.push(
      'E2B_API_KEY is not set: s.yaml reads it (and E2B_DOMAIN) from the environment at `s deploy` and fails ' +
        'without it; set it, or pass --sandbox-backend local',
    );
  }
  problems.push(...checkEndpoint(args));
  const accountId = optionalString(args.accountId);
  if (accountId !== undefined && !/^\d{6,20}$/.test(accountId))
    problems.push(`--account-id "${accountId}" must be your numeric Alibaba Cloud account id`);

  const sessionSecret = env.MCP_SESSION_SECRET ?? '';
  if (sessionSecret !== '' && Buffer.byteLength(sessionSecret) < 32)
    problems.push('MCP_SESSION_SECRET must be at least 32 bytes (openssl rand -base64 32); it is not shown here');
  if (plan.domainProtocol === 'keep' && args.deploy !== true) {
    problems.push(
      `--custom-domain ${plan.customDomain} needs --domain-cert FILE and --domain-key FILE (HTTPS), or ` +
        `--domain-http-only to serve it over HTTP on purpose`,
    );
  }
  return { plan, authChoice: auth.choice, certConfig: domain.certConfig, problems, warnings };
}

/**
 * Regions FC's custom-runtime page listed for custom.debian12 while it was in preview (docs/platform-facts.md); a
 * region outside it gets a warning, not a refusal, since the list may have grown.
 */
const DEBIAN12_REGIONS = Object.freeze([
  'cn-hangzhou',
  'cn-qingdao',
  'cn-beijing',
  'cn-zhangjiakou',
  'cn-huhehaote',
  'cn-chengdu',
]);

/**
 * What the runtime choice means: an end-of-life Node, or a runtime FC may not offer in the region.
 * @param {DeploymentPlan} plan
 * @returns {string[]}
 */
function runtimeWarnings(plan) {
  const runtime = runtimeOf(plan.runtime);
  const warnings = [];
  if (runtime !== undefined && 'endOfLife' in runtime)
    warnings.push(`--runtime ${plan.runtime}: ${runtime.endOfLife}; custom.debian12 (Node 22) is the default`);
  if (plan.runtime === 'custom.debian12' && !DEBIAN12_REGIONS.includes(plan.region)) {
    warnings.push(
      `custom.debian12 was listed for ${DEBIAN12_REGIONS.join(', ')} only; if FC refuses it in ${plan.region}, ` +
        'pass --runtime custom.debian10 (Node 20, end of life)',
    );
  }
  return warnings;
}

/** The region in a host of Alibaba Cloud's E2B service (`cn-hangzhou.e2b.fc.aliyuncs.com`, `api.cn-hangzhou.…`). */
const E2B_SERVICE_REGION = /(?:^|[/.])([a-z]{2,}-[a-z0-9]+(?:-[a-z0-9]+)*)\.e2b\.fc\.aliyuncs\.com(?::\d+)?(?:\/|$)/;

/**
 * Alibaba Cloud's E2B-compatible service is regional (<region>.e2b.fc.aliyuncs.com): sandboxes in another region
 * than the function cross regions on every call, which is slow and billed as traffic between regions, so a mismatch
 * is refused. The domain and API URL are read from the options, else from the shell s deploy would read them from.
 * @param {DeploymentPlan} plan
 * @param {Record<string, string | undefined>} env
 * @returns {string[]}
 */
function checkE2bRegion(plan, env) {
  if (plan.sandbox !== 'e2b') return [];
  const problems = [];
  /** @type {Array<[string, string | undefined]>} */
  const sources = [
    plan.e2b.domain === undefined ? ['E2B_DOMAIN', optionalString(env.E2B_DOMAIN)] : ['--e2b-domain', plan.e2b.domain],
    plan.e2b.apiUrl === undefined
      ? ['E2B_API_URL', optionalString(env.E2B_API_URL)]
      : ['--e2b-api-url', plan.e2b.apiUrl],
  ];
  for (const [source, value] of sources) {
    const region = E2B_SERVICE_REGION.exec(value ?? '')?.[1];
    if (region !== undefined && region !== plan.region) {
      problems.push(
        `${source} ${value} is Alibaba Cloud's E2B service in ${region}, but the function goes to --region ` +
          `${plan.region}: every sandbox call would cross regions; deploy to --region ${region}, or use the E2B ` +
          `service of ${plan.region}`,
      );
    }
  }
  return problems;
}

/**
 * --sls-project and --sls-logstore: both or neither, each a name SLS takes.
 * @param {Record<string, unknown>} args
 * @param {string[]} problems
 */
function planLogs(args, problems) {
  const project = optionalString(args.slsProject);
  const logstore = optionalString(args.slsLogstore);
  if (project === undefined && logstore === undefined) return undefined;
  if (args.logs === false) {
    problems.push('--no-logs conflicts with --sls-project and --sls-logstore: choose one');
    return undefined;
  }
  if (project === undefined || logstore === undefined) {
    problems.push(
      '--sls-project and --sls-logstore go together: the SLS project and the logstore in it that keep the ' +
        'function logs',
    );
    return undefined;
  }
  if (!/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(project))
    problems.push(
      `--sls-project "${project}" is not an SLS project name (3–63 lowercase letters, digits and -, not starting ` +
        `or ending with -)`,
    );
  if (!/^[a-z0-9][a-z0-9_-]{0,61}[a-z0-9]$/.test(logstore))
    problems.push(`--sls-logstore "${logstore}" is not an SLS logstore name (2–63 lowercase letters, digits, _ and -)`);
  return { project, logstore };
}

/**
 * What a deploy through the API refuses once it has looked the function up, before it writes or changes anything:
 * bearer auth with no token given, none on the function and no OAuth issuer, E2B with no key given and none on the
 * function.
 * @param {DeploymentPlan} plan
 * @param {import('./auth-tokens').AuthChoice} authChoice
 * @param {Record<string, string | undefined>} shell the values of plan.fromShell given now
 * @param {Record<string, any> | undefined} existing the function (undefined: it does not exist yet)
 * @returns {string[]}
 */
function checkAgainstFunction(plan, authChoice, shell, existing) {
  const current = existing?.environmentVariables ?? {};
  const kept = (/** @type {string} */ name) =>
    typeof current[name] === 'string' && current[name].trim() !== '' && !plan.unset.includes(name);
  // OAuth is auth too: an issuer given now, or one the function has and keeps, lets the server start without a token.
  const oauth = plan.environment.MCP_OAUTH_ISSUER !== undefined || kept('MCP_OAUTH_ISSUER');
  const problems = [];
  if (plan.auth === 'bearer' && authChoice.source === 'missing' && !kept('MCP_AUTH_TOKENS') && !oauth) {
    problems.push(
      `refusing to deploy without an auth token (function ${plan.name} has none to keep): pass --generate-token ` +
        `or --auth-token-file FILE, set MCP_AUTH_TOKENS, pass --oauth-issuer URL to accept an authorization ` +
        `server's access tokens, or pass --no-auth to deploy an open server on purpose`,
    );
  }
  if (plan.sandbox === 'e2b' && !shell.E2B_API_KEY && !kept('E2B_API_KEY')) {
    problems.push(
      `refusing to deploy a function without a sandbox backend (function ${plan.name} has no E2B key to keep): ` +
        `export E2B_API_KEY (and E2B_DOMAIN for Alibaba Cloud's sandboxes), or pass --sandbox-backend local to run ` +
        `sandboxes as plain processes in the FC instance on purpose`,
    );
  }
  return problems;
}

/**
 * The --endpoint option's form.
 * @param {Record<string, unknown>} args
 */
function checkEndpoint(args) {
  const problems = [];
  const endpoint = optionalString(args.endpoint);
  if (endpoint !== undefined && !/^(https?:\/\/)?[A-Za-z0-9.-]+(:\d{1,5})?\/?$/.test(endpoint)) {
    problems.push(
      `--endpoint "${endpoint}" must be a host such as 123456789.cn-hangzhou.fc.aliyuncs.com, or http(s)://host:port`,
    );
  }
  return problems;
}

module.exports = { createPlan, checkAgainstFunction };
