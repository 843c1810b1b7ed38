/**
 * --domain-cert-id: a certificate kept in Alibaba Cloud's certificate service, read with its private key by id and
 * checked as a PEM pair from files is (domain-certificate.js) before FC is sent it. fc3-domain reads it the same way
 * for `certConfig: { certId }` in s.yaml.
 */
'use strict';

const { DeployError } = require('./deploy-errors');
const { checkCertificatePair } = require('./domain-certificate');

/** The certificate service's API that returns a certificate and its key by id. */
const ACTION = 'GetUserCertificateDetail';
const API_VERSION = '2020-04-07';

/**
 * @param {{ call: <T>(what: string, fn: () => Promise<T>) => Promise<T>, rpc: import('./aliyun-rpc').RpcCall,
 *   certId: string, domain: string, step: (line: string) => void, now?: Date }} options
 * @returns {Promise<{ certConfig: import('./domain-certificate').CertConfig, warnings: string[] }>}
 */
async function readServiceCertificate({ call, rpc, certId, domain, step, now = new Date() }) {
  step(`Reading certificate ${certId} from the certificate service…`);
  const detail = await call(ACTION, () => rpc(ACTION, API_VERSION, { CertId: certId }));
  const certificate = typeof detail.Cert === 'string' ? detail.Cert : '';
  const privateKey = typeof detail.Key === 'string' ? detail.Key : '';
  const label = `certificate ${certId} of the certificate service`;
  const checked = checkCertificatePair({
    certificate,
    privateKey,
    domain,
    now,
    certLabel: label,
    keyLabel: `the private key of ${label}`,
    inCert: label,
  });
  if (checked.certConfig === undefined) {
    throw new DeployError(`--domain-cert-id ${certId}: ${checked.problems.join('; ')}`, {
      step: ACTION,
      hint:
        'Upload the certificate with its private key to the certificate service (a certificate whose key stays ' +
        'with Alibaba Cloud cannot be exported to FC), or pass --domain-cert and --domain-key.',
    });
  }
  return { certConfig: checked.certConfig, warnings: checked.warnings };
}

module.exports = { readServiceCertificate };
