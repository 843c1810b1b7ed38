/**
 * The fake FC API checks signatures the way FC does, so that a deploy test passing against it means the SDK's
 * requests are signed right: each check is shown to accept what the SDK's own signer makes and to refuse a change.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { Readable } from 'node:stream';

import { OpenApiUtil } from '@alicloud/openapi-core';

import { type Credentials, startFakeFc, verifyAcs3Signature } from '../support/fake-fc';

const CREDENTIALS: Credentials = { accessKeyId: 'LTAI5tTestKeyId0001', accessKeySecret: 'test-secret-9f8e7d6c5b4a' };

/** A request signed by the SDK's own signer (openapi-core's getAuthorization), as the fake would receive it. */
function signedRequest(body: string, query: Record<string, string> = {}, port = 8080) {
  const payloadHash = createHash('sha256').update(body).digest('hex');
  const headers: Record<string, string> = {
    host: `127.0.0.1:${port}`,
    'x-acs-action': 'CreateFunction',
    'x-acs-version': '2023-03-30',
    'x-acs-date': new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    'x-acs-signature-nonce': `nonce-${Math.random()}`,
    'x-acs-content-sha256': payloadHash,
    'content-type': 'application/json; charset=utf-8',
  };
  const pathname = '/2023-03-30/functions';
  headers.authorization = OpenApiUtil.getAuthorization(
    { protocol: 'http', port, pathname, method: 'POST', query, headers, body: Readable.from([]) },
    'ACS3-HMAC-SHA256',
    payloadHash,
    CREDENTIALS.accessKeyId,
    CREDENTIALS.accessKeySecret,
  );
  const search = new URLSearchParams(query).toString();
  return { method: 'POST', url: search === '' ? pathname : `${pathname}?${search}`, headers };
}

/** Sends `req` with `body` to the fake as it is (node's http keeps the signed host header); resolves with the
 * status. */
function send(endpoint: string, req: ReturnType<typeof signedRequest>, body: string): Promise<number> {
  return new Promise((resolveStatus, reject) => {
    const outgoing = request(`${endpoint}${req.url}`, { method: req.method, headers: req.headers }, (res) => {
      res.resume();
      res.once('end', () => resolveStatus(res.statusCode ?? 0));
    });
    outgoing.once('error', reject);
    outgoing.end(body);
  });
}

it('accepts what the SDK signs, query included', () => {
  expect(verifyAcs3Signature(signedRequest('{"a":1}'), Buffer.from('{"a":1}'), CREDENTIALS)).toEqual({ ok: true });
  expect(verifyAcs3Signature(signedRequest('', { z: '1', a: "b c!'()*" }), Buffer.alloc(0), CREDENTIALS)).toEqual({
    ok: true,
  });
});

it('rejects a changed body, query, signed header or key', () => {
  const req = signedRequest('{"a":1}');
  expect(verifyAcs3Signature(req, Buffer.from('{"a":2}'), CREDENTIALS)).toMatchObject({
    ok: false,
    reason: expect.stringContaining('x-acs-content-sha256'),
  });
  expect(verifyAcs3Signature({ ...req, url: `${req.url}?x=1` }, Buffer.from('{"a":1}'), CREDENTIALS)).toMatchObject({
    ok: false,
    reason: expect.stringContaining('signature'),
  });
  expect(
    verifyAcs3Signature(
      { ...req, headers: { ...req.headers, 'x-acs-action': 'DeleteFunction' } },
      Buffer.from('{"a":1}'),
      CREDENTIALS,
    ),
  ).toMatchObject({ ok: false });
  expect(
    verifyAcs3Signature(
      { ...req, headers: { ...req.headers, 'x-acs-extra': '1' } },
      Buffer.from('{"a":1}'),
      CREDENTIALS,
    ),
  ).toMatchObject({ ok: false, reason: 'headers not signed: x-acs-extra' });
  expect(verifyAcs3Signature(req, Buffer.from('{"a":1}'), { ...CREDENTIALS, accessKeySecret: 'other' })).toMatchObject({
    ok: false,
  });
});

// What lets the retry tests say "re-signed": a request sent again as it was, not signed again, is refused.
it('refuses a request sent twice with the same signature (its nonce was used before)', async () => {
  const fake = await startFakeFc(CREDENTIALS);
  try {
    const body = JSON.stringify({ functionName: 'replayed' });
    const req = signedRequest(body, {}, Number(new URL(fake.endpoint).port));
    expect([await send(fake.endpoint, req, body), await send(fake.endpoint, req, body)]).toEqual([200, 403]);
    expect(fake.calls.map((c) => c.signature)).toEqual([
      { ok: true },
      { ok: false, reason: 'x-acs-signature-nonce was used before' },
    ]);
  } finally {
    await fake.close();
  }
});
