/**
 * s.yaml for Serverless Devs (`s deploy`, component fc3; FACTS.md §8). Secrets are `${env(...)}` references that `s`
 * resolves from the operator's shell at deploy time: required ones fail `s deploy` when unset, optional ones
 * default to empty.
 */
'use strict';

const { toDomainRoute, toFunctionConfig, toHttpTriggerConfig } = require('./fc-function-config');

/**
 * `${env(NAME)}` (required) or `${env('NAME', '')}` (optional) for Serverless Devs.
 * @param {import('./deploy-plan').SecretVariable} secret
 */
function toEnvReference(secret) {
  return secret.required ? `\${env(${secret.name})}` : `\${env('${secret.name}', '')}`;
}

/**
 * The whole s.yaml document.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {{ codePath: string }} options where the code directory is, relative to s.yaml
 */
function toServerlessDevsYaml(plan, options) {
  /** @type {Record<string, string>} */
  const environmentVariables = { ...plan.environment };
  for (const secret of plan.secrets) environmentVariables[secret.name] = toEnvReference(secret);
  const { description, ...config } = toFunctionConfig(plan, environmentVariables);
  /** @type {Record<string, unknown>} */
  const resources = {
    mcp: {
      component: 'fc3',
      props: {
        region: '${vars.region}',
        functionName: '${vars.functionName}',
        description,
        code: options.codePath,
        ...config,
        triggers: [{ triggerName: plan.triggerName, triggerType: 'http', qualifier: 'LATEST', triggerConfig: toHttpTriggerConfig(plan) }],
      },
    },
  };
  if (plan.customDomain !== undefined) {
    resources.domain = {
      component: 'fc3-domain',
      props: {
        region: '${vars.region}',
        domainName: plan.customDomain,
        protocol: 'HTTP',
        routeConfig: { routes: [{ ...toDomainRoute(plan), functionName: '${vars.functionName}' }] },
      },
    };
  }
  return {
    edition: '3.0.0',
    name: plan.name,
    access: 'default',
    vars: { region: plan.region, functionName: plan.name },
    resources,
  };
}

module.exports = { toServerlessDevsYaml };
