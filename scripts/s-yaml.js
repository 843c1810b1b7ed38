/**
 * s.yaml for Serverless Devs (`s deploy`, component fc3). fc3 sends the function's whole configuration on every
 * `s deploy`, so whatever s.yaml leaves out or renders empty replaces what the function has: every field is stated
 * (fc-function-config.js), the variables from the operator's shell are `${env(...)}` references that fail `s deploy`
 * when a required one is unset, and logs, NAS and VPC left to fc3 are `auto` (the function's current ones, or new).
 */
'use strict';

const {
  toDomainRoute,
  toFunctionConfig,
  toHttpTriggerConfig,
  toLogPlacement,
  toStatePlacement,
  toTlsConfig,
} = require('./fc-function-config');

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
  const { description, layers, ...config } = toFunctionConfig(plan, environmentVariables, toPlacement(plan));
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
        layers: layers.map((arn) => arn.replace(`acs:fc:${plan.region}:`, 'acs:fc:${vars.region}:')),
        triggers: [
          {
            triggerName: plan.triggerName,
            triggerType: 'http',
            qualifier: plan.alias,
            triggerConfig: toHttpTriggerConfig(plan),
          },
        ],
        // fc3 removes a scaling or concurrency config s.yaml leaves out, as --deploy does.
        ...(plan.minInstances > 0 && { scalingConfig: { qualifier: plan.alias, minInstances: plan.minInstances } }),
        ...(plan.maxConcurrency !== undefined && { concurrencyConfig: { reservedConcurrency: plan.maxConcurrency } }),
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
              // fc3-domain reads a certificate of the certificate service by its id, with the deploy's credentials.
              certConfig:
                'certId' in certificate
                  ? { certId: Number(certificate.certId) }
                  : {
                      certName: certificate.certName,
                      certificate: certificate.certFile,
                      privateKey: certificate.keyFile,
                    },
              tlsConfig: toTlsConfig(),
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

/**
 * Logs, NAS and VPC in fc3's terms: what the plan gives, else `auto`, which fc3 resolves to the function's current
 * ones (or creates: an SLS project and logstore; a NAS file system, its mount target and a VPC).
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @returns {import('./fc-function-config').Placement}
 */
function toPlacement(plan) {
  const { nas } = plan.state;
  const logConfig =
    plan.logConfig === undefined && plan.logs
      ? 'auto'
      : /** @type {Record<string, unknown>} */ (toLogPlacement(plan, undefined));
  if (nas.mode === 'auto') return { logConfig, nasConfig: `auto|mountDir=${nas.mountDir}`, vpcConfig: 'auto' };
  return { logConfig, ...toStatePlacement(plan, undefined) };
}

module.exports = { toServerlessDevsYaml };
