/**
 * The plan in FC 3.0's own shapes: the function configuration, the HTTP trigger and the custom-domain route. The
 * API calls (fc-deploy.js) and the fc3 props of s.yaml (s-yaml.js) are both built from these. The function states
 * every field fc3 would otherwise fill with its default on `s deploy` (docs/deploy.md: no VPC, NAS, OSS
 * mount, layers, tracing or role, SHARE isolation, no affinity, no logs), so that both paths mean one function
 * (docs/deploy.md, "One function, whichever path").
 */
'use strict';

const { CODE_DIR, ENTRY_FILE, HEALTH_PATH, HOOKS, LISTEN_PORT, officialLayerArn, runtimeOf } = require('./fc-limits');

/** FC ignores the handler of a custom runtime, but the API and fc3 want one. */
const CUSTOM_RUNTIME_HANDLER = 'index.handler';
/** Hooks of a custom runtime are HTTP paths; their handler is a placeholder FC requires. */
const HOOK_HANDLER = 'true';

/** The empty forms FC takes for "none", as fc3 sends them. */
const NO_VPC = Object.freeze({ vpcId: '', vSwitchIds: [], securityGroupId: '' });
const NO_NAS = Object.freeze({ userId: 0, groupId: 0, mountPoints: [] });
const NO_LOGS = Object.freeze({
  project: '',
  logstore: '',
  enableRequestMetrics: false,
  enableInstanceMetrics: false,
  logBeginRule: 'None',
});
/** Sessions share an instance: MCP_STREAMABLE affinity puts up to sessionConcurrencyPerInstance on each. */
const ISOLATION_MODE = 'SHARE';

/**
 * Where the function's logs, NAS and VPC come from: their FC shapes for the API (fc-deploy.js resolves `auto` from
 * the function as it is), or fc3's `auto` forms for s.yaml.
 * @typedef {object} Placement
 * @property {Record<string, unknown> | string} logConfig
 * @property {Record<string, unknown> | string} nasConfig
 * @property {Record<string, unknown> | string} vpcConfig
 */

/**
 * The function's configuration (CreateFunctionInput / UpdateFunctionInput fields), without code or name.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, string>} environmentVariables every variable with its value (or `${env(...)}` reference)
 * @param {Placement} placement
 */
function toFunctionConfig(plan, environmentVariables, placement) {
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
    internetAccess: true,
    instanceIsolationMode: ISOLATION_MODE,
    sessionAffinity: plan.sessionAffinity ? 'MCP_STREAMABLE' : 'NONE',
    ...(plan.sessionAffinity && { sessionAffinityConfig: toSessionAffinityConfig(plan) }),
    logConfig: placement.logConfig,
    nasConfig: placement.nasConfig,
    vpcConfig: placement.vpcConfig,
    ossMountConfig: { mountPoints: [] },
    layers: toLayers(plan),
    tracingConfig: {},
    role: '',
    environmentVariables,
  };
}

/**
 * The layer that brings the runtime's Node, when it comes from one (custom.debian12: FC's Nodejs22), and no other.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @returns {string[]}
 */
function toLayers(plan) {
  const runtime = runtimeOf(plan.runtime);
  // A --node-path of the operator's own means a Node the layer does not put there.
  const fromLayer = runtime?.layer !== undefined && plan.nodePath === runtime.nodePath;
  return fromLayer ? [officialLayerArn(plan.region, /** @type {string} */ (runtime?.layer))] : [];
}

/**
 * The NAS and VPC the plan mounts, in FC's shapes: none, the given mount target in its VPC, or (`auto`) the ones the
 * function has, which checkStateAgainstFunction made sure exist.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existing
 * @returns {Pick<Placement, 'nasConfig' | 'vpcConfig'>}
 */
function toStatePlacement(plan, existing) {
  const { nas, vpc } = plan.state;
  if (nas.mode === 'none') return { nasConfig: { ...NO_NAS }, vpcConfig: { ...NO_VPC } };
  if (nas.mode === 'auto')
    return { nasConfig: existing?.nasConfig ?? { ...NO_NAS }, vpcConfig: existing?.vpcConfig ?? { ...NO_VPC } };
  return {
    nasConfig: {
      userId: 0,
      groupId: 0,
      mountPoints: [{ serverAddr: nas.serverAddr, mountDir: nas.mountDir, enableTLS: false }],
    },
    vpcConfig: { .../** @type {import('./state-plan').VpcPlan} */ (vpc) },
  };
}

/**
 * Where the logs go: the given SLS project and logstore, none (--no-logs), or (neither) the function's current ones;
 * undefined when it has none, which --deploy refuses (run-deploy.js).
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existing
 * @returns {Record<string, unknown> | undefined}
 */
function toLogPlacement(plan, existing) {
  if (plan.logConfig !== undefined) return toLogConfig(plan.logConfig);
  if (!plan.logs) return { ...NO_LOGS };
  return hasLogs(existing) ? existing?.logConfig : undefined;
}

/** @param {Record<string, any> | undefined} fn */
function hasLogs(fn) {
  return typeof fn?.logConfig?.project === 'string' && fn.logConfig.project !== '';
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
  return { authType: 'anonymous', methods: [...plan.triggerMethods], disableURLInternet: plan.disableUrlInternet };
}

/**
 * The custom domain's route: every path of the domain to the function.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 */
function toDomainRoute(plan) {
  return { path: '/*', functionName: plan.name, qualifier: plan.alias, methods: [...plan.triggerMethods] };
}

/**
 * The custom domain's TLS: 1.2 and 1.3 only, with forward-secret AEAD suites (FC's default admits TLS 1.0 and RC4).
 * fc3-domain needs all three fields.
 */
function toTlsConfig() {
  return {
    minVersion: 'TLSv1.2',
    maxVersion: 'TLSv1.3',
    cipherSuites: [
      'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
      'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
      'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
      'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
      'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305',
      'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305',
    ],
  };
}

module.exports = {
  toFunctionConfig,
  toStatePlacement,
  toLogPlacement,
  toHttpTriggerConfig,
  toDomainRoute,
  toLogConfig,
  toTlsConfig,
  ISOLATION_MODE,
};
