/**
 * The CLI's one command (the default, `$0`): write the artifact and, with --deploy, deploy it.
 */
'use strict';

const { DEPLOY_OPTIONS, EXAMPLES } = require('./deploy-options');
const { runDeploy } = require('./run-deploy');

/**
 * @param {import('./run-deploy').RunContext} context
 * @returns {import('yargs').CommandModule}
 */
function createDeployCommand(context) {
  return {
    command: '$0',
    describe:
      'Write a deployable Function Compute artifact (code/, code.zip, config.yaml, s.yaml) and print the manual ' +
      'steps; with --deploy, also deploy it through the FC API',
    builder: (yargs) => {
      let y = yargs.options(DEPLOY_OPTIONS);
      for (const [command, description] of EXAMPLES) y = y.example(command, description);
      return y;
    },
    handler: (args) => runDeploy(args, context),
  };
}

module.exports = { createDeployCommand };
