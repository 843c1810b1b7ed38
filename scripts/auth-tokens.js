/**
 * Where the function's bearer tokens come from: a generated token kept in <output-dir>/auth-token (0600), a token
 * file, or MCP_AUTH_TOKENS in the environment. Tokens never reach config.yaml or s.yaml.
 */
'use strict';

const { randomBytes } = require('node:crypto');
const { chmodSync, existsSync, readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

/** The file a generated token is kept in, inside the output directory. */
const TOKEN_FILE_NAME = 'auth-token';
/** Tokens shorter than this are weak (the server warns about them too). */
const MIN_TOKEN_LENGTH = 16;

/**
 * @typedef {object} AuthChoice
 * @property {'bearer' | 'none'} mode
 * @property {'generated' | 'file' | 'env' | 'missing' | 'kept' | 'none'} source kept: none given, the function's own
 * (--deploy)
 * @property {string[]} tokens known now (empty for a token still to generate, or when missing)
 * @property {string | undefined} file the token file (given, or <output-dir>/auth-token)
 */

/**
 * Decides the auth mode and reads the tokens; reports conflicts and unreadable files as problems.
 * @param {{ auth: boolean, generateToken: boolean, authTokenFile?: string, outputDir: string }} args
 * @param {Record<string, string | undefined>} env
 * @returns {{ choice: AuthChoice, problems: string[], warnings: string[] }}
 */
function resolveAuth(args, env) {
  /** @type {string[]} */
  const problems = [];
  /** @type {string[]} */
  const warnings = [];
  if (!args.auth) {
    if (args.generateToken || args.authTokenFile !== undefined)
      problems.push('--no-auth conflicts with --generate-token and --auth-token-file: choose one');
    warnings.push('--no-auth: anyone who finds the URL can run commands in the sandboxes');
    return { choice: { mode: 'none', source: 'none', tokens: [], file: undefined }, problems, warnings };
  }
  if (args.generateToken && args.authTokenFile !== undefined)
    problems.push('--generate-token conflicts with --auth-token-file: choose one');
  if (args.generateToken) {
    const file = join(args.outputDir, TOKEN_FILE_NAME);
    const tokens = existsSync(file) ? parseTokens(readFileSync(file, 'utf8')) : [];
    return { choice: { mode: 'bearer', source: 'generated', tokens, file }, problems, warnings };
  }
  if (args.authTokenFile !== undefined) {
    /** @type {string[]} */
    let tokens = [];
    try {
      tokens = parseTokens(readFileSync(args.authTokenFile, 'utf8'));
      if (tokens.length === 0)
        problems.push(`--auth-token-file ${args.authTokenFile} holds no token: put one token a line`);
    } catch (err) {
      problems.push(`--auth-token-file ${args.authTokenFile} cannot be read (${errnoCode(err)})`);
    }
    checkTokens(tokens, '--auth-token-file', problems, warnings);
    return { choice: { mode: 'bearer', source: 'file', tokens, file: args.authTokenFile }, problems, warnings };
  }
  const fromEnv = parseTokens(env.MCP_AUTH_TOKENS ?? '');
  checkTokens(fromEnv, 'MCP_AUTH_TOKENS', problems, warnings);
  return {
    choice: { mode: 'bearer', source: fromEnv.length > 0 ? 'env' : 'missing', tokens: fromEnv, file: undefined },
    problems,
    warnings,
  };
}

/**
 * Makes sure a generated token exists: reuses <output-dir>/auth-token, or writes a new one with mode 0600.
 * @param {string} file
 * @returns {{ token: string, created: boolean }}
 */
function ensureGeneratedToken(file) {
  if (existsSync(file)) {
    const [token] = parseTokens(readFileSync(file, 'utf8'));
    if (token !== undefined) {
      chmodSync(file, 0o600);
      return { token, created: false };
    }
  }
  const token = randomBytes(32).toString('hex');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, created: true };
}

/**
 * One token a line; blank lines, `#` comments and commas are separators.
 * @param {string} text
 * @returns {string[]}
 */
function parseTokens(text) {
  return text
    .split(/[,\n]/)
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line.length > 0);
}

/**
 * @param {string[]} tokens
 * @param {string} source
 * @param {string[]} problems
 * @param {string[]} warnings
 */
function checkTokens(tokens, source, problems, warnings) {
  if (tokens.some((t) => !/^[\x21-\x7e]+$/.test(t)))
    problems.push(`${source}: tokens must be visible ASCII without spaces (one is not; it is not shown here)`);
  if (tokens.some((t) => t.length < MIN_TOKEN_LENGTH))
    warnings.push(
      `${source}: a token is shorter than ${MIN_TOKEN_LENGTH} characters; use long random tokens (openssl rand ` +
        `-hex 32)`,
    );
}

/** @param {unknown} err */
function errnoCode(err) {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : 'unreadable';
}

module.exports = { resolveAuth, ensureGeneratedToken };
