/**
 * The rules the fc3 props of an s.yaml must follow for this server, checked without the fc3 component: `s preview`
 * renders offline but does not fetch fc3's schema.json, so these restate the parts of it that matter here (memory a
 * multiple of 64 in 128–32768, timeout 1–86400, instanceConcurrency ≤ 200, the runtime enum, http triggerConfig
 * {authType, methods}, logConfig `auto` or {project, logstore, …}) plus FC's own rules and the server's
 * (functions/mcp/config.ts).
 */
export interface Fc3Props {
  region: string;
  functionName: string;
  runtime: string;
  code: string;
  handler: string;
  memorySize: number;
  cpu: number;
  diskSize: number;
  timeout: number;
  instanceConcurrency: number;
  customRuntimeConfig: { command: string[]; args: string[]; port: number; healthCheckConfig: { httpGetUrl: string } };
  instanceLifecycleConfig: {
    initializer: { handler: string; timeout: number };
    preStop: { handler: string; timeout: number };
  };
  sessionAffinity?: string;
  sessionAffinityConfig?: string;
  environmentVariables: Record<string, string>;
  logConfig?: Fc3LogConfig;
  layers?: string[];
  internetAccess?: boolean;
  instanceIsolationMode?: string;
  nasConfig?: unknown;
  vpcConfig?: unknown;
  ossMountConfig?: unknown;
  tracingConfig?: unknown;
  role?: string;
  scalingConfig?: { qualifier: string; minInstances: number };
  concurrencyConfig?: { reservedConcurrency: number };
  triggers: Array<{
    triggerName: string;
    triggerType: string;
    qualifier: string;
    triggerConfig: { authType: string; methods: string[]; disableURLInternet?: boolean };
  }>;
}

/** fc3's logConfig: `auto` (fc3 keeps the function's SLS project and logstore, or creates them) or both named. */
export type Fc3LogConfig =
  | 'auto'
  | {
      project: string;
      logstore: string;
      enableRequestMetrics?: boolean;
      enableInstanceMetrics?: boolean;
      enableLlmMetrics?: boolean;
      logBeginRule?: 'DefaultRegex' | 'None';
    };

/** FC 3.0 runtimes in fc3's schema that hold an HTTP server. */
const CUSTOM_RUNTIMES = ['custom', 'custom.debian10', 'custom.debian11', 'custom.debian12'];
const FUNCTION_TIMEOUT_MARGIN_S = 10;

