/**
 * SEP-2243 on the `sandbox` argument: its schema names the header, and `Mcp-Param-Sandbox` must mirror the handle
 * (as sent, or encoded `=?base64?…?=`); a call whose header is undecodable or different is refused.
 */
import {
  SANDBOX_HEADER,
  sandboxHeaderMismatch,
  withSandboxArgument,
} from '../../../functions/mcp/protocol/sandbox-argument';

const base64 = (text: string): string => `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`;

it('annotates the sandbox property of every input schema with its header name', () => {
  const [tool] = withSandboxArgument([{ name: 't', inputSchema: { type: 'object', properties: {} } }]);
  expect(tool?.inputSchema.properties?.sandbox).toMatchObject({ type: 'string', 'x-mcp-header': 'Sandbox' });
  expect(SANDBOX_HEADER).toBe('Mcp-Param-Sandbox');
});

it('accepts a header that mirrors the handle, plain or Base64-encoded', () => {
  expect(sandboxHeaderMismatch('abc.def.ghi', 'abc.def.ghi')).toBeUndefined();
  expect(sandboxHeaderMismatch(base64('abc.def.ghi'), 'abc.def.ghi')).toBeUndefined();
  expect(sandboxHeaderMismatch(base64(' héllo '), ' héllo ')).toBeUndefined();
  // Without both the prefix and the suffix a value is literal.
  expect(sandboxHeaderMismatch('=?base64?aGk=', '=?base64?aGk=')).toBeUndefined();
  expect(sandboxHeaderMismatch('aGk=?=', 'aGk=?=')).toBeUndefined();
});

it('does not look at a call without a string handle', () => {
  expect(sandboxHeaderMismatch(null, undefined)).toBeUndefined();
  expect(sandboxHeaderMismatch('stray', undefined)).toBeUndefined();
  expect(sandboxHeaderMismatch(null, 42)).toBeUndefined();
});

it('lets a call through without the header: not every client mirrors parameters', () => {
  expect(sandboxHeaderMismatch(null, 'h')).toBeUndefined();
});

it('says how a header fails: not Base64 of UTF-8, or different', () => {
  expect(sandboxHeaderMismatch('other', 'h')).toBe('differs from the "sandbox" argument');
  expect(sandboxHeaderMismatch(base64('other'), 'h')).toBe('differs from the "sandbox" argument');
  expect(sandboxHeaderMismatch('=?base64?@@@?=', 'h')).toBe('is not valid Base64 of UTF-8');
  expect(sandboxHeaderMismatch('=?base64?/w==?=', 'h')).toBe('is not valid Base64 of UTF-8');
});
