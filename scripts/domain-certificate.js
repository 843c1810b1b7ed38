/**
 * The custom domain's HTTPS certificate from PEM files (--domain-cert, --domain-key), checked here so that FC is
 * never sent a pair it would refuse, or one clients would: the key must match the certificate, the certificate must
 * name the domain and still be valid.
 */
'use strict';

const { X509Certificate, createHash, createPrivateKey } = require('node:crypto');
const { readFileSync } = require('node:fs');

/** Certificates that end within this many days get a warning. */
const EXPIRY_WARNING_DAYS = 14;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * @typedef {object} CertConfig FC's certConfig of a custom domain
 * @property {string} certName
 * @property {string} certificate PEM
 * @property {string} privateKey PEM
 */

/**
 * Reads and checks the pair; problems and warnings never hold key material.
 * @param {{ certFile: string, keyFile: string, domain: string, now?: Date }} options
 * @returns {{ certConfig: CertConfig | undefined, problems: string[], warnings: string[] }}
 */
function readDomainCertificate({ certFile, keyFile, domain, now = new Date() }) {
  /** @type {string[]} */
  const problems = [];
  const certificate = readPem(certFile, '--domain-cert', problems);
  const privateKey = readPem(keyFile, '--domain-key', problems);
  if (certificate === undefined || privateKey === undefined) return { certConfig: undefined, problems, warnings: [] };
  return checkCertificatePair({
    certificate,
    privateKey,
    domain,
    now,
    certLabel: `--domain-cert ${certFile}`,
    keyLabel: `--domain-key ${keyFile}`,
    inCert: `the certificate in ${certFile}`,
  });
}

/**
 * Checks a certificate (chain) and its key, from files or from the certificate service, for `domain`.
 * @param {{ certificate: string, privateKey: string, domain: string, now: Date, certLabel: string, keyLabel: string,
 *   inCert: string }} pair the labels name where each came from, for the problems
 * @returns {{ certConfig: CertConfig | undefined, problems: string[], warnings: string[] }}
 */
function checkCertificatePair({ certificate, privateKey, domain, now, certLabel, keyLabel, inCert }) {
  /** @type {string[]} */
  const problems = [];
  /** @type {string[]} */
  const warnings = [];
  let cert;
  let key;
  try {
    cert = new X509Certificate(certificate);
  } catch {
    problems.push(`${certLabel} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  }
  try {
    key = createPrivateKey(privateKey);
  } catch {
    problems.push(`${keyLabel} holds no unencrypted PEM private key`);
  }
  if (cert === undefined || key === undefined) return { certConfig: undefined, problems, warnings };

  if (!cert.checkPrivateKey(key)) problems.push(`${keyLabel} is not the private key of ${inCert}`);
  if (cert.checkHost(domain) === undefined)
    problems.push(`${inCert} does not name ${domain} (it is for ${cert.subjectAltName ?? cert.subject})`);
  const validTo = new Date(cert.validTo);
  const validFrom = new Date(cert.validFrom);
  if (validTo <= now) problems.push(`${inCert} expired on ${validTo.toISOString()}`);
  else if (validFrom > now) problems.push(`${inCert} is not valid before ${validFrom.toISOString()}`);
  else if (validTo.getTime() - now.getTime() < EXPIRY_WARNING_DAYS * DAY_MS)
    warnings.push(`the certificate of ${domain} expires on ${validTo.toISOString()}: renew it and re-deploy`);
  if (problems.length > 0) return { certConfig: undefined, problems, warnings };

  // A name per certificate: a renewed one replaces the old under a new name, and the name says which it is.
  const fingerprint = createHash('sha256').update(cert.raw).digest('hex').slice(0, 12);
  const certName = `${domain.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 48)}-${fingerprint}`;
  return {
    certConfig: { certName, certificate: certificate.trim(), privateKey: privateKey.trim() },
    problems,
    warnings,
  };
}

/**
 * @param {string} file
 * @param {string} option
 * @param {string[]} problems
 */
function readPem(file, option, problems) {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    problems.push(`${option} ${file} cannot be read (${/** @type {NodeJS.ErrnoException} */ (err).code ?? 'error'})`);
    return undefined;
  }
}

module.exports = { readDomainCertificate, checkCertificatePair };
