/**
 * The custom domain of a plan: served over HTTPS with the given certificate, over HTTP on purpose, or (no option)
 * with the HTTPS certificate the existing domain has, which --deploy checks once it has read the domain.
 */
'use strict';

const { resolve } = require('node:path');

const { readDomainCertificate } = require('./domain-certificate');
const { optionalString } = require('./option-values');

/**
 * The custom domain and how it is served: HTTPS with the given certificate, HTTP only on purpose, or, with neither,
 * the existing domain's HTTPS certificate (checked by checkAgainstDomain).
 * @param {Record<string, unknown>} args
 * @param {string[]} problems
 * @param {string[]} warnings
 */
function planDomain(args, problems, warnings) {
  const customDomain = optionalString(args.customDomain);
  const certFile = optionalString(args.domainCert);
  const keyFile = optionalString(args.domainKey);
  const certId = optionalString(args.domainCertId);
  const httpOnly = args.domainHttpOnly === true;
  const none = { customDomain, protocol: undefined, certificate: undefined, certConfig: undefined };
  if (customDomain === undefined) {
    if (certFile !== undefined || keyFile !== undefined || certId !== undefined || httpOnly)
      problems.push('--domain-cert, --domain-key, --domain-cert-id and --domain-http-only go with --custom-domain');
    return none;
  }
  if (certId !== undefined) {
    if (certFile !== undefined || keyFile !== undefined || httpOnly)
      problems.push('--domain-cert-id conflicts with --domain-cert, --domain-key and --domain-http-only: choose one');
    if (!/^\d{1,20}$/.test(certId))
      problems.push(`--domain-cert-id "${certId}" must be the numeric id of a certificate in the certificate service`);
    // --deploy reads the certificate and its key from the certificate service (run-deploy.js); s.yaml names the id.
    return { ...none, protocol: /** @type {const} */ ('https'), certificate: { certId } };
  }
  if (httpOnly) {
    if (certFile !== undefined || keyFile !== undefined)
      problems.push('--domain-http-only conflicts with --domain-cert and --domain-key: choose one');
    warnings.push(
      `--domain-http-only: ${customDomain} is served over plain HTTP, so bearer tokens cross the network in clear text`,
    );
    return { ...none, protocol: /** @type {const} */ ('http-only') };
  }
  if (certFile === undefined && keyFile === undefined) return { ...none, protocol: /** @type {const} */ ('keep') };
  if (certFile === undefined || keyFile === undefined) {
    problems.push('--domain-cert and --domain-key go together: the certificate and its private key, both PEM files');
    return none;
  }
  const read = readDomainCertificate({ certFile, keyFile, domain: customDomain });
  problems.push(...read.problems);
  warnings.push(...read.warnings);
  const certificate =
    read.certConfig === undefined
      ? undefined
      : { certName: read.certConfig.certName, certFile: resolve(certFile), keyFile: resolve(keyFile) };
  return { customDomain, protocol: /** @type {const} */ ('https'), certificate, certConfig: read.certConfig };
}

/**
 * What a deploy through the API refuses once it has looked the custom domain up: no certificate given, and none on
 * the domain to keep (a new domain, or one served over HTTP).
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Record<string, any> | undefined} existingDomain
 * @returns {string[]}
 */
function checkAgainstDomain(plan, existingDomain) {
  if (plan.domainProtocol !== 'keep' || hasHttps(existingDomain)) return [];
  return [
    `--custom-domain ${plan.customDomain} ` +
      `${existingDomain === undefined ? 'is new' : 'has no HTTPS certificate'}: pass --domain-cert FILE and ` +
      `--domain-key FILE, or --domain-http-only to serve it over HTTP on purpose`,
  ];
}

/**
 * Whether FC serves the domain over HTTPS with a certificate.
 * @param {Record<string, any> | undefined} domain as GetCustomDomain returns it
 */
function hasHttps(domain) {
  return (
    String(domain?.protocol ?? '').includes('HTTPS') &&
    typeof domain?.certConfig?.certificate === 'string' &&
    domain.certConfig.certificate !== ''
  );
}

module.exports = { planDomain, checkAgainstDomain };
