/**
 * One run of the deploy CLI: validate, build the bundle if needed, write the artifact, optionally deploy through
 * the FC API, and describe the outcome. Throws UsageError (exit 2) or DeployError (exit 1); never exits itself.
 */
'use strict';

const { existsSync, mkdirSync, readFileSync, statSync } = require('node:fs');
const { join, resolve } = require('node:path');

const { ensureGeneratedToken } = require('./auth-tokens');
const { renderArtifact, writeArtifact } = require('./artifact');
const { ensureBundle } = require('./bundle');
const { createPlan } = require('./deploy-plan');
const { UsageError } = require('./deploy-errors');
const { toHumanReport, toUrlForm } = require('./deploy-report');
const { createFcApi, resolveEndpoint } = require('./fc-api');
const { deployToFc } = require('./fc-deploy');

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

  const { plan, authChoice, problems, warnings } = createPlan({ ...args, outputDir }, context.env);
  if (existsSync(outputDir) && !statSync(outputDir).isDirectory()) problems.push(`--output-dir ${args.outputDir} exists and is not a directory`);
  if (problems.length > 0) throw new UsageError(problems);
  for (const warning of warnings) log(`warning: ${warning}`);

  const bundle = await ensureBundle({ root: context.root, log });
  const artifact = await renderArtifact(plan, readFileSync(bundle.path));
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

  const endpoint = resolveEndpoint({ endpoint: optional(args.endpoint), accountId: optional(args.accountId), region: plan.region });
  let deployed;
  let plannedCalls;
  if (args.deploy === true && dryRun) {
    plannedCalls = toPlannedCalls(plan, endpoint);
  } else if (args.deploy === true) {
    const api = createFcApi({
      ...endpoint,
      accessKeyId: String(context.env.ALIBABA_CLOUD_ACCESS_KEY_ID),
      accessKeySecret: String(context.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET),
      securityToken: context.env.ALIBABA_CLOUD_SECURITY_TOKEN || undefined,
    });
    log(`Deploying through the FC API at ${endpoint.protocol}://${endpoint.host}…`);
    deployed = await deployToFc({
      plan,
      api,
      zip: artifact.zip,
      secrets: {
        MCP_AUTH_TOKENS: authChoice.tokens.join(',') || undefined,
        MCP_SESSION_SECRET: context.env.MCP_SESSION_SECRET || undefined,
        E2B_API_KEY: context.env.E2B_API_KEY?.trim() || undefined,
      },
      step: log,
    });
  }

  if (json) {
    const result = {
      ok: true,
      dryRun,
      outputDir,
      files,
      manifest: artifact.manifest,
      auth: { mode: plan.auth, source: authChoice.source, tokenFile: authChoice.file ?? null, tokenGenerated: newToken !== undefined },
      warnings,
      url: deployed?.url ?? toUrlForm(plan),
      deployed: deployed ?? null,
      plannedCalls: plannedCalls ?? null,
    };
    context.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    if (newToken !== undefined) log(`New bearer token written to ${authChoice.file} (mode 0600); it is not repeated in the JSON.`);
  } else {
    context.stdout.write(
      toHumanReport({ plan, outputDir, cwd: context.cwd, dryRun, files, auth: authChoice, newToken, warnings, deployed, plannedCalls, accountId: optional(args.accountId) }),
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
    `POST ${base}/functions/${plan.name}/triggers (create), or PUT ${base}/functions/${plan.name}/triggers/${plan.triggerName} (update)`,
    ...(plan.customDomain === undefined ? [] : [`GET  ${base}/custom-domains/${plan.customDomain}`, `POST or PUT ${base}/custom-domains[/${plan.customDomain}]`]),
  ];
}

/** @param {unknown} value */
function optional(value) {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

module.exports = { runDeploy };
