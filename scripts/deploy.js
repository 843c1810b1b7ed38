#!/usr/bin/env node
/**
 * `node scripts/deploy.js`: deploy the MCP server to Alibaba Cloud Function Compute (see --help and docs/deploy-fc.md).
 * The only file that parses the command line and sets the exit code: 0 done, 1 failed, 2 usage.
 */
'use strict';

const { buildCli } = require('./cli');
const { DeployError, UsageError, describeError } = require('./deploy-errors');

const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

async function main() {
  const argv = process.argv.slice(2);
  const json = argv.includes('--json');
  try {
    await buildCli(argv).parseAsync();
  } catch (err) {
    const usage = err instanceof UsageError;
    process.exitCode = usage ? EXIT_USAGE : EXIT_FAILED;
    if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: toErrorJson(err) }, null, 2)}\n`);
    process.stderr.write(`${toErrorText(err)}\n`);
  }
}

/** @param {unknown} err */
function toErrorJson(err) {
  if (err instanceof UsageError) return { kind: 'usage', message: err.message, problems: err.problems };
  if (err instanceof DeployError) {
    return {
      kind: 'deploy',
      message: err.message,
      step: err.step ?? null,
      code: err.code ?? null,
      requestId: err.requestId ?? null,
      hint: err.hint ?? null,
    };
  }
  return { kind: 'internal', message: describeError(err) };
}

/** @param {unknown} err */
function toErrorText(err) {
  if (err instanceof UsageError) return `error: ${err.message}\nRun node scripts/deploy.js --help for the options.`;
  if (err instanceof DeployError) {
    return [
      `error: ${err.message}`,
      err.requestId && `  request id: ${err.requestId}`,
      err.hint && `  what to do: ${err.hint}`,
    ]
      .filter(Boolean)
      .join('\n');
  }
  return `error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
}

void main();
