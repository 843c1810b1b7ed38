/**
 * --deploy: the FC API calls, idempotent and shown one by one. The service-linked role when logs or a VPC need it;
 * function: get → create (409: update) or update; wait until it is active; publish a version behind the alias
 * (fc-release.js); HTTP trigger on the alias: get → create (409: update) or update; warm instances and reserved
 * concurrency; the optional custom-domain route to the alias; the URL.
 */
'use strict';

const { setTimeout: sleep } = require('node:timers/promises');

const { DeployError, describeError } = require('./deploy-errors');
const { FcApiError } = require('./fc-api');
const { toErrorHint } = require('./fc-error-hints');
const {
  toDomainRoute,
  toFunctionConfig,
  toHttpTriggerConfig,
  toLogPlacement,
  toStatePlacement,
  toTlsConfig,
} = require('./fc-function-config');
const { MCP_PATH } = require('./fc-limits');
const { applyCapacity, publishBehindAlias, rollbackAlias } = require('./fc-release');
const { withRetry } = require('./retry');
const { ensureServiceLinkedRole } = require('./service-role');

/** Waits between status checks while FC prepares the function, then every 3 s. */
const POLL_DELAYS_MS = [500, 1000, 2000];
const POLL_STEADY_MS = 3000;
/** How long a function may stay Pending before the deploy gives up. */
const ACTIVE_TIMEOUT_MS = 5 * 60_000;

/**
 * @typedef {object} DeployOptions
 * @property {import('./deploy-plan').DeploymentPlan} plan
 * @property {import('./fc-api').FcApi} api
 * @property {import('./aliyun-rpc').RpcCall} resourceManager checks and makes the service-linked role
 * @property {Buffer} zip code.zip
 * @property {Record<string, any> | undefined} existing the function as lookUpFunction found it (undefined: none)
 * @property {Record<string, string>} variables the function's whole environment (function-variables.js)
 * @property {Record<string, any> | undefined} [existingDomain] the custom domain as lookUpCustomDomain found it
 * @property {import('./domain-certificate').CertConfig} [certConfig] the custom domain's certificate (--domain-cert)
 * @property {(line: string) => void} step told of each step as it happens
 * @property {() => number} [random] the retries' jitter source, in [0, 1); Math.random unless given
 * @property {(ms: number) => Promise<unknown>} [wait] waits between retries and status checks; setTimeout from
 *   node:timers/promises unless given
 */

/**
 * @typedef {object} DeployResult
 * @property {'created' | 'updated'} function
 * @property {'created' | 'updated'} trigger
 * @property {'created' | 'updated' | undefined} customDomain
 * @property {string} url the MCP endpoint clients connect to
 * @property {string | undefined} triggerUrl the trigger's own URL (FC's test domain)
 * @property {import('./fc-release').Release} release the version the alias serves, and the one before
 * @property {{ minInstances: number, maxConcurrency: number | undefined }} capacity
 * @property {'exists' | 'created' | 'not needed'} serviceRole
 */

/**
 * @typedef {Pick<DeployOptions, 'api' | 'step' | 'random' | 'wait'>} CallOptions
 */

/**
 * One FC call, retried as retry.js decides, its failure turned into a DeployError naming the action.
 * @param {CallOptions} options
 * @returns {<T>(what: string, fn: () => Promise<T>) => Promise<T>}
 */
function createCaller({ step, random, wait = sleep }) {
  return (what, fn) =>
    withRetry(fn, {
      wait,
      random,
      onRetry: (err, attempt, delayMs) =>
        step(
          `  ${what}: ${describeAttempt(err)}; retrying in ${(delayMs / 1000).toFixed(1)} s (attempt ${attempt + 1})`,
        ),
    }).catch((err) => {
      throw toDeployError(what, err);
    });
}

/**
 * The custom domain as FC has it now, or undefined when there is none.
 * @param {CallOptions & { domain: string }} options
 * @returns {Promise<Record<string, any> | undefined>}
 */
