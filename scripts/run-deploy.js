/**
 * One run of the deploy CLI: validate, build the bundle if needed, write the artifact, optionally deploy through
 * the FC API, and describe the outcome. Throws UsageError (exit 2) or DeployError (exit 1); never exits itself.
 */
'use strict';

const { existsSync, mkdirSync, readFileSync, statSync } = require('node:fs');
const { join, resolve } = require('node:path');

const { ensureGeneratedToken } = require('./auth-tokens');
const { readFilesBeside, renderArtifact, writeArtifact } = require('./artifact');
const { ensureBundle } = require('./bundle');
const { optionalString } = require('./option-values');
const { keepSessionSecret } = require('./session-secret-file');
const { checkAgainstFunction, createPlan } = require('./deploy-plan');
const { checkAgainstDomain } = require('./domain-plan');
const { UsageError } = require('./deploy-errors');
const { toHumanReport, toUrlForm } = require('./deploy-report');
const { createFcApi, resolveEndpoint } = require('./fc-api');
const { resolveFcCredentials } = require('./fc-credentials');
const { deployToFc, lookUpCustomDomain, lookUpFunction } = require('./fc-deploy');
const { describeDiff, toVariables } = require('./function-variables');
const { checkOAuthVariables, describeOAuth } = require('./oauth-settings');
const { checkVariablesSize } = require('./validate-plan');

/** Stands in for a token still to generate (auth-tokens.js makes 64 hex digits): only its length is ever used. */
const TOKEN_TO_GENERATE = '-'.repeat(64);

/**
 * @typedef {object} RunContext
 * @property {{ write(text: string): unknown }} stdout the result (one JSON document with --json)
 * @property {{ write(text: string): unknown }} stderr progress and warnings
 * @property {Record<string, string | undefined>} env
 * @property {string} cwd
 * @property {string} root the repository (build.mjs, functions/, dist/)
 */

/**
 * @param {Record<string, unknown>} args parsed options
 * @param {RunContext} context
 */
