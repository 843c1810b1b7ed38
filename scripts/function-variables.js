/**
 * The function's environment after a deploy through the API, and how it differs from the one FC has now. FC's
 * UpdateFunction replaces the whole environment, so what a deploy does not set is carried over from the function;
 * the diff is what `--deploy` (and `--deploy --dry-run`) shows, with secret values masked.
 */
'use strict';

const { randomBytes } = require('node:crypto');

const { OAUTH_AUTH_VARIABLES } = require('./oauth-settings');

/**
 * Variables whose presence the plan decides: a deploy sets them, or removes them, as its options say (keeping
 * `MCP_AUTH=none` from an open deploy would switch the tokens of the next one off).
 */
const PLAN_DECIDES = new Set([
  'MCP_AUTH',
  'MCP_AUTH_TOKEN_FILE',
  'MCP_FUNCTION_TIMEOUT_S',
  'MCP_TOOL_TIMEOUT_MAX_S',
  'MCP_SESSION_IDLE_TTL_S',
  'MCP_SESSION_MAX_AGE_S',
  'MCP_MAX_SESSIONS',
  'SANDBOX_BACKEND',
  'LOG_LEVEL',
  'PORT',
  'HOST',
]);

/**
 * What --no-auth drops from the function: the tokens, and the OAuth issuer with its audience and scopes, which the
 * server refuses beside MCP_AUTH=none.
 */
const DROPPED_WITHOUT_AUTH = new Set(['MCP_AUTH_TOKENS', ...OAUTH_AUTH_VARIABLES]);

/** Names whose values are shown masked even when the plan does not call them secret (the operator's own). */
const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|PRIVATE/i;

/**
 * @typedef {object} FunctionVariables
 * @property {Record<string, string>} variables the whole environment to send
 * @property {'environment' | 'kept' | 'generated'} sessionSecret where MCP_SESSION_SECRET came from
 * @property {string[]} kept names carried over from the function that nothing in this deploy gives
 */

/**
 * The function's variables with their values. Every variable of the existing function that this deploy does not
 * set is kept (the E2B key and domain, tokens, OAuth settings, the operator's own), except those the plan decides and
 * those named by --unset; the tokens and the OAuth issuer, audience and scopes go with --no-auth. MCP_SESSION_SECRET
 * from the shell, else the function's current one (so that sessions survive a re-deploy), else a new one.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, string | undefined>} shell values of plan.fromShell given now (empty means not given)
 * @param {Record<string, any> | undefined} existing the function as GetFunction returned it
 * @returns {FunctionVariables}
 */
function toVariables(plan, shell, existing) {
  /** @type {Record<string, string>} */
  const variables = {};
  for (const [name, value] of Object.entries(existing?.environmentVariables ?? {})) {
    if (typeof value !== 'string' || PLAN_DECIDES.has(name) || plan.unset.includes(name)) continue;
    if (DROPPED_WITHOUT_AUTH.has(name) && plan.auth !== 'bearer') continue;
    variables[name] = value;
  }
  const fromFunction = Object.keys(variables);
  Object.assign(variables, plan.environment);
  const current = existing?.environmentVariables?.MCP_SESSION_SECRET;
  /** @type {FunctionVariables['sessionSecret']} */
  let sessionSecret = 'generated';
  for (const { name } of plan.fromShell) {
    let value = shell[name] || undefined;
    if (name === 'MCP_SESSION_SECRET') {
      if (value) sessionSecret = 'environment';
      else if (typeof current === 'string' && current.length >= 32) [value, sessionSecret] = [current, 'kept'];
      else value = randomBytes(32).toString('base64url');
    }
    if (value) variables[name] = value;
  }
  const given = new Set([
    ...Object.keys(plan.environment),
    ...plan.fromShell.filter(({ name }) => shell[name]).map(({ name }) => name),
  ]);
  return { variables, sessionSecret, kept: fromFunction.filter((name) => !given.has(name)).sort() };
}

/**
 * One line per variable that is added, changed, removed or kept, secrets masked: values never leave this module.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, string>} before the function's environment now (empty for a new function)
 * @param {Record<string, string>} after what the deploy sends
 * @param {string[]} kept names carried over unchanged
 * @returns {string[]}
 */
function describeDiff(plan, before, after, kept) {
  const secret = new Set(plan.fromShell.filter((v) => v.secret).map((v) => v.name));
  const show = (/** @type {string} */ name, /** @type {string} */ value) =>
    secret.has(name) || SECRET_NAME.test(name) ? `<secret, ${value.length} characters>` : JSON.stringify(value);
  const lines = [];
  for (const name of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const [was, will] = [before[name], after[name]];
    if (was === undefined && will !== undefined) lines.push(`+ ${name}=${show(name, will)}`);
    else if (was !== undefined && will === undefined) lines.push(`- ${name} (removed)`);
    else if (was !== will) lines.push(`~ ${name}: ${show(name, String(was))} → ${show(name, String(will))}`);
    else if (kept.includes(name)) lines.push(`= ${name} (kept)`);
    else lines.push(`= ${name}`);
  }
  return lines;
}

module.exports = { toVariables, describeDiff, PLAN_DECIDES };