/** Every rule the props break (empty when they pass). */
export function checkFc3Props(props: Fc3Props): string[] {
  const problems: string[] = [];
  const fail = (condition: boolean, message: string): void => {
    if (!condition) problems.push(message);
  };
  fail(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(props.functionName), `functionName ${props.functionName}`);
  fail(/^[a-z]{2,}-[a-z0-9-]+$/.test(props.region), `region ${props.region}`);
  fail(CUSTOM_RUNTIMES.includes(props.runtime), `runtime ${props.runtime} is not a custom runtime`);
  fail(typeof props.code === 'string' && props.code !== '', 'code must be a path');
  fail(
    Number.isInteger(props.memorySize) &&
      props.memorySize % 64 === 0 &&
      props.memorySize >= 128 &&
      props.memorySize <= 32768,
    `memorySize ${props.memorySize}`,
  );
  fail(props.cpu >= 0.05 && props.cpu <= 16, `cpu ${props.cpu}`);
  const gbPerCpu = props.memorySize / 1024 / props.cpu;
  fail(gbPerCpu >= 1 && gbPerCpu <= 4, `memory:cpu ratio ${gbPerCpu} GB per vCPU is outside 1–4`);
  fail([512, 10240].includes(props.diskSize), `diskSize ${props.diskSize}`);
  fail(Number.isInteger(props.timeout) && props.timeout >= 1 && props.timeout <= 86400, `timeout ${props.timeout}`);
  fail(
    Number.isInteger(props.instanceConcurrency) && props.instanceConcurrency >= 1 && props.instanceConcurrency <= 200,
    `instanceConcurrency ${props.instanceConcurrency}`,
  );

  const crc = props.customRuntimeConfig;
  // custom.debian10 has Node 20 built in; custom.debian12 gets Node 22 from FC's official Nodejs22 layer.
  const nodeOf: Record<string, string> = {
    'custom.debian10': '/var/fc/lang/nodejs20/bin/node',
    'custom.debian12': '/opt/nodejs22/bin/node',
  };
  fail(
    crc.command.length === 1 && crc.command[0] === nodeOf[props.runtime],
    `command ${JSON.stringify(crc.command)} is not the Node of ${props.runtime}`,
  );
  if (props.runtime === 'custom.debian12') {
    fail(
      (props.layers ?? []).some((arn) => /^acs:fc:[^:]+:official:layers\/Nodejs22\/versions\/\d+$/.test(arn)),
      'custom.debian12 needs the official Nodejs22 layer for /opt/nodejs22/bin/node',
    );
  }
  fail(props.internetAccess === true, 'internetAccess must be true: the sandboxes are reached over the internet');
  fail(JSON.stringify(crc.args) === JSON.stringify(['/code/index.js']), `args ${JSON.stringify(crc.args)}`);
  fail(crc.port === 9000, `port ${crc.port}`);
  fail(crc.healthCheckConfig.httpGetUrl === '/health', 'health check must GET /health');
  const hooks = props.instanceLifecycleConfig;
  fail(hooks.initializer.timeout >= 1 && hooks.initializer.timeout <= 300, 'initializer timeout must be 1–300 s');
  fail(hooks.preStop.timeout >= 1 && hooks.preStop.timeout <= 90, 'preStop timeout must be 1–90 s');

  const env = props.environmentVariables;
  for (const name of Object.keys(env)) fail(!/^FC_/i.test(name), `environment variable ${name} starts with FC_`);
  for (const [name, value] of Object.entries(env))
    fail(typeof value === 'string', `environment variable ${name} is not a string`);
  const functionTimeout = Number(env.MCP_FUNCTION_TIMEOUT_S);
  const toolMax = Number(env.MCP_TOOL_TIMEOUT_MAX_S);
  fail(functionTimeout === props.timeout, 'MCP_FUNCTION_TIMEOUT_S must equal timeout');
  fail(
    Number.isInteger(toolMax) && toolMax >= 1 && toolMax + FUNCTION_TIMEOUT_MARGIN_S <= props.timeout,
    `MCP_TOOL_TIMEOUT_MAX_S ${toolMax} must be ≥ 10 s below timeout ${props.timeout}`,
  );

  problems.push(...checkLogConfig(props.logConfig));

  const trigger = props.triggers.find((t) => t.triggerType === 'http');
  fail(trigger !== undefined, 'no http trigger');
  if (trigger !== undefined) {
    fail(
      trigger.triggerConfig.authType === 'anonymous',
      'the http trigger must be anonymous (the function checks the bearer token)',
    );
    fail(trigger.triggerConfig.methods.includes('POST'), 'the http trigger must allow POST');
  }
  fail(
    props.sessionAffinity === 'MCP_STREAMABLE' || props.sessionAffinity === 'NONE',
    `sessionAffinity ${String(props.sessionAffinity)} must be stated, MCP_STREAMABLE or NONE`,
  );
  fail(props.instanceIsolationMode === 'SHARE', 'instanceIsolationMode must be SHARE: sessions share an instance');
  if (props.sessionAffinity === 'MCP_STREAMABLE') {
    const config = JSON.parse(String(props.sessionAffinityConfig)) as Record<string, number>;
    const perInstance = Number(config.sessionConcurrencyPerInstance);
    fail(
      Number.isInteger(perInstance) && perInstance >= 1 && perInstance <= 200,
      `sessionConcurrencyPerInstance ${perInstance}`,
    );
    fail(
      Number(config.sessionTTLInSeconds) >= 1 && Number(config.sessionTTLInSeconds) <= 21600,
      'sessionTTLInSeconds must be 1–21600',
    );
    fail(
      Number(config.sessionIdleTimeoutInSeconds) >= 0 && Number(config.sessionIdleTimeoutInSeconds) <= 21600,
      'sessionIdleTimeoutInSeconds must be 0–21600',
    );
    fail(perInstance <= props.instanceConcurrency, 'sessions per instance cannot exceed instanceConcurrency');
    for (const method of ['GET', 'POST', 'DELETE'])
      fail(trigger?.triggerConfig.methods.includes(method) === true, `affinity needs the trigger to allow ${method}`);
  }
  return problems;
}

/**
 * fc3's schema takes logConfig as the string `auto` or an object with string `project` and `logstore` (boolean
 * metrics switches, logBeginRule DefaultRegex or None). This server's s.yaml must also set it, with both names
 * filled: fc3 sends an empty logConfig when it is left out, and FC then keeps no logs.
 */
function checkLogConfig(logConfig: unknown): string[] {
  if (logConfig === undefined) return ["logConfig is missing: every s deploy would turn the function's logging off"];
  if (logConfig === 'auto') return [];
  // --no-logs states logging off in fc3's own empty form.
  const off = logConfig as Record<string, unknown> | null;
  if (off !== null && typeof off === 'object' && off.project === '' && off.logstore === '') return [];
  if (typeof logConfig !== 'object' || logConfig === null || Array.isArray(logConfig))
    return [`logConfig ${JSON.stringify(logConfig)} is neither auto nor {project, logstore}`];
  const config = logConfig as Record<string, unknown>;
  const problems: string[] = [];
  for (const name of ['project', 'logstore']) {
    if (typeof config[name] !== 'string' || config[name] === '')
      problems.push(`logConfig.${name} must be a non-empty string`);
  }
  for (const name of ['enableRequestMetrics', 'enableInstanceMetrics', 'enableLlmMetrics']) {
    if (config[name] !== undefined && typeof config[name] !== 'boolean')
      problems.push(`logConfig.${name} must be a boolean`);
  }
  if (config.logBeginRule !== undefined && config.logBeginRule !== 'DefaultRegex' && config.logBeginRule !== 'None')
    problems.push(`logConfig.logBeginRule ${String(config.logBeginRule)}`);
  return problems;
}