function lookUpCustomDomain(options) {
  options.step(`Looking up custom domain ${options.domain}…`);
  return createCaller(options)('GetCustomDomain', () => options.api.getCustomDomain(options.domain));
}

/**
 * The function as FC has it now, or undefined when there is none: read before anything is planned, written or changed.
 * @param {CallOptions & { name: string, region: string }} options
 * @returns {Promise<Record<string, any> | undefined>}
 */
function lookUpFunction(options) {
  options.step(`Looking up function ${options.name} in ${options.region}…`);
  return createCaller(options)('GetFunction', () => options.api.getFunction(options.name));
}

/**
 * @param {DeployOptions} options
 * @returns {Promise<DeployResult>}
 */
async function deployToFc(options) {
  const { plan, api, step, existing, wait = sleep } = options;
  const call = createCaller(options);
  const logConfig = toLogPlacement(plan, existing);
  if (logConfig === undefined)
    throw new DeployError('no logs: run-deploy.js refuses a function without logs before this', { step: 'plan' });
  const placement = { logConfig, ...toStatePlacement(plan, existing) };
  const input = {
    ...toFunctionConfig(plan, options.variables, placement),
    code: { zipFile: options.zip.toString('base64') },
  };
  const needs = [
    ...(typeof logConfig.project === 'string' && logConfig.project !== '' ? ['the logs'] : []),
    ...(plan.state.nas.mode === 'none' ? [] : ['the VPC of the NAS']),
  ];
  const serviceRole =
    needs.length === 0
      ? 'not needed'
      : await ensureServiceLinkedRole({ call, rpc: options.resourceManager, step, why: needs.join(' and ') });

  let functionOutcome = /** @type {'created' | 'updated'} */ ('updated');
  if (existing === undefined) {
    step(
      `Creating function ${plan.name} (${plan.runtime}, ${plan.memoryMb} MB, ${plan.cpu} vCPU, timeout ` +
        `${plan.timeoutS} s)…`,
    );
    const created = await call('CreateFunction', () => api.createFunction({ functionName: plan.name, ...input })).catch(
      (err) => {
        if (err instanceof DeployError && err.code === 'FunctionAlreadyExists') return undefined;
        throw err;
      },
    );
    if (created === undefined) {
      step(`  ${plan.name} already exists (created meanwhile); updating it instead…`);
      await call('UpdateFunction', () => api.updateFunction(plan.name, input));
    } else {
      functionOutcome = 'created';
    }
  } else {
    step(`Updating function ${plan.name} (code and configuration)…`);
    await call('UpdateFunction', () => api.updateFunction(plan.name, input));
  }

  await waitUntilActive({ plan, api, call, step, wait });
  const context = { plan, api, call, step };
  const release = await publishBehindAlias(context);

  const triggerOutcome = await upsertTrigger(context);
  const trigger = await call('GetTrigger', () => api.getTrigger(plan.name, plan.triggerName));
  const triggerUrl = plan.disableUrlInternet ? undefined : trigger?.httpTrigger?.urlInternet;
  const capacity = await applyCapacity(context);

  const domainOutcome = plan.customDomain === undefined ? undefined : await upsertCustomDomain(context, options);
  const base =
    plan.customDomain === undefined
      ? triggerUrl
      : `${plan.domainProtocol === 'http-only' ? 'http' : 'https'}://${plan.customDomain}`;
  if (typeof base !== 'string' || base === '')
    throw new DeployError('FC returned no URL for the HTTP trigger', {
      step: 'GetTrigger',
      hint: 'Open the function in the FC console: Triggers shows its URL.',
    });
  const url = `${base.replace(/\/$/, '')}${MCP_PATH}`;
  step(`Deployed: ${url} (alias ${release.alias} → version ${release.version})`);
  return {
    function: functionOutcome,
    trigger: triggerOutcome,
    customDomain: domainOutcome,
    url,
    triggerUrl,
    release,
    capacity,
    serviceRole,
  };
}

