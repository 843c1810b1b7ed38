/**
 * The parser factory: builds the yargs instance for the deploy CLI and never parses, so that building it has no
 * effect of its own. Only deploy.js parses, and decides the exit code.
 */
'use strict';

const { resolve } = require('node:path');
const yargs = require('yargs/yargs');

const { UsageError } = require('./deploy-errors');
const { createDeployCommand } = require('./deploy-command');
const { CREDENTIALS_HELP } = require('./fc-credentials');

/**
 * @param {string[]} argv the arguments after `node scripts/deploy.js`
 * @param {Partial<import('./run-deploy').RunContext>} [context] the outside world; what is left out is this process's
 */
function buildCli(argv, context = {}) {
  /** @type {import('./run-deploy').RunContext} */
  const ctx = {
    stdout: context.stdout ?? process.stdout,
    stderr: context.stderr ?? process.stderr,
    env: context.env ?? process.env,
    cwd: context.cwd ?? process.cwd(),
    root: context.root ?? resolve(__dirname, '..'),
  };
  // One default command rather than .demandCommand(1): docs/deploy-fc.md's form is `node scripts/deploy.js
  // --output-dir DIR`.
  return yargs(argv)
    .scriptName('node scripts/deploy.js')
    .usage('Usage: $0 [options]')
    .command(createDeployCommand(ctx))
    .strict()
    .exitProcess(false)
    .wrap(Math.min(120, process.stdout.columns || 120))
    .epilogue(
      'Exit codes: 0 done, 1 failed (an FC API error or a failed step), 2 usage (a bad option; nothing was ' +
        'written or changed).\n' +
        'Secrets are read from the environment, never from options: MCP_AUTH_TOKENS, MCP_SESSION_SECRET, ' +
        'E2B_API_KEY; with --deploy, what the function already has is kept.\n' +
        CREDENTIALS_HELP,
    )
    .help()
    .version(false)
    .fail((message, err) => {
      throw err ?? new UsageError([message]);
    });
}

module.exports = { buildCli };
