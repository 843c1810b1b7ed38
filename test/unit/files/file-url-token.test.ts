/**
 * The token of a file URL (functions/mcp/files/file-url-token.ts): what it signs comes back as it was, and a change
 * to any part of it, another secret, a cut, or a time past its expiry is refused.
 */
import { createFileUrlSigner, type FileGrant } from '../../../functions/mcp/files/file-url-token';

const SECRET = 'unit-file-url-secret-0123456789abcdef0123';
const NOW_MS = 1_800_000_000_000;
const GRANT: FileGrant = {
  place: { kind: 'session', key: 'k'.repeat(22), tag: 'tag123456789', principal: 'tok:abc', issuedAtMs: NOW_MS - 5000 },
  sandboxId: 'sbx-1',
  path: '/home/user/ünïcode dir/report.csv',
  mode: 'download',
  expiresAtS: NOW_MS / 1000 + 900,
  maxBytes: 1234,
};

const signer = createFileUrlSigner(SECRET);

it('gives back the grant it signed, named sandboxes and uploads too', () => {
  expect(signer.verify(signer.sign(GRANT), NOW_MS)).toEqual({ ok: true, grant: GRANT });
  const named: FileGrant = { ...GRANT, place: { ...GRANT.place, kind: 'handle', name: 'proj' }, mode: 'upload' };
  expect(signer.verify(signer.sign(named), NOW_MS)).toEqual({ ok: true, grant: named });
});

it('refuses every changed field under the old signature', () => {
  const token = signer.sign(GRANT);
  const [payload = '', mac = ''] = token.split('.');
  const wire = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
  for (let field = 1; field < wire.length; field += 1) {
    const changed = [...wire];
    changed[field] = typeof wire[field] === 'number' ? Number(wire[field]) + 1 : `${String(wire[field])}x`;
    const forged = `${Buffer.from(JSON.stringify(changed)).toString('base64url')}.${mac}`;
    expect([field, signer.verify(forged, NOW_MS)]).toEqual([field, { ok: false, reason: 'bad_signature' }]);
  }
});

it('refuses another secret, a cut, garbage and an oversized token', () => {
  const token = signer.sign(GRANT);
  expect(createFileUrlSigner(`${SECRET}-other`).verify(token, NOW_MS)).toEqual({ ok: false, reason: 'bad_signature' });
  expect(signer.verify(token.slice(0, -1), NOW_MS)).toEqual({ ok: false, reason: 'malformed' });
  expect(signer.verify('', NOW_MS)).toEqual({ ok: false, reason: 'malformed' });
  expect(signer.verify(`${'a'.repeat(3001)}.${'b'.repeat(43)}`, NOW_MS)).toEqual({ ok: false, reason: 'malformed' });
});

it('is refused once past its expiry, not before', () => {
  const token = signer.sign(GRANT);
  expect(signer.verify(token, GRANT.expiresAtS * 1000).ok).toBe(true);
  expect(signer.verify(token, GRANT.expiresAtS * 1000 + 1)).toEqual({ ok: false, reason: 'expired' });
});
