/**
 * The server's OAuth resource-server settings as the deploy CLI gives them: --oauth-issuer, --public-url,
 * --oauth-audience and --oauth-scopes set MCP_OAUTH_ISSUER, MCP_PUBLIC_URL, MCP_OAUTH_AUDIENCE and MCP_OAUTH_SCOPES.
 * Their shapes are checked here the way functions/mcp/config-oauth.ts checks them when the server starts, so that
 * a deploy never leaves a function that refuses to start. None of them is a secret.
 */
'use strict';

const { MCP_PATH } = require('./fc-limits');
const { optionalString } = require('./option-values');

/** Each option (its yargs camelCase key) and the variable it sets. */
const OAUTH_OPTIONS = Object.freeze({
  oauthIssuer: { option: '--oauth-issuer', variable: 'MCP_OAUTH_ISSUER' },
  publicUrl: { option: '--public-url', variable: 'MCP_PUBLIC_URL' },
  oauthAudience: { option: '--oauth-audience', variable: 'MCP_OAUTH_AUDIENCE' },
  oauthScopes: { option: '--oauth-scopes', variable: 'MCP_OAUTH_SCOPES' },
});

/** The four variables, which the CLI sets itself (--env may not) and keeps on a re-deploy that does not give them. */
const OAUTH_VARIABLES = Object.freeze(Object.values(OAUTH_OPTIONS).map(({ variable }) => variable));

/**
 * The variables the server refuses beside MCP_AUTH=none (functions/mcp/config.ts, loadAuth; an audience or scopes
 * without an issuer are refused by config-oauth.ts): --no-auth drops them as it drops the tokens. MCP_PUBLIC_URL is
 * not among them: without an issuer the server ignores it.
 */
const OAUTH_AUTH_VARIABLES = Object.freeze(['MCP_OAUTH_ISSUER', 'MCP_OAUTH_AUDIENCE', 'MCP_OAUTH_SCOPES']);

/** RFC 6749 §3.3 scope-token, as config-oauth.ts has it: printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Hosts an `http://` issuer may have (config-oauth.ts): the issuer then runs on the same machine. */
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The OAuth variables this deploy sets, from the options; a problem for each bad value, naming its option.
 * --public-url defaults to the custom domain's origin when --oauth-issuer is given: the URL clients reach the server
 * at (scheme as deploy-report.js toUrlForm prints it). Otherwise a variable not given is left to the function.
 * @param {Record<string, unknown>} args parsed options (camelCase keys from yargs)
 * @param {string[]} problems
 * @returns {Record<string, string>}
 */
function planOAuth(args, problems) {
  const issuer = optionalString(args.oauthIssuer);
  const publicUrl = optionalString(args.publicUrl);
  const audience = optionalString(args.oauthAudience);
  const scopes = optionalString(args.oauthScopes);
  if (args.auth === false && [issuer, audience, scopes].some((value) => value !== undefined)) {
    problems.push('--no-auth conflicts with --oauth-issuer, --oauth-audience and --oauth-scopes: choose one');
  }
  if (issuer !== undefined) problems.push(...checkIssuer(issuer));
  if (publicUrl !== undefined) problems.push(...checkPublicUrl(publicUrl));
  if (scopes !== undefined) problems.push(...checkScopes(scopes));

  /** @type {Record<string, string>} */
  const environment = {};
  if (issuer !== undefined) environment.MCP_OAUTH_ISSUER = issuer;
  const origin = publicUrl ?? (issuer === undefined ? undefined : domainOrigin(args));
  if (origin !== undefined) environment.MCP_PUBLIC_URL = origin;
  if (audience !== undefined) environment.MCP_OAUTH_AUDIENCE = audience;
  // One space between scopes: the server splits on any white space, and the diff then shows them plainly.
  if (scopes !== undefined) environment.MCP_OAUTH_SCOPES = scopes.split(/\s+/).join(' ');
  return environment;
}

/**
 * `https://<custom domain>` (`http://` with --domain-http-only), or undefined without a domain.
 * @param {Record<string, unknown>} args
 */