async function runDeploy(args, context) {
  const json = args.json === true;
  const dryRun = args.dryRun === true;
  const log = (/** @type {string} */ line) => context.stderr.write(`${line}\n`);
  const outputDir = resolve(context.cwd, String(args.outputDir));

  const { plan, authChoice, certConfig, problems, warnings } = createPlan({ ...args, outputDir }, context.env);
  if (existsSync(outputDir) && !statSync(outputDir).isDirectory())
    problems.push(`--output-dir ${args.outputDir} exists and is not a directory`);
  if (problems.length > 0) throw new UsageError(problems);
  for (const warning of warnings) log(`warning: ${warning}`);

  // With --deploy the function is read first: what it already has (tokens, the E2B key, the session secret) may
  // complete the plan, and nothing is written or changed before the plan is known to be complete.
  const endpoint = resolveEndpoint({
    endpoint: optionalString(args.endpoint),
    accountId: optionalString(args.accountId),
    region: plan.region,
  });
  const target =
    args.deploy === true ? await lookUpTarget({ args, context, plan, authChoice, endpoint, log }) : undefined;
  // No token given, yet the deploy goes on: the function's tokens are kept, or (without any) OAuth is its auth.
  if (authChoice.source === 'missing' && target?.tokensKept === true) authChoice.source = 'kept';

  const bundle = await ensureBundle({ root: context.root, log });
  const artifact = await renderArtifact(plan, readFileSync(bundle.path), readFilesBeside(bundle.path));
  const files = artifact.files.map((f) => join(outputDir, f.path));
  let newToken;
  if (!dryRun) {
    mkdirSync(outputDir, { recursive: true });
    if (authChoice.source === 'generated') {
      const generated = ensureGeneratedToken(/** @type {string} */ (authChoice.file));
      authChoice.tokens = [generated.token];
      if (generated.created) newToken = generated.token;
      else log(`Using the token generated earlier in ${authChoice.file}.`);
    }
    writeArtifact(artifact, outputDir);
    log(`Wrote the artifact to ${outputDir}.`);
  }
  if (authChoice.source === 'generated') files.push(/** @type {string} */ (authChoice.file));
  // A function that has a session secret keeps it; otherwise the one kept in the output directory is used, so that
  // `s deploy` from this artifact sends the same value later.
  const hasSecret = typeof target?.existing?.environmentVariables?.MCP_SESSION_SECRET === 'string';
  const sessionSecretFile = hasSecret
    ? undefined
    : keepSessionSecret({ outputDir, env: context.env, write: !dryRun, log });
  if (sessionSecretFile !== undefined) files.push(sessionSecretFile);

  const {
    deployed,
    plannedCalls,
    environmentDiff,
    oauth = describeOAuth(plan.environment),
  } = target === undefined
    ? {}
    : await applyToTarget({
        target,
        plan,
        authChoice,
        certConfig,
        env: context.env,
        sessionSecretFile,
        zip: artifact.zip,
        endpoint,
        dryRun,
        log,
      });

  if (json) {
    const result = {
      ok: true,
      dryRun,
      outputDir,
      files,
      manifest: artifact.manifest,
      auth: {
        mode: plan.auth,
        source: authChoice.source,
        tokenFile: authChoice.file ?? null,
        tokenGenerated: newToken !== undefined,
      },
      warnings,
      url: deployed?.url ?? toUrlForm(plan),
      deployed: deployed ?? null,
      environment: environmentDiff ?? null,
      oauth: oauth ?? null,
      plannedCalls: plannedCalls ?? null,
    };
    context.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    if (newToken !== undefined)
      log(`New bearer token written to ${authChoice.file} (mode 0600); it is not repeated in the JSON.`);
  } else {
    context.stdout.write(
      toHumanReport({
        plan,
        outputDir,
        cwd: context.cwd,
        dryRun,
        files,
        auth: authChoice,
        newToken,
        warnings,
        deployed,
        plannedCalls,
        accountId: optionalString(args.accountId),
        sessionSecretFile,
        oauth,
      }),
    );
  }
}

/**
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {{ host: string, protocol: string }} endpoint
 */
function toPlannedCalls(plan, endpoint) {
  const base = `${endpoint.protocol}://${endpoint.host}/2023-03-30`;
  return [
    `GET  ${base}/functions/${plan.name}`,
    `POST ${base}/functions (create), or PUT ${base}/functions/${plan.name} (update)`,
    `GET  ${base}/functions/${plan.name} (until active)`,
    `GET  ${base}/functions/${plan.name}/triggers/${plan.triggerName}`,
    `POST ${base}/functions/${plan.name}/triggers (create), or PUT ` +
      `${base}/functions/${plan.name}/triggers/${plan.triggerName} (update)`,
    ...(plan.customDomain === undefined
      ? []
      : [
          `GET  ${base}/custom-domains/${plan.customDomain}`,
          `POST or PUT ${base}/custom-domains[/${plan.customDomain}]`,
        ]),
  ];
}

/**
 * --deploy after the artifact: the function's whole environment and its diff (shown, secrets masked), then the
 * calls that create or update (none for a dry run, which lists them instead).
 * @param {{ target: { api: import('./fc-api').FcApi, existing: Record<string, any> | undefined, existingDomain:
 * Record<string, any> | undefined }, plan: import('./deploy-plan').DeploymentPlan, authChoice:
 * import('./auth-tokens').AuthChoice, certConfig: import('./domain-certificate').CertConfig | undefined, env:
 * Record<string, string | undefined>, sessionSecretFile: string | undefined, zip: Buffer, endpoint: { host: string,
 * protocol: 'http' | 'https' }, dryRun: boolean, log: (line: string) => void }} options
 */
