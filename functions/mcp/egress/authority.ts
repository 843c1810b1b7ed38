/**
 * A sandbox's own certificate authority, so the egress proxy can read the HTTPS requests it adds a secret to
 * (secret-injection.ts): the proxy ends the sandbox's TLS with a certificate for the host that this authority
 * issues, and only that sandbox trusts it (its trust bundle, sandbox/local/sandbox-egress.ts).
 *
 * The authority can do no more than that. Its key is made in memory when the sandbox's supervisor starts and never
 * leaves the server; it is name-constrained (RFC 5280, 4.2.1.10) to the hosts that have a secret for the sandbox,
 * so no client that checks constraints (OpenSSL, GnuTLS, Go, browsers) accepts it for any other name; and a new
 * one replaces it at every start. Certificates are ECDSA P-256 with SHA-256, made with Node's own crypto and
 * der.ts, without a library.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';

import {
  bitString,
  boolean,
  explicit,
  implicit,
  implicitConstructed,
  objectId,
  octetString,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from './der';

/** How long a certificate is valid: longer than a supervisor lives between wakes; an hour back for clock skew. */
const VALID_DAYS = 90;
const SKEW_MS = 60 * 60 * 1000;
/** The most host certificates kept per authority (a wildcard host has any number of names). */
const MAX_CACHED = 64;

const ECDSA_WITH_SHA256 = sequence(objectId('1.2.840.10045.4.3.2'));

export interface SandboxAuthority {
  /** The authority's certificate (PEM), for the sandbox's trust bundle. */
  readonly certificatePem: string;
  /** A TLS server context with a certificate for `host` that this authority signed. */
  contextFor(host: string): SecureContext;
}

/**
 * A new authority for `sandboxId`, constrained to `domains` (each a DNS name, which with its subdomains is all
 * the authority may certify).
 */
export function createAuthority(sandboxId: string, domains: readonly string[], now = new Date()): SandboxAuthority {
  // An empty list of permitted names is no constraint at all to OpenSSL: such an authority could certify any name.
  if (domains.length === 0) throw new Error('a sandbox authority needs at least one domain to be constrained to');
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const leafKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const notBefore = new Date(now.getTime() - SKEW_MS);
  const notAfter = new Date(now.getTime() + VALID_DAYS * 24 * 60 * 60 * 1000);
  const issuer = nameOf(`sandbox ${sandboxId} egress authority`);
  const caKeyId = keyIdOf(caKeys.publicKey);
  const caDer = certificate({
    issuer,
    subject: issuer,
    subjectKey: caKeys.publicKey,
    signingKey: caKeys.privateKey,
    notBefore,
    notAfter,
    extensions: [
      extension('2.5.29.19', true, sequence(boolean(true), smallInteger(0))),
      // keyCertSign and cRLSign: bits 5 and 6, one unused bit.
      extension('2.5.29.15', true, Buffer.from([0x03, 0x02, 0x01, 0x06])),
      extension('2.5.29.14', false, octetString(caKeyId)),
      extension('2.5.29.30', true, nameConstraints(domains)),
    ],
  });
  const certificatePem = toPem(caDer);
  const leafKeyPem = leafKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const contexts = new Map<string, SecureContext>();

  return {
    certificatePem,
    contextFor(host) {
      const known = contexts.get(host);
      if (known !== undefined) return known;
      const leafDer = certificate({
        issuer,
        subject: nameOf(host),
        subjectKey: leafKeys.publicKey,
        signingKey: caKeys.privateKey,
        notBefore,
        notAfter,
        extensions: [
          extension('2.5.29.19', true, sequence()),
          // digitalSignature: bit 0, seven unused bits.
          extension('2.5.29.15', true, Buffer.from([0x03, 0x02, 0x07, 0x80])),
          extension('2.5.29.37', false, sequence(objectId('1.3.6.1.5.5.7.3.1'))),
          extension('2.5.29.17', false, sequence(implicit(2, Buffer.from(host, 'ascii')))),
          extension('2.5.29.14', false, octetString(keyIdOf(leafKeys.publicKey))),
          extension('2.5.29.35', false, sequence(implicit(0, caKeyId))),
        ],
      });
      const context = createSecureContext({ key: leafKeyPem, cert: toPem(leafDer) });
      if (contexts.size >= MAX_CACHED) contexts.delete(contexts.keys().next().value ?? '');
      contexts.set(host, context);
      return context;
    },
  };
}

interface CertificateFields {
  readonly issuer: Buffer;
  readonly subject: Buffer;
  readonly subjectKey: KeyObject;
  readonly signingKey: KeyObject;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly extensions: readonly Buffer[];
}

/** A signed X.509 v3 certificate (RFC 5280, 4.1), DER. */
function certificate(fields: CertificateFields): Buffer {
  const tbs = sequence(
    explicit(0, smallInteger(2)),
    unsignedInteger(Buffer.concat([Buffer.from([0x40]), randomBytes(15)])),
    ECDSA_WITH_SHA256,
    fields.issuer,
    sequence(time(fields.notBefore), time(fields.notAfter)),
    fields.subject,
    fields.subjectKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...fields.extensions)),
  );
  return sequence(tbs, ECDSA_WITH_SHA256, bitString(sign('sha256', tbs, fields.signingKey)));
}

/** A Name with one common name. */
function nameOf(commonName: string): Buffer {
  return sequence(set(sequence(objectId('2.5.4.3'), utf8String(commonName.slice(0, 64)))));
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? sequence(objectId(oid), boolean(true), octetString(value))
    : sequence(objectId(oid), octetString(value));
}

/** Permitted subtrees: each domain (and its subdomains) as a dNSName; nothing else may be certified. */
function nameConstraints(domains: readonly string[]): Buffer {
  const subtrees = domains.map((domain) => sequence(implicit(2, Buffer.from(domain, 'ascii'))));
  return sequence(implicitConstructed(0, ...subtrees));
}

/** The SHA-1 of the public key's bits (RFC 5280, 4.2.1.2, method 1). */
function keyIdOf(key: KeyObject): Buffer {
  const spki = key.export({ type: 'spki', format: 'der' });
  // P-256 SubjectPublicKeyInfo: the key's bits are its last 65 bytes (an uncompressed point).
  return createHash('sha1')
    .update(spki.subarray(spki.length - 65))
    .digest();
}

function toPem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