function domainOrigin(args) {
  const domain = optionalString(args.customDomain);
  if (domain === undefined) return undefined;
  return `${args.domainHttpOnly === true ? 'http' : 'https'}://${domain}`;
}

/**
 * An https URL, or http on a loopback host, without query or fragment. Kept exactly as given: tokens' `iss` must
 * equal it.
 * @param {string} issuer
 * @returns {string[]}
 */
function checkIssuer(issuer) {
  const url = parseUrl(issuer);
  if (url === undefined || url.search !== '' || url.hash !== '') {
    return [`--oauth-issuer "${issuer}" must be an https URL without query or fragment, e.g. https://auth.example.com`];
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_NAMES.has(url.hostname))) {
    return [`--oauth-issuer "${issuer}" must use https (http only for an issuer on 127.0.0.1, localhost or [::1])`];
  }
  return [];
}

/**
 * An origin: http(s), no path, query, fragment or credentials.
 * @param {string} publicUrl
 * @returns {string[]}
 */
function checkPublicUrl(publicUrl) {
  const url = parseUrl(publicUrl);
  const origin =
    url !== undefined &&
    (url.protocol === 'https:' || url.protocol === 'http:') &&
    url.pathname === '/' &&
    url.search === '' &&
    url.hash === '' &&
    url.username === '' &&
    url.password === '';
  if (origin) return [];
  return [
    `--public-url "${publicUrl}" must be an origin such as https://mcp.example.com, without a path, query or ` +
      `credentials (the resource is <public-url>${MCP_PATH})`,
  ];
}

/**
 * Scope names separated by spaces, each a scope-token.
 * @param {string} scopes
 * @returns {string[]}
 */
function checkScopes(scopes) {
  if (scopes.split(/\s+/).every((scope) => SCOPE_TOKEN.test(scope))) return [];
  return [
    `--oauth-scopes ${JSON.stringify(scopes)} must be scope names separated by spaces, without quotes or backslashes`,
  ];
}

/**
 * What the function's whole environment must hold for the server to start (config-oauth.ts): an issuer needs a
 * public URL, an audience or scopes need an issuer. Checked on what a deploy sends, kept variables included, so that
 * an --unset cannot leave half a configuration either.
 * @param {Record<string, string>} variables
 * @returns {string[]}
 */
function checkOAuthVariables(variables) {
  const problems = [];
  // As the server reads them: a blank value is an unset one.
  const issuer = (variables.MCP_OAUTH_ISSUER ?? '').trim() !== '';
  if (issuer && (variables.MCP_PUBLIC_URL ?? '').trim() === '') {
    problems.push(
      "--oauth-issuer (MCP_OAUTH_ISSUER) needs the server's public URL (MCP_PUBLIC_URL), which names the " +
        'resource its tokens are for; ' +
        'the FC trigger URL is not known before the function exists: pass --public-url https://mcp.example.com, ' +
        'or --custom-domain DOMAIN (the public URL is then https://DOMAIN)',
    );
  }
  for (const key of /** @type {const} */ (['oauthAudience', 'oauthScopes'])) {
    const { option, variable } = OAUTH_OPTIONS[key];
    if (!issuer && (variables[variable] ?? '').trim() !== '') {
      problems.push(
        `${option} (${variable}) needs --oauth-issuer (MCP_OAUTH_ISSUER), or the server refuses to start: pass ` +
          `--oauth-issuer URL, or --unset ${variable}`,
      );
    }
  }
  return problems;
}

/**
 * The OAuth the function will have, for the report: its issuer and the resource its tokens are for.
 * @param {Record<string, string>} variables
 * @returns {{ issuer: string, resource: string } | undefined}
 */
function describeOAuth(variables) {
  const issuer = variables.MCP_OAUTH_ISSUER?.trim();
  const publicUrl = variables.MCP_PUBLIC_URL?.trim();
  if (!issuer || !publicUrl) return undefined;
  return { issuer, resource: `${publicUrl.replace(/\/$/, '')}${MCP_PATH}` };
}

/** @param {string} value */
function parseUrl(value) {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

module.exports = { planOAuth, checkOAuthVariables, describeOAuth, OAUTH_VARIABLES, OAUTH_AUTH_VARIABLES };
