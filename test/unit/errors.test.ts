/** How thrown values are put into words for logs (functions/mcp/errors.ts). */
import { AppError, describeError, toFaultFields } from '../../functions/mcp/errors';

describe('describeError', () => {
  it("is an Error's message, without its name or stack", () => {
    expect(describeError(new TypeError('bad thing'))).toBe('bad thing');
    expect(describeError(new AppError('internal', 'named fix'))).toBe('named fix');
  });

  it('is a thrown string as it is, and says what anything else was without printing it', () => {
    expect(describeError('plain words')).toBe('plain words');
    for (const thrown of [undefined, null, 7, { token: 'secret' }, Object.create(null)])
      expect(describeError(thrown)).toBe('non-error thrown');
  });
});

describe('toFaultFields', () => {
  it("names an Error's class and message, with its stack", () => {
    const err = new RangeError('out of range');
    expect(toFaultFields(err)).toEqual({ error: 'RangeError: out of range', stack: err.stack });
  });

  it('has no stack for a thrown non-Error', () => {
    expect(toFaultFields({ secret: 'x' })).toEqual({ error: 'non-error thrown', stack: undefined });
  });
});
