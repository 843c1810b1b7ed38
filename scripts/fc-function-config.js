/**
 * The plan in FC 3.0's own shapes: the function configuration, the HTTP trigger and the custom-domain route. The
 * API calls (fc-deploy.js) and the fc3 props of s.yaml (s-yaml.js) are both built from these.
 */
'use strict';

const { CODE_DIR, ENTRY_FILE, HEALTH_PATH, HOOKS, LISTEN_PORT } = require('./fc-limits');

/** FC ignores the handler of a custom runtime, but the API and fc3 want one. */
const CUSTOM_RUNTIME_HANDLER = 'index.handler';
/** Hooks of a custom runtime are HTTP paths; their handler is a placeholder FC requires. */
const HOOK_HANDLER = 'true';

/**
 * The function's configuration (CreateFunctionInput / UpdateFunctionInput fields), without code or name.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, string>} environmentVariables every variable with its value (or `${env(...)}` reference)
 */
function toFunctionConfig(plan, environmentVariables) {
  return {
    description: 'sandbox-mcp-fc: a remote MCP server with a sandbox per session',
    runtime: plan.runtime,
    handler: CUSTOM_RUNTIME_HANDLER,
    memorySize: plan.memoryMb,
    cpu: plan.cpu,
    diskSize: plan.diskMb,
    timeout: plan.timeoutS,
    instanceConcurrency: plan.instanceConcurrency,
    customRuntimeConfig: {
      command: [/** @type {string} */ (plan.nodePath)],
      args: [`${CODE_DIR}/${ENTRY_FILE}`],
      port: LISTEN_PORT,
      healthCheckConfig: {
        httpGetUrl: HEALTH_PATH,
        initialDelaySeconds: 1,
        periodSeconds: 5,
        timeoutSeconds: 3,
        failureThreshold: 3,
        successThreshold: 1,
      },
    },
    instanceLifecycleConfig: {
      initializer: { handler: HOOK_HANDLER, timeout: HOOKS.initializer.timeoutS },
      preStop: { handler: HOOK_HANDLER, timeout: HOOKS.preStop.timeoutS },
    },
    ...(plan.sessionAffinity && {
      sessionAffinity: 'MCP_STREAMABLE',
      sessionAffinityConfig: toSessionAffinityConfig(plan),
    }),
    ...(plan.logConfig !== undefined && { logConfig: toLogConfig(plan.logConfig) }),
    environmentVariables,
  };
}

/**
 * Where FC writes the function's logs. Without it FC keeps none; an update that leaves it out keeps the current one.
 * @param {{ project: string, logstore: string }} logs
 */
function toLogConfig({ project, logstore }) {
  return { project, logstore, enableRequestMetrics: true, enableInstanceMetrics: true, logBeginRule: 'DefaultRegex' };
}

/**
 * sessionAffinityConfig is a JSON string in the FC 3.0 API, not an object.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 */
function toSessionAffinityConfig(plan) {
  return JSON.stringify({
    sessionConcurrencyPerInstance: plan.sessionConcurrency,
    sessionTTLInSeconds: plan.sessionTtlS,
    sessionIdleTimeoutInSeconds: plan.sessionIdleTtlS,
  });
}

/**
 * The HTTP trigger: anonymous at FC (MCP clients cannot sign requests); the function checks the bearer token.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 */
function toHttpTriggerConfig(plan) {
  return { authType: 'anonymous', methods: [...plan.triggerMethods], disableURLInternet: false };
}

/**
 * The custom domain's route: every path of the domain to the function.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 */
function toDomainRoute(plan) {
  return { path: '/*', functionName: plan.name, qualifier: 'LATEST', methods: [...plan.triggerMethods] };
}

module.exports = { toFunctionConfig, toHttpTriggerConfig, toDomainRoute, toLogConfig };
