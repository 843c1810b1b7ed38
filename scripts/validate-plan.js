/**
 * The rules a deployment plan must pass before anything is written or called. Each problem names the option to
 * change and how; nothing here does I/O.
 */
'use strict';

const {
  AFFINITY_METHODS,
  CPU,
  ENV_MAX_BYTES,
  FUNCTION_NAME_PATTERN,
  FUNCTION_TIMEOUT_MARGIN_S,
  MEMORY_GB_PER_CPU,
  MEMORY_MB,
  RUNTIMES,
  runtimeOf,
  SESSION_CONCURRENCY_RANGE,
  SESSION_TTL_MAX_S,
} = require('./fc-limits');

const HOSTNAME_PATTERN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
const REGION_PATTERN = /^[a-z]{2,}-[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * Every problem of the plan (empty when it is valid).
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {{ secretSizes: Record<string, number> }} sizes byte lengths of the secret values known now (0 when unknown)
 * @returns {string[]}
 */
function validatePlan(plan, sizes) {
  return [
    ...checkName(plan),
    ...checkRuntime(plan),
    ...checkResources(plan),
    ...checkTimeouts(plan),
    ...checkSessions(plan),
    ...checkEnvironment(plan, sizes),
    ...checkHosts(plan),
    ...checkRelease(plan),
  ];
}

/** @param {import('./deploy-plan').DeploymentPlan} plan */
function checkName(plan) {
  const problems = [];
  if (!FUNCTION_NAME_PATTERN.test(plan.name)) {
    problems.push(
      `--name "${plan.name}" is not a valid function name: use 1–64 letters, digits, _ or -, starting with a ` +
        `letter or _`,
    );
  }
  if (!REGION_PATTERN.test(plan.region))
    problems.push(`--region "${plan.region}" is not a region id such as cn-hangzhou or ap-southeast-1`);
  return problems;
}

/** @param {import('./deploy-plan').DeploymentPlan} plan */
function checkRuntime(plan) {
  const runtime = runtimeOf(plan.runtime);
  if (runtime === undefined) {
    return [
      `--runtime "${plan.runtime}" is not one this CLI knows (${Object.keys(RUNTIMES).join(', ')}); use ` +
        `custom.debian12`,
    ];
  }
  const problems = [];
  if (!runtime.custom && plan.sessionAffinity) {
    problems.push(
      `--runtime ${plan.runtime} cannot hold session affinity (--enable-session-affinity): FC runs one request ` +
        `per instance on built-in runtimes, so MCP_STREAMABLE needs a custom runtime such as custom.debian12`,
    );
  }
  if (!runtime.custom) {
    problems.push(
      `--runtime ${plan.runtime} runs event handlers, not an HTTP server: this server needs a custom runtime ` +
        `such as custom.debian12`,
    );
  } else if (plan.nodePath === undefined) {
    problems.push(
      `--runtime ${plan.runtime} has no Node at a known path: pass --node-path (a Node ≥ 20.10 inside the ` +
        `runtime), or use custom.debian12`,
    );
  } else if (!plan.nodePath.startsWith('/')) {
    problems.push(`--node-path must be an absolute path inside the runtime (got "${plan.nodePath}")`);
  }
  return problems;
}

/** @param {import('./deploy-plan').DeploymentPlan} plan */
function checkResources(plan) {
  const problems = [];
  const { memoryMb, cpu } = plan;
  const memoryOk =
    Number.isInteger(memoryMb) &&
    memoryMb >= MEMORY_MB.min &&
    memoryMb <= MEMORY_MB.max &&
    memoryMb % MEMORY_MB.step === 0;
  if (!memoryOk)
    problems.push(
      `--memory ${memoryMb} must be a multiple of ${MEMORY_MB.step} MB from ${MEMORY_MB.min} to ${MEMORY_MB.max}`,
    );
  const cpuSteps = cpu / CPU.step;
  const cpuOk =
    Number.isFinite(cpu) && cpu >= CPU.min && cpu <= CPU.max && Math.abs(cpuSteps - Math.round(cpuSteps)) < 1e-9;
  if (!cpuOk) problems.push(`--cpu ${cpu} must be from ${CPU.min} to ${CPU.max} vCPU in steps of ${CPU.step}`);
  if (memoryOk && cpuOk) {
    const gbPerCpu = memoryMb / 1024 / cpu;
    if (gbPerCpu < MEMORY_GB_PER_CPU.min - 1e-9 || gbPerCpu > MEMORY_GB_PER_CPU.max + 1e-9) {
      const low = Math.ceil((cpu * MEMORY_GB_PER_CPU.min * 1024) / MEMORY_MB.step) * MEMORY_MB.step;
      const high = Math.floor((cpu * MEMORY_GB_PER_CPU.max * 1024) / MEMORY_MB.step) * MEMORY_MB.step;
      problems.push(
        `--cpu ${cpu} with --memory ${memoryMb}: FC needs ${MEMORY_GB_PER_CPU.min}–${MEMORY_GB_PER_CPU.max} GB ` +
          `of memory per vCPU; for ${cpu} vCPU use --memory ` +
          `${Math.max(low, MEMORY_MB.min)}–${Math.min(high, MEMORY_MB.max)}, or change --cpu`,
      );
    }
  }
  return problems;
}

/** @param {import('./deploy-plan').DeploymentPlan} plan */
function checkTimeouts(plan) {
  const { timeoutS, toolTimeoutMaxS } = plan;
  if (!Number.isInteger(timeoutS) || timeoutS < 1 || timeoutS > 86_400)
    return [`--timeout ${timeoutS} must be a whole number of seconds from 1 to 86400`];
  if (!Number.isInteger(toolTimeoutMaxS) || toolTimeoutMaxS < 1) {
    return [
      `--timeout ${timeoutS} leaves no time for tool calls: it must be above ${FUNCTION_TIMEOUT_MARGIN_S} s (and ` +
        `--tool-timeout-max a whole number ≥ 1)`,
    ];
  }
  if (timeoutS < toolTimeoutMaxS + FUNCTION_TIMEOUT_MARGIN_S) {
    return [
      `--timeout ${timeoutS} must be at least ${FUNCTION_TIMEOUT_MARGIN_S} s above the tool timeout cap ` +
        `(--tool-timeout-max ${toolTimeoutMaxS}), so that every call is answered before FC cuts it: raise ` +
        `--timeout to ${toolTimeoutMaxS + FUNCTION_TIMEOUT_MARGIN_S} or lower --tool-timeout-max to ` +
        `${Math.max(1, timeoutS - FUNCTION_TIMEOUT_MARGIN_S)}`,
    ];
  }
  return [];
}

/** @param {import('./deploy-plan').DeploymentPlan} plan */
function checkSessions(plan) {
  const problems = [];
  const { min, max } = SESSION_CONCURRENCY_RANGE;
  if (!Number.isInteger(plan.sessionConcurrency) || plan.sessionConcurrency < min || plan.sessionConcurrency > max) {
    problems.push(
      `--session-concurrency ${plan.sessionConcurrency} must be a whole number from ${min} to ${max} (FC's ` +
        `sessions per instance)`,
    );
  }
  if (!Number.isInteger(plan.sessionIdleTtlS) || plan.sessionIdleTtlS < 1 || plan.sessionIdleTtlS > SESSION_TTL_MAX_S) {
    problems.push(
      `--session-idle-ttl ${plan.sessionIdleTtlS} must be a whole number of seconds from 1 to ${SESSION_TTL_MAX_S}`,
    );
  }
  if (!Number.isInteger(plan.sessionTtlS) || plan.sessionTtlS < 60 || plan.sessionTtlS > SESSION_TTL_MAX_S) {
    problems.push(
      `--session-ttl ${plan.sessionTtlS} must be a whole number of seconds from 60 to ${SESSION_TTL_MAX_S}`,
    );
  }
  if (plan.sessionAffinity && plan.sessionIdleTtlS > plan.sessionTtlS) {
    problems.push(
      `--session-idle-ttl ${plan.sessionIdleTtlS} is longer than --session-ttl ${plan.sessionTtlS}: FC ends a ` +
        'session at its TTL whatever its idle time, so the idle timeout must not exceed it',
    );
  }
  if (!plan.triggerMethods.includes('POST'))
    problems.push('--trigger-methods must include POST: every MCP request is a POST');
  if (plan.sessionAffinity) {
    const missing = AFFINITY_METHODS.filter((m) => !plan.triggerMethods.includes(m));
    if (missing.length > 0) {
      problems.push(
        `--trigger-methods lacks ${missing.join(', ')}: with --enable-session-affinity FC needs the trigger to ` +
          `allow GET, POST and DELETE (DELETE frees a session's slot); add them or pass ` +
          `--no-enable-session-affinity`,
      );
    }
  }
  return problems;
}

/**
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {{ secretSizes: Record<string, number> }} sizes
 */
function checkEnvironment(plan, sizes) {
  const problems = [];
  const names = [...Object.keys(plan.environment), ...plan.fromShell.map((s) => s.name)];
  for (const name of names) {
    if (/^FC_/i.test(name)) problems.push(`--env ${name}: FC reserves variables starting with FC_; rename it`);
  }
  const bytes =
    Object.entries(plan.environment).reduce(
      (sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value),
      0,
    ) + plan.fromShell.reduce((sum, s) => sum + Buffer.byteLength(s.name) + (sizes.secretSizes[s.name] ?? 0), 0);
  if (bytes > ENV_MAX_BYTES) {
    problems.push(
      `--env: the function's environment variables come to ${bytes} bytes, over FC's ${ENV_MAX_BYTES}-byte ` +
        `limit; drop or shorten some --env values`,
    );
  }
  return problems;
}

/** @param {import('./deploy-plan').DeploymentPlan} plan */
function checkHosts(plan) {
  const problems = [];
  if (plan.customDomain !== undefined && !HOSTNAME_PATTERN.test(plan.customDomain)) {
    problems.push(`--custom-domain "${plan.customDomain}" is not a domain name such as mcp.example.com`);
  }
  if (plan.e2b.domain !== undefined && !HOSTNAME_PATTERN.test(plan.e2b.domain)) {
    problems.push(`--e2b-domain "${plan.e2b.domain}" is not a domain name such as cn-hangzhou.e2b.fc.aliyuncs.com`);
  }
  if (plan.e2b.apiUrl !== undefined && !/^https?:\/\/[^/\s]+/.test(plan.e2b.apiUrl)) {
    problems.push(
      `--e2b-api-url "${plan.e2b.apiUrl}" must be an http(s) URL such as https://api.cn-hangzhou.e2b.fc.aliyuncs.com`,
    );
  }
  if (plan.e2b.template !== undefined && !/^[\w.:/-]+$/.test(plan.e2b.template))
    problems.push(`--template "${plan.e2b.template}" is not a template name or id`);
  return problems;
}

/** FC's alias names: a letter first, then letters, digits, _ and -, at most 128; LATEST is the unpublished code. */
const ALIAS_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,127}$/;
/** The most instances --min-instances may keep warm: a guard against a typo that bills hundreds of idle instances. */
const MAX_MIN_INSTANCES = 100;

