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
const { createPlan } = require('./deploy-plan');
const { UsageError } = require('./deploy-errors');
const { toHumanReport, toUrlForm } = require('./deploy-report');
const { connect, lookUpTarget, shellValues } = require('./deploy-target');
const { resolveEndpoint } = require('./fc-api');
const { deployToFc, rollbackOnFc } = require('./fc-deploy');
const { describeDiff, toVariables } = require('./function-variables');
const { describeOAuth } = require('./oauth-settings');

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

  const {
    plan,
    authChoice,
    certConfig: certFromFiles,
    problems,
    warnings,
  } = createPlan({ ...args, outputDir }, context.env);
  if (args.rollback !== undefined) return runRollback({ args, context, plan, problems, json, log });
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
    args.deploy === true
      ? await lookUpTarget({ args, env: context.env, plan, authChoice, endpoint, log, warnings })
      : undefined;
  // No token given, yet the deploy goes on: the function's tokens are kept, or (without any) OAuth is its auth.
  if (authChoice.source === 'missing' && target?.tokensKept === true) authChoice.source = 'kept';
  const certConfig = target?.certConfig ?? certFromFiles;

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
  const fn = `${base}/functions/${plan.name}`;
  return [
    `GET  ${fn}`,
    'Resource Manager CheckServiceLinkedRoleExistence (and CreateServiceLinkedRole when missing), when logs or a ' +
      'VPC need AliyunServiceRoleForFC',
    `POST ${base}/functions (create), or PUT ${fn} (update)`,
    `GET  ${fn} (until active)`,
    `POST ${fn}/versions (publish)`,
    `GET  ${fn}/aliases/${plan.alias}, then POST ${fn}/aliases (create) or PUT ${fn}/aliases/${plan.alias} (move)`,
    `GET  ${fn}/triggers/${plan.triggerName}`,
    `POST ${fn}/triggers (create), or PUT ${fn}/triggers/${plan.triggerName} (update; qualifier ${plan.alias})`,
    plan.minInstances > 0
      ? `PUT  ${fn}/scaling-config?qualifier=${plan.alias} (${plan.minInstances} warm)`
      : `GET  ${fn}/scaling-config?qualifier=${plan.alias} (DELETE when it keeps instances warm)`,
    plan.maxConcurrency === undefined
      ? `GET  ${fn}/concurrency (DELETE when one is reserved)`
      : `PUT  ${fn}/concurrency (${plan.maxConcurrency})`,
    ...(plan.customDomain === undefined
      ? []
      : [
          `GET  ${base}/custom-domains/${plan.customDomain}`,
          `POST or PUT ${base}/custom-domains[/${plan.customDomain}] (route /* → ${plan.alias})`,
        ]),
  ];
}

/**
 * --deploy after the artifact: the function's whole environment and its diff (shown, secrets masked), then the
 * calls that create or update (none for a dry run, which lists them instead).
 * @param {{ target: import('./deploy-target').Target, plan: import('./deploy-plan').DeploymentPlan, authChoice:
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
  const { api, resourceManager, existing, existingDomain } = target;
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
  const result = await deployToFc({
    plan,
    api,
    resourceManager,
    existing,
    existingDomain,
    certConfig,
    variables,
    zip,
    step: log,
  });
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
 * --rollback [VERSION]: the alias back to a version, and nothing else (no artifact, no bundle, no other call that
 * writes); only --name, --region, --alias, --dry-run and the credential and endpoint options are read.
 * @param {{ args: Record<string, unknown>, context: RunContext, plan: import('./deploy-plan').DeploymentPlan,
 *   problems: string[], json: boolean, log: (line: string) => void }} options
 */
async function runRollback({ args, context, plan, problems, json, log }) {
  const own = problems.filter((p) => /^--(name|region|alias) /.test(p));
  if (own.length > 0) throw new UsageError(own);
  const to = optionalString(args.rollback);
  if (to !== undefined && !/^\d+$/.test(to))
    throw new UsageError([`--rollback ${to} must be a version number (or nothing: the version before)`]);
  const endpoint = resolveEndpoint({
    endpoint: optionalString(args.endpoint),
    accountId: optionalString(args.accountId),
    region: plan.region,
  });
  const { api } = await connect({ args, env: context.env, endpoint, log });
  const dryRun = args.dryRun === true;
  const release = await rollbackOnFc({ plan, api, step: log, to, dryRun });
  if (json) {
    context.stdout.write(`${JSON.stringify({ ok: true, ...(dryRun && { dryRun }), rollback: release }, null, 2)}\n`);
  } else if (dryRun) {
    context.stdout.write(
      `\nDry run: alias ${release.alias} of ${plan.name} serves version ${release.version}; --rollback would move it ` +
        `to ${release.wouldServe}.\n`,
    );
  } else {
    context.stdout.write(
      `\nAlias ${release.alias} of ${plan.name} serves version ${release.version}` +
        `${release.previous === release.version ? '' : ` (was ${release.previous})`}.\n`,
    );
  }
}

module.exports = { runDeploy };
