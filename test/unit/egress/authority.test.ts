import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type PeerCertificate, type Server } from 'node:tls';

import { createAuthority, type SandboxAuthority } from '../../../functions/mcp/egress/authority';

/** A TLS server on loopback that answers each name with `authority`'s certificate for it. */
const serve = async (authority: SandboxAuthority): Promise<{ server: Server; port: number }> => {
  const server = createServer({ SNICallback: (name, done) => done(null, authority.contextFor(name)) }, (socket) =>
    socket.end(),
  );
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
};

type Outcome = { ok: true; peer: X509Certificate } | { ok: false; code: string; message: string };

/** A handshake to `port` for `servername`, trusting only `ca`. */
const handshake = (
  port: number,
  servername: string,
  ca: string,
  checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined,
): Promise<Outcome> =>
  new Promise((resolve) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      servername,
      ca,
      ...(checkServerIdentity === undefined ? {} : { checkServerIdentity }),
    });
    socket.once('secureConnect', () => {
      const peer = socket.getPeerX509Certificate();
      socket.destroy();
      if (peer === undefined) resolve({ ok: false, code: 'NO_PEER', message: 'no peer certificate' });
      else resolve({ ok: true, peer });
    });
    socket.once('error', (err: Error & { code?: string }) => {
      socket.destroy();
      resolve({ ok: false, code: err.code ?? '', message: err.message });
    });
  });

describe('a sandbox certificate authority', () => {
  const authority = createAuthority('sb-test-1', ['api.example.com', 'example.org']);
  let server: Server;
  let port: number;
  beforeAll(async () => {
    ({ server, port } = await serve(authority));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('is a self-issued CA named for the sandbox', () => {
    const ca = new X509Certificate(authority.certificatePem);
    expect(ca.ca).toBe(true);
    expect(ca.subject).toBe(ca.issuer);
    expect(ca.subject).toContain('sb-test-1');
    expect(ca.checkIssued(ca)).toBe(true);
    expect(ca.verify(ca.publicKey)).toBe(true);
    expect(ca.publicKey.asymmetricKeyType).toBe('ec');
    expect(authority.certificatePem).toMatch(
      /^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+\n-----END CERTIFICATE-----\n$/,
    );
  });

  it('is valid from an hour before `now` for 90 days, in UTCTime and, past 2049, GeneralizedTime', () => {
    const now = new Date('2030-06-15T12:00:00Z');
    const ca = new X509Certificate(createAuthority('sb', ['example.com'], now).certificatePem);
    expect(new Date(ca.validFrom).toISOString()).toBe('2030-06-15T11:00:00.000Z');
    expect(new Date(ca.validTo).toISOString()).toBe('2030-09-13T12:00:00.000Z');
    const late = new X509Certificate(
      createAuthority('sb', ['example.com'], new Date('2049-12-01T00:00:00Z')).certificatePem,
    );
    expect(new Date(late.validFrom).toISOString()).toBe('2049-11-30T23:00:00.000Z');
    expect(new Date(late.validTo).toISOString()).toBe('2050-03-01T00:00:00.000Z');
  });

  it('certifies a listed domain and its subdomains, the name checked as usual', async () => {
    const ca = new X509Certificate(authority.certificatePem);
    for (const name of ['api.example.com', 'example.org', 'deep.sub.example.org', 'x.api.example.com']) {
      const outcome = await handshake(port, name, authority.certificatePem);
      expect([name, outcome.ok]).toEqual([name, true]);
      if (!outcome.ok) continue;
      expect(outcome.peer.ca).toBe(false);
      expect(outcome.peer.subjectAltName).toBe(`DNS:${name}`);
      expect(outcome.peer.checkIssued(ca)).toBe(true);
      expect(outcome.peer.verify(ca.publicKey)).toBe(true);
      expect(outcome.peer.checkHost(name)).toBe(name);
    }
  });

  it('is refused by the name constraints for any other name, whatever the name check says', async () => {
    for (const name of ['example.com', 'www.example.com', 'badapi.example.com', 'evil.test', 'example.org.evil.test']) {
      const outcome = await handshake(port, name, authority.certificatePem, () => undefined);
      expect([name, outcome.ok]).toEqual([name, false]);
      if (outcome.ok) continue;
      expect(outcome.message).toMatch(/permitted subtree violation/i);
    }
  });

  it('gives the same context for the same host', () => {
    const first = authority.contextFor('api.example.com');
    expect(authority.contextFor('api.example.com')).toBe(first);
    expect(authority.contextFor('x.api.example.com')).not.toBe(first);
  });

  it('keeps its cache bounded, and still answers every host', async () => {
    const wide = createAuthority('sb-wide', ['wide.example']);
    const contexts = Array.from({ length: 100 }, (_, i) => wide.contextFor(`host-${i}.wide.example`));
    expect(new Set(contexts).size).toBe(100);
    // The newest are kept; the oldest are made again.
    expect(wide.contextFor('host-99.wide.example')).toBe(contexts[99]);
    expect(wide.contextFor('host-0.wide.example')).not.toBe(contexts[0]);
    const local = await serve(wide);
    try {
      const outcome = await handshake(local.port, 'host-0.wide.example', wide.certificatePem);
      expect(outcome.ok).toBe(true);
    } finally {
      await new Promise<void>((resolve) => local.server.close(() => resolve()));
    }
  });

  it("does not trust another authority's certificates, even for the same sandbox and domains", async () => {
    const other = createAuthority('sb-test-1', ['api.example.com', 'example.org']);
    expect(other.certificatePem).not.toBe(authority.certificatePem);
    const theirs = await serve(other);
    try {
      const outcome = await handshake(theirs.port, 'api.example.com', authority.certificatePem, () => undefined);
      expect(outcome.ok).toBe(false);
      const back = await handshake(port, 'api.example.com', other.certificatePem, () => undefined);
      expect(back.ok).toBe(false);
      const mine = new X509Certificate(authority.certificatePem);
      expect(new X509Certificate(other.certificatePem).verify(mine.publicKey)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => theirs.server.close(() => resolve()));
    }
  });

  it('certifies no name when given no domains (an empty constraint is no constraint to OpenSSL)', async () => {
    // Never unconstrained: refusing to make one is as good as one no client accepts.
    let empty: SandboxAuthority;
    try {
      empty = createAuthority('sb-empty', []);
    } catch {
      return;
    }
    const local = await serve(empty);
    try {
      for (const name of ['www.example.com', 'api.example.com']) {
        const outcome = await handshake(local.port, name, empty.certificatePem);
        expect([name, outcome.ok]).toEqual([name, false]);
      }
    } finally {
      await new Promise<void>((resolve) => local.server.close(() => resolve()));
    }
  });
});