/**
 * --rollback: the alias back to a version, with one write (none with dryRun).
 * @param {Pick<DeployOptions, 'plan' | 'api' | 'step' | 'random' | 'wait'> &
 *   { to: string | undefined, dryRun?: boolean }} options
 */
function rollbackOnFc(options) {
  const { plan, api, step, to, dryRun } = options;
  return rollbackAlias({ plan, api, call: createCaller(options), step, to, dryRun });
}

/**
 * @typedef {object} StepContext
 * @property {import('./deploy-plan').DeploymentPlan} plan
 * @property {import('./fc-api').FcApi} api
 * @property {<T>(what: string, fn: () => Promise<T>) => Promise<T>} call one FC call, retried, errors translated
 * @property {(line: string) => void} step
 */

/**
 * Polls GetFunction until FC has the function ready: `state` not Pending and `lastUpdateStatus` not InProgress.
 * @param {StepContext & { wait: (ms: number) => Promise<unknown> }} context
 */
async function waitUntilActive({ plan, api, call, step, wait }) {
  step('Waiting for the function to become active…');
  const deadline = Date.now() + ACTIVE_TIMEOUT_MS;
  for (let poll = 0; ; poll++) {
    const fn = await call('GetFunction', () => api.getFunction(plan.name));
    if (fn === undefined)
      throw new DeployError(`function ${plan.name} vanished while it was being deployed`, {
        step: 'GetFunction',
        code: 'FunctionNotFound',
        hint: toErrorHint('FunctionNotFound', 404),
      });
    const state = String(fn.state ?? 'Active');
    const update = String(fn.lastUpdateStatus ?? 'Successful');
    if (state === 'Failed' || update === 'Failed') {
      const reason = [fn.stateReasonCode, fn.stateReason, fn.lastUpdateStatusReasonCode, fn.lastUpdateStatusReason]
        .filter(Boolean)
        .join(': ');
      throw new DeployError(`FC could not make function ${plan.name} ready${reason ? ` (${reason})` : ''}`, {
        step: 'GetFunction',
        code: String(fn.lastUpdateStatusReasonCode ?? fn.stateReasonCode ?? 'FunctionFailed'),
        hint:
          "Read the reason above; fix the setting it names (or the code) and re-run. The function's Logging tab in " +
          'the FC console may say more (FC keeps logs only with an SLS project: --sls-project and --sls-logstore).',
      });
    }
    if (state !== 'Pending' && update !== 'InProgress') {
      step(`  active (state ${state}, last update ${update})`);
      return;
    }
    if (Date.now() > deadline) {
      throw new DeployError(
        `function ${plan.name} was still ${state}/${update} after ${ACTIVE_TIMEOUT_MS / 60_000} minutes`,
        { step: 'GetFunction', hint: 'Check the function in the FC console, then re-run.' },
      );
    }
    step(`  still ${state === 'Pending' ? 'pending' : 'updating'} (state ${state}, last update ${update})…`);
    await wait(POLL_DELAYS_MS[poll] ?? POLL_STEADY_MS);
  }
}

/**
 * The HTTP trigger: create it, or update it (also when a create meets 409).
 * @param {StepContext} context
 * @returns {Promise<'created' | 'updated'>}
 */
async function upsertTrigger({ plan, api, call, step }) {
  const triggerConfig = JSON.stringify(toHttpTriggerConfig(plan));
  const update = () =>
    call('UpdateTrigger', () =>
      api.updateTrigger(plan.name, plan.triggerName, { triggerConfig, qualifier: plan.alias }),
    );
  step(`Looking up HTTP trigger ${plan.triggerName}…`);
  const existing = await call('GetTrigger', () => api.getTrigger(plan.name, plan.triggerName));
  if (existing !== undefined) {
    step(`Updating HTTP trigger ${plan.triggerName} (anonymous; ${plan.triggerMethods.join(', ')})…`);
    await update();
    return 'updated';
  }
  step(
    `Creating HTTP trigger ${plan.triggerName} (anonymous at the trigger, bearer auth in the function; ` +
      `${plan.triggerMethods.join(', ')})…`,
  );
  try {
    await call('CreateTrigger', () =>
      api.createTrigger(plan.name, {
        triggerName: plan.triggerName,
        triggerType: 'http',
        qualifier: plan.alias,
        triggerConfig,
      }),
    );
    return 'created';
  } catch (err) {
    if (!(err instanceof DeployError && err.code === 'TriggerAlreadyExists')) throw err;
    step(`  ${plan.triggerName} already exists (created meanwhile); updating it instead…`);
    await update();
    return 'updated';
  }
}