/** @param {import('./deploy-plan').DeploymentPlan} plan */
function checkRelease(plan) {
  const problems = [];
  if (!ALIAS_PATTERN.test(plan.alias) || plan.alias.toUpperCase() === 'LATEST') {
    problems.push(
      `--alias "${plan.alias}" must start with a letter and hold only letters, digits, _ and - (at most 128), and ` +
        'not be LATEST',
    );
  }
  if (!Number.isInteger(plan.minInstances) || plan.minInstances < 0 || plan.minInstances > MAX_MIN_INSTANCES) {
    problems.push(`--min-instances ${plan.minInstances} must be a whole number from 0 to ${MAX_MIN_INSTANCES}`);
  }
  if (plan.maxConcurrency !== undefined && (!Number.isInteger(plan.maxConcurrency) || plan.maxConcurrency < 1)) {
    problems.push(
      `--max-concurrency ${plan.maxConcurrency} must be a whole number ≥ 1 (0 would stop the function; leave the ` +
        'option out for no reservation)',
    );
  }
  if (plan.disableUrlInternet && plan.customDomain === undefined) {
    problems.push(
      '--disable-fcapp-url leaves clients no way in without --custom-domain: pass one, or keep the fcapp.run URL',
    );
  }
  return problems;
}

/**
 * FC's limit on the whole environment, checked on what an update would really send (the function's kept variables
 * included), so that the update is refused here rather than by FC.
 * @param {Record<string, string>} variables
 * @returns {string[]}
 */
function checkVariablesSize(variables) {
  const bytes = Object.entries(variables).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value),
    0,
  );
  if (bytes <= ENV_MAX_BYTES) return [];
  return [
    `the function's environment variables would come to ${bytes} bytes with the ones kept from the function, ` +
      `over FC's ${ENV_MAX_BYTES}-byte limit; --unset some, or shorten --env values`,
  ];
}

module.exports = { validatePlan, checkVariablesSize };
