/**
 * s.yaml for Serverless Devs (`s deploy`, component fc3). fc3 sends the function's whole configuration on every
 * `s deploy`, so whatever s.yaml leaves out or renders empty replaces what the function has: the variables from the
 * operator's shell are `${env(...)}` references that fail `s deploy` when a required one is unset, and logging is
 * always set.
 */
'use strict';

const { toDomainRoute, toFunctionConfig, toHttpTriggerConfig } = require('./fc-function-config');

/**
 * `${env(NAME)}` when required: `s` stops with "env('NAME') not found" when the shell lacks it, instead of sending
 * "" over the function's value (an empty E2B_API_KEY would move a live function to the local backend).
 * `${env('NAME', '')}` when optional: the server treats an empty E2B_API_URL or E2B_TEMPLATE as unset (the API URL
 * then follows E2B_DOMAIN, the template is code-interpreter-v1).
 * @param {import('./deploy-plan').ShellVariable} variable
 */
function toEnvReference(variable) {
  return variable.required ? `\${env(${variable.name})}` : `\${env('${variable.name}', '')}`;
}

/**
 * The whole s.yaml document.
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {{ codePath: string }} options where the code directory is, relative to s.yaml
 */
function toServerlessDevsYaml(plan, options) {
  /** @type {Record<string, string>} */
  const environmentVariables = { ...plan.environment };
  for (const variable of plan.fromShell) environmentVariables[variable.name] = toEnvReference(variable);
  // logConfig is set by --sls-project/--sls-logstore. Left out, fc3 would send an empty one and switch the function's
  // logging off on every deploy; `auto` keeps the SLS project and logstore the function logs to, or has fc3 create
  // them.
  const { description, logConfig = 'auto', ...config } = toFunctionConfig(plan, environmentVariables);
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
        logConfig,
        triggers: [
          {
            triggerName: plan.triggerName,
            triggerType: 'http',
            qualifier: 'LATEST',
            triggerConfig: toHttpTriggerConfig(plan),
          },
        ],
      },
    },
  };
  // The domain only when this run knows how it is served: fc3-domain sends protocol and certificate on every
  // `s deploy`, so a domain whose certificate only FC holds (--deploy kept it) is left to --deploy and the console.
  if (plan.customDomain !== undefined && plan.domainProtocol !== 'keep') {
    const certificate = plan.domainCertificate;
    resources.domain = {
      component: 'fc3-domain',
      props: {
        region: '${vars.region}',
        domainName: plan.customDomain,
        // fc3-domain reads certificate and privateKey from these files when it deploys: the key never enters s.yaml.
        ...(certificate === undefined
          ? { protocol: 'HTTP' }
          : {
              protocol: 'HTTPS',
              certConfig: {
                certName: certificate.certName,
                certificate: certificate.certFile,
                privateKey: certificate.keyFile,
              },
            }),
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
