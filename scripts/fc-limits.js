/**
 * What Function Compute 3.0 accepts and what the server needs from it: runtimes, sizes, ranges.
 * Pure data; validate-plan.js applies it.
 */
'use strict';

/**
 * Runtimes this CLI knows (docs/platform-facts.md, "Runtimes and their Node"). `custom`: an HTTP-server runtime that
 * can hold MCP session affinity (built-in runtimes run one request per instance, so FC limits them to one session).
 * `nodePath`: the Node it runs the bundle on, when known; `layer`: FC's official layer that puts it there (its ARN is
 * per region: officialLayerArn); `node`: that Node's version, which test/deploy/bundle-node.test.ts boots the bundle
 * on; `endOfLife`: said when it is chosen.
 */
const RUNTIMES = Object.freeze({
  'custom.debian12': {
    custom: true,
    nodePath: '/opt/nodejs22/bin/node',
    layer: 'Nodejs22/versions/3',
    node: '22.23.2',
  },
  'custom.debian10': {
    custom: true,
    nodePath: '/var/fc/lang/nodejs20/bin/node',
    layer: undefined,
    node: '20.10.0',
    endOfLife: 'Node 20 reached its end of life on 2026-04-30',
  },
  'custom.debian11': { custom: true, nodePath: undefined, layer: undefined, node: undefined },
  custom: { custom: true, nodePath: undefined, layer: undefined, node: undefined },
  nodejs20: { custom: false, nodePath: undefined, layer: undefined, node: undefined },
  nodejs18: { custom: false, nodePath: undefined, layer: undefined, node: undefined },
  'python3.10': { custom: false, nodePath: undefined, layer: undefined, node: undefined },
  'python3.12': { custom: false, nodePath: undefined, layer: undefined, node: undefined },
});

/** Debian 12 with FC's official Node 22 layer (22.23.2). */
const DEFAULT_RUNTIME = 'custom.debian12';

/**
 * What this CLI knows of a runtime, or undefined for one it does not know.
 * @param {string} name
 */
function runtimeOf(name) {
  return Object.hasOwn(RUNTIMES, name) ? RUNTIMES[/** @type {keyof typeof RUNTIMES} */ (name)] : undefined;
}

/**
 * The ARN of one of FC's official layers in a region.
 * @param {string} region
 * @param {string} layer e.g. Nodejs22/versions/3
 */
function officialLayerArn(region, layer) {
  return `acs:fc:${region}:official:layers/${layer}`;
}

/** Where FC unpacks the code, and the file the bundle becomes there. */
const CODE_DIR = '/code';
const ENTRY_FILE = 'index.js';
/** The port FC sends requests to (FC_CUSTOM_LISTEN_PORT). */
const LISTEN_PORT = 9000;
/** The server's paths that FC calls. */
const HEALTH_PATH = '/health';
const MCP_PATH = '/mcp';
/** Lifecycle hooks of a custom runtime: FC calls these paths when the hook is configured (Initializer ≤ 300 s, PreStop
 * ≤ 90 s). */
const HOOKS = Object.freeze({
  initializer: { method: 'POST', path: '/initialize', timeoutS: 30 },
  preStop: { method: 'GET', path: '/pre-stop', timeoutS: 10 },
});

/** Time kept between the longest tool call and the function timeout (functions/mcp/config.ts enforces the same). */
const FUNCTION_TIMEOUT_MARGIN_S = 10;
/** The server's own cap on tool timeouts. */
const TOOL_TIMEOUT_MAX_S = 300;
/** FC fixes instance concurrency at 200 with MCP affinity; the same is the API's maximum. */
const INSTANCE_CONCURRENCY = 200;
/** Sessions per instance (sessionConcurrencyPerInstance) and the affinity TTLs FC accepts. */
const SESSION_CONCURRENCY_RANGE = Object.freeze({ min: 1, max: 200 });
const SESSION_TTL_MAX_S = 21_600;
/** Memory: a multiple of 64 MB in 128–32768; vCPU 0.05–16 in steps of 0.05; memory (GB) 1–4 × the vCPUs. */
const MEMORY_MB = Object.freeze({ min: 128, max: 32_768, step: 64 });
const CPU = Object.freeze({ min: 0.05, max: 16, step: 0.05 });
const MEMORY_GB_PER_CPU = Object.freeze({ min: 1, max: 4 });
const DISK_MB = 512;
/** All user environment variables together, names and values. */
const ENV_MAX_BYTES = 4096;
/** Function names: letters, digits, `_` and `-`, starting with a letter or `_`, 1–64 characters. */
const FUNCTION_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
/** The HTTP methods an FC HTTP trigger can allow; MCP session affinity needs GET, POST and DELETE. */
const HTTP_METHODS = Object.freeze(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
const AFFINITY_METHODS = Object.freeze(['GET', 'POST', 'DELETE']);
/** Those, OPTIONS for browsers' preflights, and PUT and HEAD for the server's file URLs (docs/files.md). */
const DEFAULT_TRIGGER_METHODS = Object.freeze(['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS']);
const TRIGGER_NAME = 'mcp';

module.exports = {
  RUNTIMES,
  DEFAULT_RUNTIME,
  runtimeOf,
  officialLayerArn,
  CODE_DIR,
  ENTRY_FILE,
  LISTEN_PORT,
  HEALTH_PATH,
  MCP_PATH,
  HOOKS,
  FUNCTION_TIMEOUT_MARGIN_S,
  TOOL_TIMEOUT_MAX_S,
  INSTANCE_CONCURRENCY,
  SESSION_CONCURRENCY_RANGE,
  SESSION_TTL_MAX_S,
  MEMORY_MB,
  CPU,
  MEMORY_GB_PER_CPU,
  DISK_MB,
  ENV_MAX_BYTES,
  FUNCTION_NAME_PATTERN,
  HTTP_METHODS,
  AFFINITY_METHODS,
  DEFAULT_TRIGGER_METHODS,
  TRIGGER_NAME,
};
