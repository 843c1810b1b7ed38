/**
 * config.yaml: a provider-neutral description of the deployment (what runs, how it starts, what it needs), for
 * operators and other tooling. Not an FC API payload, and never a secret value: environment variables by name.
 */
'use strict';

const { CODE_DIR, ENTRY_FILE, HEALTH_PATH, HOOKS, LISTEN_PORT, MCP_PATH } = require('./fc-limits');

/** Identifies the manifest's format. */
const MANIFEST_KIND = 'sandbox-mcp-fc/deployment';
const MANIFEST_VERSION = 1;

/**
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {{ zipFile: string, zipSha256: string, zipBytes: number }} code
 */
function toManifest(plan, code) {
  return {
    kind: MANIFEST_KIND,
    version: MANIFEST_VERSION,
    name: plan.name,
    region: plan.region,
    platform: { provider: 'alibabacloud-fc3', runtime: plan.runtime },
    code: {
      archive: code.zipFile,
      entry: ENTRY_FILE,
      sha256: code.zipSha256,
      bytes: code.zipBytes,
      unpackedAt: CODE_DIR,
    },
    start: {
      command: [plan.nodePath, `${CODE_DIR}/${ENTRY_FILE}`],
      listen: '0.0.0.0',
      port: LISTEN_PORT,
      portVariable: 'FC_CUSTOM_LISTEN_PORT',
    },
    resources: { memoryMb: plan.memoryMb, cpu: plan.cpu, diskMb: plan.diskMb },
    timeouts: { functionS: plan.timeoutS, toolMaxS: plan.toolTimeoutMaxS },
    concurrency: { requestsPerInstance: plan.instanceConcurrency, sessionsPerInstance: plan.sessionConcurrency },
    sessionAffinity: plan.sessionAffinity
      ? {
          enabled: true,
          mode: 'MCP_STREAMABLE',
          header: 'Mcp-Session-Id',
          idleTimeoutS: plan.sessionIdleTtlS,
          ttlS: plan.sessionTtlS,
        }
      : { enabled: false },
    http: {
      path: MCP_PATH,
      methods: [...plan.triggerMethods],
      triggerAuth: 'anonymous',
      auth: toAuthDescription(plan),
      healthPath: HEALTH_PATH,
      customDomain: plan.customDomain ?? null,
    },
    lifecycle: {
      initializer: { ...HOOKS.initializer },
      preStop: { ...HOOKS.preStop },
    },
    environment: {
      names: [...Object.keys(plan.environment), ...plan.fromShell.map((s) => s.name)].sort(),
      // Set from the operator's shell at deploy time, never written down: which must be set, which are secret.
      fromShell: plan.fromShell.map((v) => ({ name: v.name, required: v.required, secret: v.secret })),
    },
  };
}

/**
 * How callers prove who they are, in words.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 */
function toAuthDescription(plan) {
  if (plan.auth !== 'bearer') return 'none';
  if (plan.environment.MCP_OAUTH_ISSUER === undefined) return 'bearer token, checked by the function (MCP_AUTH_TOKENS)';
  return (
    'bearer token, checked by the function: an OAuth access token of MCP_OAUTH_ISSUER, or a static token ' +
    '(MCP_AUTH_TOKENS)'
  );
}

module.exports = { toManifest };
