import * as e2b from 'e2b';

import { isNetworkError, redact, toE2BAppError } from '../../../../functions/mcp/sandbox/e2b/errors';

const KEY = 'e2b_9f8e7d6c5b4a39281706f5e4d3c2b1a0';
const CTX = { operation: 'creating the sandbox', template: 'code-interpreter-v1', apiKey: KEY };
const map = (err: unknown) => toE2BAppError(err, e2b, CTX) as { code?: string; message: string };

describe('the E2B error mapping', () => {
  it.each([
    ['AuthenticationError', new e2b.AuthenticationError('Unauthorized'), 'backend_auth', /check E2B_API_KEY/],
    ['RateLimitError', new e2b.RateLimitError('Rate limit exceeded'), 'rate_limited', /429.*retry in a minute/],
    [
      'ServiceBusyError',
      new e2b.ServiceBusyError('Service temporarily unavailable'),
      'backend_busy',
      /temporarily unavailable/,
    ],
    ['TimeoutError (request)', new e2b.TimeoutError('Request timed out'), 'sandbox_timeout', /did not answer in time/],
    [
      'TimeoutError (sandbox ended)',
      new e2b.TimeoutError('502: This error is likely due to sandbox timeout.'),
      'sandbox_gone',
      /files and state from it are gone/,
    ],
    [
      'SandboxNotFoundError',
      new e2b.SandboxNotFoundError('Sandbox abc not found'),
      'sandbox_gone',
      /next call starts a fresh sandbox/,
    ],
    ['NotEnoughSpaceError', new e2b.NotEnoughSpaceError('no space'), 'disk_full', /out of disk space/],
    ['FileNotFoundError', new e2b.FileNotFoundError('file /x not found'), 'not_found', /Not found/],
    [
      'InvalidArgumentError',
      new e2b.InvalidArgumentError('path is a directory'),
      'invalid_input',
      /path is a directory/,
    ],
    ['TemplateError', new e2b.TemplateError('template too old'), 'sandbox_error', /E2B_TEMPLATE/],
    ['SandboxError', new e2b.SandboxError('500: boom'), 'sandbox_error', /500: boom/],
  ])('maps %s to %s with a clear message', (_name, err, code, message) => {
    const mapped = map(err);
    expect(mapped.code).toBe(code);
    expect(mapped.message).toMatch(message);
  });

  it('maps network failures (DNS, refused, fetch failed) to "cannot reach E2B"', () => {
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    expect(isNetworkError(refused)).toBe(true);
    expect(map(refused)).toMatchObject({
      code: 'backend_unreachable',
      message: expect.stringContaining('E2B_API_URL'),
    });
    expect(map(Object.assign(new Error('getaddrinfo ENOTFOUND api.e2b.app'), { code: 'ENOTFOUND' }))).toMatchObject({
      code: 'backend_unreachable',
    });
  });

  it('maps a request that timed out in fetch (DOMException) to "did not answer in time"', () => {
    expect(map(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toMatchObject({
      code: 'sandbox_timeout',
    });
    expect(map(new DOMException('This operation was aborted', 'AbortError'))).toMatchObject({
      code: 'sandbox_timeout',
    });
  });

  it('passes anything unknown on as itself, redacted (logged as an internal error upstream)', () => {
    const bug = new RangeError(`our own bug near ${KEY}`);
    const passed = map(bug) as Error;
    expect(passed).toBeInstanceOf(Error);
    expect(passed.name).toBe('RangeError');
    expect(passed.message).toBe('our own bug near [redacted]');
    expect(passed.stack).not.toContain(KEY);
    expect(passed.stack?.split('\n')[1]).toBe(bug.stack?.split('\n')[1]);
    const thrown = 'a string';
    expect(toE2BAppError(thrown, e2b, CTX)).toBe(thrown);
  });

  it('never lets a credential through in a detail', () => {
    const mapped = map(
      new e2b.SandboxError(
        `500: request with X-API-KEY: ${KEY} and Authorization: Bearer abc.def.ghi failed; token e2b_other_secret_1`,
      ),
    );
    expect(mapped.message).not.toContain(KEY);
    expect(mapped.message).not.toContain('abc.def.ghi');
    expect(mapped.message).not.toContain('e2b_other_secret_1');
    expect(redact(`x`.repeat(1000), undefined).length).toBeLessThanOrEqual(301);
    expect(redact(`access_token=${'a'.repeat(20)}`, undefined)).toBe('access_token=[redacted]');
  });
});