/**
 * The custom domain: route `/*` to the function, keeping the domain's other routes. With a certificate the domain is
 * served over HTTPS only; with --domain-http-only over HTTP; with neither, protocol and certificate are left out of
 * the update, so FC keeps the HTTPS certificate the domain has (GetCustomDomain does not return its private key, so
 * it could not be sent back).
 * @param {StepContext} context
 * @param {Pick<DeployOptions, 'existingDomain' | 'certConfig'>} domainState
 * @returns {Promise<'created' | 'updated'>}
 */
async function upsertCustomDomain({ plan, api, call, step }, { existingDomain, certConfig }) {
  const domain = /** @type {string} */ (plan.customDomain);
  const route = toDomainRoute(plan);
  const tls =
    plan.domainProtocol === 'https'
      ? { protocol: 'HTTPS', certConfig, tlsConfig: toTlsConfig() }
      : plan.domainProtocol === 'http-only'
        ? { protocol: 'HTTP' }
        : {};
  const served =
    plan.domainProtocol === 'https'
      ? `HTTPS, certificate ${certConfig?.certName}`
      : plan.domainProtocol === 'http-only'
        ? 'HTTP only'
        : 'HTTPS, its certificate kept';
  // A domain whose certificate only FC holds keeps it, and gets TLS 1.2 and up all the same.
  if (plan.domainProtocol === 'keep') Object.assign(tls, { tlsConfig: toTlsConfig() });
  if (existingDomain === undefined) {
    step(`Creating custom domain ${domain} → ${plan.name} (${served})…`);
    await call('CreateCustomDomain', () =>
      api.createCustomDomain({ domainName: domain, ...tls, routeConfig: { routes: [route] } }),
    );
    return 'created';
  }
  const others = (existingDomain.routeConfig?.routes ?? []).filter(
    (/** @type {{ path?: string }} */ r) => r.path !== route.path,
  );
  step(`Updating custom domain ${domain}: ${route.path} → ${plan.name} (${served})…`);
  await call('UpdateCustomDomain', () =>
    api.updateCustomDomain(domain, { ...tls, routeConfig: { routes: [...others, route] } }),
  );
  return 'updated';
}

/**
 * A failed attempt in words: an FC API error by its code and HTTP status, anything else by its message.
 * @param {unknown} err
 */
function describeAttempt(err) {
  return err instanceof FcApiError ? fcCodeOf(err) : describeError(err);
}

/**
 * @param {InstanceType<typeof FcApiError>} err
 * @returns {string} its code, with the HTTP status when there was one
 */
function fcCodeOf(err) {
  return `${err.code}${err.statusCode === undefined ? '' : ` (HTTP ${err.statusCode})`}`;
}

/**
 * @param {string} what the API action
 * @param {unknown} err
 */
function toDeployError(what, err) {
  if (err instanceof DeployError) return err;
  if (err instanceof FcApiError) {
    return new DeployError(`${what} failed: ${fcCodeOf(err)}: ${err.message}`, {
      step: what,
      code: err.code,
      statusCode: err.statusCode,
      requestId: err.requestId,
      hint: toErrorHint(err.code, err.statusCode),
      cause: err,
    });
  }
  return new DeployError(`${what} failed: ${describeError(err)}`, { step: what, cause: err });
}

module.exports = { deployToFc, rollbackOnFc, lookUpFunction, lookUpCustomDomain, createCaller };
