/** Every tool on the E2B backend (SDK stub): same schemas and result shapes as locally, and the same error rules. */
import * as e2b from 'e2b';

import { TOOLS } from '../../../functions/mcp/tools/registry';
import { createStubCatalog } from '../../support/stub-catalog';

const setup = createStubCatalog;

const outputSchema = (name: string) => {
  const tool = TOOLS.find((t) => t.name === name);
  if (tool === undefined) throw new Error(`no tool ${name}`);
  return tool.output;
};

it('answers every tool with structured content that matches the tool’s output schema', async () => {
  const { sdk, call } = setup();
  sdk.onSandbox = (sandbox) => {
    sandbox.command = () => ({ stdout: 'hi\n', exitCode: 0 });
    sandbox.code = async () => ({ results: [{ text: '2' }] });
  };
  const calls: Array<[string, Record<string, unknown>]> = [
    ['sandbox_status', {}],
    ['run_command', { command: 'echo hi' }],
    ['run_code', { code: '1+1' }],
    ['write_file', { path: 'a.txt', content: 'one\ntwo\n' }],
    ['read_file', { path: 'a.txt' }],
    ['edit_file', { path: 'a.txt', old_string: 'two', new_string: 'three' }],
    ['list_files', {}],
    ['sandbox_status', {}],
  ];
  for (const [name, args] of calls) {
    const result = await call(name, args);
    expect({ name, isError: result.isError ?? false }).toEqual({ name, isError: false });
    expect(outputSchema(name).safeParse(result.structuredContent).success).toBe(true);
  }
  const status = await call('sandbox_status');
  expect(status.structuredContent).toMatchObject({
    backend: 'e2b',
    state: 'running',
    workdir: '/home/user',
    isolation: 'e2b-microvm',
  });
  expect((await call('read_file', { path: 'a.txt' })).structuredContent).toMatchObject({ content: 'one\nthree\n' });
  expect(sdk.created).toHaveLength(1);
});

it('tells the model its sandbox is gone, with its files, and serves the next call from a fresh one', async () => {
  const { sdk, call } = setup();
  await call('write_file', { path: 'keep.txt', content: 'x' });
  const first = sdk.sandboxes[0];
  if (first === undefined) throw new Error('no sandbox');
  first.failAlways = new e2b.SandboxNotFoundError('sandbox not found');
  const lost = await call('read_file', { path: 'keep.txt' });
  expect(lost.isError).toBe(true);
  expect(lost.content[0]).toMatchObject({
    type: 'text',
    text: expect.stringMatching(/expired or was shut down.*files and state from it are gone.*fresh sandbox/s),
  });
  const fresh = await call('read_file', { path: 'keep.txt' });
  expect(fresh.isError).toBe(true);
  expect(fresh.content[0]).toMatchObject({ text: expect.stringContaining('Not found') });
  expect(sdk.created).toHaveLength(2);
});

it('answers E2B trouble as tool errors, never as crashes or protocol errors', async () => {
  const { sdk, call } = setup();
  sdk.createFailures = [new e2b.AuthenticationError('Unauthorized'), new e2b.ServiceBusyError('busy')];
  const auth = await call('run_command', { command: 'ls' });
  expect(auth).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('E2B_API_KEY') }] });
  const busy = await call('run_command', { command: 'ls' });
  expect(busy).toMatchObject({
    isError: true,
    content: [{ text: expect.stringContaining('temporarily unavailable') }],
  });
  expect((await call('run_command', { command: 'ls' })).isError).toBeFalsy();
});
