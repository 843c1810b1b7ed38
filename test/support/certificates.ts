/**
 * Self-signed certificates for the custom-domain tests, made by openssl for each run (the deploy CLI checks that a
 * certificate names its domain, is valid, and matches its key).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export interface Pem {
  cert: string;
  key: string;
}

/** A self-signed certificate for `name` (P-256), valid for `days`, as files. */
export function makeCertificate(dir: string, name: string, days = 30): Pem {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-addext',
      `subjectAltName=DNS:${name}`,
      '-days',
      String(days),
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}
