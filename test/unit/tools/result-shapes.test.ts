/**
 * What docs/protocol.md says of results (its Tools section, "Results"): every result without `isError` has
 * `structuredContent` matching the tool's output schema, and so does an `isError` result about work that ran (code that
 * raised, a
 * command that timed out); an `isError` result about a call the tool could not carry out (arguments that do
 * not fit the schema, a bad path, an unknown process, a backend refusing) has text only. (The spec's tool
 * execution errors carry text; the SDK clients check `structuredContent` only on results without `isError`.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { CallToolResult } from '@modelcontextprotocol/server';
import * as e2b from 'e2b';

import { TOOLS } from '../../../functions/mcp/tools/registry';
import { createStubCatalog } from '../../support/stub-catalog';

const setup = createStubCatalog;

/** The documented rule for one result: which kind it is, and that its structured content (if any) fits. */
function shape(name: string, result: CallToolResult): 'structured' | 'error with structure' | 'error as text' {
  const text = result.content[0];
  expect(text?.type === 'text' && text.text.length > 0).toBe(true);
  if (result.structuredContent === undefined) {
    expect({ name, isError: result.isError }).toEqual({ name, isError: true });
    return 'error as text';
  }
  const schema = TOOLS.find((tool) => tool.name === name)?.output;
  expect({ name, fits: schema?.safeParse(result.structuredContent).success }).toEqual({ name, fits: true });
  return result.isError === true ? 'error with structure' : 'structured';
}

it('gives every result without isError structured content matching the output schema', async () => {
  const { sdk, call } = setup();
  sdk.onSandbox = (sandbox) => {
    sandbox.command = () => ({ stdout: 'hi\n', exitCode: 1 });
    sandbox.code = async () => ({ results: [{ text: '2' }] });
  };
  const calls: Array<[string, Record<string, unknown>]> = [
    ['sandbox_status', {}],
    ['run_command', { command: 'false' }],
    ['run_command', { command: 'sleep 100', background: true }],
    ['run_code', { code: '1+1' }],
    ['write_file', { path: 'a.txt', content: 'one\n' }],
    ['read_file', { path: 'a.txt' }],
    ['edit_file', { path: 'a.txt', old_string: 'one', new_string: 'two' }],
    ['list_files', {}],
    ['manage_process', { action: 'list' }],
    ['get_preview_url', { port: 8080 }],
    ['reset_sandbox', {}],
  ];
  for (const [name, args] of calls)
    expect({ name, shape: shape(name, await call(name, args)) }).toEqual({ name, shape: 'structured' });
});

it('gives an isError result about work that ran its structured content too', async () => {
  const { sdk, call } = setup();
  sdk.onSandbox = (sandbox) => {
    sandbox.code = async () => ({ error: { name: 'ValueError', value: 'bad', traceback: 'Traceback…' } });
  };
  expect(shape('run_code', await call('run_code', { code: 'raise ValueError("bad")' }))).toBe('error with structure');
});

it('answers a call the tool could not carry out with an isError result of text only', async () => {
  const { call } = setup();
  const refusals: Array<[string, unknown]> = [
    ['read_file', {}],
    ['run_command', { command: 42 }],
    ['reset_sandbox', { force: true }],
    ['read_file', { path: 'missing.txt' }],
    ['edit_file', { path: 'missing.txt', old_string: 'a', new_string: 'b' }],
    ['manage_process', { action: 'kill', process_id: 'p99' }],
  ];
  for (const [name, args] of refusals)
    expect({ name, args, shape: shape(name, await call(name, args)) }).toEqual({ name, args, shape: 'error as text' });
  const fresh = setup();
  fresh.sdk.createFailures = [new e2b.AuthenticationError('Unauthorized')];
  expect(shape('run_command', await fresh.call('run_command', { command: 'ls' }))).toBe('error as text');
});

it('is what docs/protocol.md says', () => {
  const doc = readFileSync(join(__dirname, '../../../docs/protocol.md'), 'utf8').replace(/\s+/g, ' ');
  expect(doc).toContain("A result without `isError` always has `structuredContent` matching the tool's `outputSchema`");
  expect(doc).toContain('An `isError: true` result about a call the tool could not carry out has text only');
  expect(doc).not.toMatch(/Every result has [^.]*`structuredContent`/);
});