async function applyToTarget({
  target,
  plan,
  authChoice,
  certConfig,
  env,
  sessionSecretFile,
  zip,
  endpoint,
  dryRun,
  log,
}) {
  const { api, existing, existingDomain } = target;
  const shell = shellValues(plan, authChoice, env);
  if (sessionSecretFile !== undefined && existsSync(sessionSecretFile))
    shell.MCP_SESSION_SECRET = readFileSync(sessionSecretFile, 'utf8').trim();
  const { variables, sessionSecret, kept } = toVariables(plan, shell, existing);
  const environmentDiff = describeDiff(plan, existing?.environmentVariables ?? {}, variables, kept);
  log(
    `Environment of function ${plan.name}${existing === undefined ? ' (new)' : ''}, secrets masked (+ added, ~ ` +
      `changed, - removed, = kept; --unset NAME removes one):`,
  );
  for (const line of environmentDiff) log(`  ${line}`);
  const oauth = describeOAuth(variables);
  if (dryRun) return { environmentDiff, oauth, plannedCalls: toPlannedCalls(plan, endpoint), deployed: undefined };
  log(`Deploying through the FC API at ${endpoint.protocol}://${endpoint.host}…`);
  const result = await deployToFc({ plan, api, existing, existingDomain, certConfig, variables, zip, step: log });
  return {
    environmentDiff,
    oauth,
    plannedCalls: undefined,
    deployed: {
      ...result,
      sessionSecret: sessionSecret === 'environment' && sessionSecretFile !== undefined ? 'file' : sessionSecret,
    },
  };
}

/**
 * --deploy's reads before anything is written: the credentials, the function and the custom domain as FC has them,
 * then what the plan still lacks (a token, an E2B key, a certificate, room in FC's 4 KB of variables, the rest of an
 * OAuth configuration) is refused.
 * @param {{ args: Record<string, unknown>, context: RunContext, plan: import('./deploy-plan').DeploymentPlan,
 * authChoice: import('./auth-tokens').AuthChoice, endpoint: { host: string, protocol: 'http' | 'https' }, log: (line:
 * string) => void }} options
 */
async function lookUpTarget({ args, context, plan, authChoice, endpoint, log }) {
  const credentials = await resolveFcCredentials({
    env: context.env,
    home: context.env.HOME,
    profile: optionalString(args.profile),
    sAccess: optionalString(args.sAccess),
  });
  log(`Credentials: ${credentials.source}.`);
  const api = createFcApi({
    ...endpoint,
    accessKeyId: credentials.accessKeyId,
    accessKeySecret: credentials.accessKeySecret,
    securityToken: credentials.securityToken,
  });
  const existing = await lookUpFunction({ api, step: log, name: plan.name, region: plan.region });
  const existingDomain =
    plan.customDomain === undefined
      ? undefined
      : await lookUpCustomDomain({ api, step: log, domain: plan.customDomain });
  const shell = shellValues(plan, authChoice, context.env);
  const { variables } = toVariables(plan, shell, existing);
  const refused = [
    ...checkAgainstFunction(plan, authChoice, shell, existing),
    ...checkAgainstDomain(plan, existingDomain),
    ...checkVariablesSize(variables),
    ...checkOAuthVariables(variables),
  ];
  if (refused.length > 0) throw new UsageError(refused);
  log(describeLogs(plan, existing));
  return { api, existing, existingDomain, tokensKept: variables.MCP_AUTH_TOKENS !== undefined };
}

/**
 * Where the function's logs will go: the given SLS project, the function's current one (an update that sends no
 * logConfig keeps it), or nowhere, said plainly.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existing
 */
function describeLogs(plan, existing) {
  if (plan.logConfig !== undefined)
    return `Logs: SLS project ${plan.logConfig.project}, logstore ${plan.logConfig.logstore}.`;
  const current = existing?.logConfig;
  if (typeof current?.project === 'string' && current.project !== '')
    return `Logs: kept (SLS project ${current.project}, logstore ${current.logstore}).`;
  return (
    'warning: FC will keep no logs for this function: pass --sls-project P --sls-logstore L (an SLS project and ' +
    'logstore in the same region), or turn logging on in the FC console (function → Logging)'
  );
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

module.exports = { runDeploy };
