import { createBearerVerifier } from '../../../functions/mcp/http/auth';
import { toPrincipal } from '../../../functions/mcp/principals';

describe('createBearerVerifier', () => {
  const verifier = createBearerVerifier(['token-one-0123456789', 'token-two-abcdefghij']);

  it('accepts each configured token and names its principal', () => {
    expect(verifier.check('Bearer token-one-0123456789')).toEqual({
      ok: true,
      principal: toPrincipal('token-one-0123456789'),
    });
    expect(verifier.check('bearer token-two-abcdefghij')).toEqual({
      ok: true,
      principal: toPrincipal('token-two-abcdefghij'),
    });
  });

  it('tells a missing header or scheme apart from a wrong token', () => {
    expect(verifier.check(null)).toEqual({ ok: false, reason: 'missing' });
    expect(verifier.check('Basic dXNlcjpwYXNz')).toEqual({ ok: false, reason: 'missing' });
    expect(verifier.check('Bearer ')).toEqual({ ok: false, reason: 'missing' });
    expect(verifier.check('Bearer token-one')).toEqual({ ok: false, reason: 'invalid' });
    expect(verifier.check('Bearer token-one-0123456789x')).toEqual({ ok: false, reason: 'invalid' });
  });

  it('refuses everything when the list is empty', () => {
    expect(createBearerVerifier([]).check('Bearer anything')).toEqual({ ok: false, reason: 'invalid' });
  });

  it('derives principals that are stable, distinct and do not contain the token', () => {
    expect(toPrincipal('abc')).toBe(toPrincipal('abc'));
    expect(toPrincipal('abc')).not.toBe(toPrincipal('abd'));
    expect(toPrincipal('token-one-0123456789')).not.toContain('token');
  });
});
