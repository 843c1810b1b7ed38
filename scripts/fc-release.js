/**
 * What serves, and how much of it: each --deploy publishes the function as it now is as a version and moves the
 * alias to it (the trigger and the domain route to the alias, never to LATEST), keeps warm instances on the alias and
 * the function's reserved concurrency as the plan says; --rollback moves the alias back with one write.
 */
'use strict';

const { DeployError } = require('./deploy-errors');

/**
 * @typedef {import('./fc-deploy').StepContext} StepContext
 * @typedef {object} Release
 * @property {string} alias
 * @property {string} version the version the alias serves now
 * @property {string | undefined} previous the one it served before (undefined: the alias is new)
 * @property {string} [wouldServe] a dry run's target: the version a real run would move the alias to
 */

/**
 * Publishes LATEST as a new version and points the alias at it (created on the first deploy).
 * @param {StepContext} context
 * @returns {Promise<Release>}
 */
async function publishBehindAlias({ plan, api, call, step }) {
  step(`Publishing a version of ${plan.name}…`);
  const description = `sandbox-mcp-fc, deployed ${new Date().toISOString()} by scripts/deploy.js`;
  const published = await call('PublishFunctionVersion', () => api.publishVersion(plan.name, description));
  const version = String(published.versionId ?? '');
  if (version === '')
    throw new DeployError('FC published a version without an id', {
      step: 'PublishFunctionVersion',
      hint: 'Check the versions of the function in the FC console, then re-run.',
    });
  const current = await call('GetAlias', () => api.getAlias(plan.name, plan.alias));
  if (current === undefined) {
    step(`Creating alias ${plan.alias} → version ${version}…`);
    await call('CreateAlias', () =>
      api.createAlias(plan.name, { aliasName: plan.alias, versionId: version, description: 'sandbox-mcp-fc' }),
    );
    return { alias: plan.alias, version, previous: undefined };
  }
  const previous = String(current.versionId ?? '');
  step(`Moving alias ${plan.alias}: version ${previous} → ${version}…`);
  // A weighted second version (a canary set in the console) is cleared: the alias serves this version alone.
  await call('UpdateAlias', () =>
    api.updateAlias(plan.name, plan.alias, { versionId: version, additionalVersionWeight: {} }),
  );
  return { alias: plan.alias, version, previous };
}

/**
 * Warm instances on the alias (a scaling config; none at 0, an existing one removed) and the function's reserved
 * concurrency (none when the plan has none, an existing one removed): what s deploy does with s.yaml's scalingConfig
 * and concurrencyConfig.
 * @param {StepContext} context
 * @returns {Promise<{ minInstances: number, maxConcurrency: number | undefined }>}
 */
async function applyCapacity({ plan, api, call, step }) {
  if (plan.minInstances > 0) {
    step(`Keeping ${plan.minInstances} instance(s) warm for ${plan.alias}…`);
    await call('PutScalingConfig', () =>
      api.putScalingConfig(plan.name, plan.alias, { minInstances: plan.minInstances }),
    );
  } else {
    const scaling = await call('GetScalingConfig', () => api.getScalingConfig(plan.name, plan.alias));
    if (scaling !== undefined && Number(scaling.minInstances ?? 0) > 0) {
      step(`Removing the ${scaling.minInstances} warm instance(s) of ${plan.alias} (--min-instances 0)…`);
      await call('DeleteScalingConfig', () => api.deleteScalingConfig(plan.name, plan.alias));
    }
  }
  if (plan.maxConcurrency !== undefined) {
    step(`Reserving a concurrency of ${plan.maxConcurrency} for ${plan.name}…`);
    await call('PutConcurrencyConfig', () =>
      api.putConcurrencyConfig(plan.name, /** @type {number} */ (plan.maxConcurrency)),
    );
  } else {
    const reserved = await call('GetConcurrencyConfig', () => api.getConcurrencyConfig(plan.name));
    if (reserved?.reservedConcurrency !== undefined && reserved.reservedConcurrency !== null) {
      step(
        `Removing the reserved concurrency of ${plan.name} (${reserved.reservedConcurrency}; no --max-concurrency)…`,
      );
      await call('DeleteConcurrencyConfig', () => api.deleteConcurrencyConfig(plan.name));
    }
  }
  return { minInstances: plan.minInstances, maxConcurrency: plan.maxConcurrency };
}

/**
 * Points the alias at `to`, or (undefined) at the newest version older than the one it serves: reads the alias and
 * the versions, then one UpdateAlias (none with dryRun). Nothing else changes.
 * @param {StepContext & { to: string | undefined, dryRun?: boolean }} context
 * @returns {Promise<Release>}
 */
async function rollbackAlias({ plan, api, call, step, to, dryRun = false }) {
  step(`Looking up alias ${plan.alias} of ${plan.name}…`);
  const current = await call('GetAlias', () => api.getAlias(plan.name, plan.alias));
  if (current === undefined) {
    throw new DeployError(`function ${plan.name} has no alias ${plan.alias} to roll back`, {
      step: 'GetAlias',
      code: 'AliasNotFound',
      hint: 'Deploy with --deploy first (it publishes versions behind the alias), or pass the right --alias.',
    });
  }
  const serving = String(current.versionId ?? '');
  const versions = await listVersionIds({ plan, api, call });
  const target = to ?? versions.filter((v) => Number(v) < Number(serving)).sort((a, b) => Number(b) - Number(a))[0];
  if (target === undefined || !versions.includes(target)) {
    throw new DeployError(
      to === undefined
        ? `alias ${plan.alias} serves version ${serving}, and ${plan.name} has no older version to go back to`
        : `function ${plan.name} has no version ${to} (it has ${versions.join(', ') || 'none'})`,
      { step: 'ListFunctionVersions', hint: 'Pass --rollback VERSION with one of the versions listed.' },
    );
  }
  if (target === serving) {
    step(`Alias ${plan.alias} already serves version ${target}; nothing to change.`);
    return { alias: plan.alias, version: target, previous: serving };
  }
  if (dryRun) {
    step(`Dry run: would move alias ${plan.alias}: version ${serving} → ${target} (UpdateAlias); nothing changed.`);
    return { alias: plan.alias, version: serving, previous: serving, wouldServe: target };
  }
  step(`Moving alias ${plan.alias}: version ${serving} → ${target}…`);
  await call('UpdateAlias', () =>
    api.updateAlias(plan.name, plan.alias, { versionId: target, additionalVersionWeight: {} }),
  );
  return { alias: plan.alias, version: target, previous: serving };
}

/**
 * Every version id of the function, following the pages.
 * @param {Pick<StepContext, 'plan' | 'api' | 'call'>} context
 * @returns {Promise<string[]>}
 */
async function listVersionIds({ plan, api, call }) {
  const ids = [];
  /** @type {string | undefined} */
  let nextToken;
  do {
    const token = nextToken;
    /** @type {Record<string, any>} */
    const page = await call('ListFunctionVersions', () => api.listVersions(plan.name, token));
    for (const v of page.versions ?? []) if (v?.versionId !== undefined) ids.push(String(v.versionId));
    nextToken = typeof page.nextToken === 'string' && page.nextToken !== '' ? page.nextToken : undefined;
  } while (nextToken !== undefined);
  return ids;
}

module.exports = { publishBehindAlias, applyCapacity, rollbackAlias };
