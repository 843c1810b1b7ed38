/** Arguments that do not fit a tool's schema (tools/argument-errors.ts), as the model reads them in the isError
 * result. */
import { SILENT_LOGGER } from '../../../functions/mcp/log';
import { createToolCatalog } from '../../../functions/mcp/tools/registry';
import { createStubCatalog } from '../../support/stub-catalog';

const { call } = createStubCatalog();

/** The text of the result of calling `name` with `args`, which must be an isError result. */
async function refusal(name: string, args: unknown): Promise<string> {
  const result = await call(name, args);
  expect(result.isError).toBe(true);
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

it.each([
  ['read_file', {}, 'Invalid arguments for read_file: Missing required argument "path".'],
  ['read_file', undefined, 'Invalid arguments for read_file: Missing required argument "path".'],
  ['write_file', {}, 'Invalid arguments for write_file: Missing required arguments "path", "content".'],
  ['write_file', { path: 'a.txt' }, 'Invalid arguments for write_file: Missing required argument "content".'],
  ['run_code', {}, 'Invalid arguments for run_code: Missing required argument "code".'],
])('names a missing argument as missing: %s %j', async (name, args, expected) => {
  expect(await refusal(name, args)).toBe(expected);
});

it.each([
  ['run_command', { command: 42 }, 'Argument "command" must be a string, not the integer 42.'],
  ['run_command', { command: '' }, 'Argument "command" must not be empty.'],
  ['read_file', { path: null }, 'Argument "path" must be a string, not null.'],
  [
    'run_command',
    { command: 'true', colour: 'blue' },
    'Unknown argument "colour": it takes "command", "cwd", "env", "timeout_ms", "stdin", "background", "files".',
  ],
  ['reset_sandbox', { force: true }, 'Unknown argument "force": it takes no arguments.'],
  [
    'manage_process',
    { action: 'stop' },
    'Argument "action" must be one of "list", "logs", "kill", "write_stdin", not the string "stop".',
  ],
  ['list_files', { depth: 9 }, 'Argument "depth" must be at most 5.'],
  [
    'run_command',
    { command: 'true', timeout_ms: 1.5 },
    'Argument "timeout_ms" must be an integer, not the number 1.5.',
  ],
  ['run_command', { command: 'true', env: { A: 1 } }, 'Argument "env.A" must be a string, not the integer 1.'],
  ['read_file', { path: 'a\0b' }, 'Argument "path": a path must not contain a NUL byte (\\0).'],
  ['read_file', 'a.txt', 'The arguments must be an object, not the string "a.txt".'],
])('says what is wrong with a given argument, and what it must be: %s %j', async (name, args, expected) => {
  expect(await refusal(name, args)).toBe(`Invalid arguments for ${name}: ${expected}`);
});

it('reports a missing argument and a wrong one together', async () => {
  expect(await refusal('edit_file', { path: 'a.txt', old_string: 1 })).toBe(
    'Invalid arguments for edit_file: Missing required argument "new_string". Argument "old_string" must be a ' +
      'string, not the integer 1.',
  );
});

it('never says "received undefined"', async () => {
  for (const tool of createToolCatalog(SILENT_LOGGER).list) {
    const required = (tool.inputSchema as { required?: string[] }).required ?? [];
    if (required.length === 0) continue;
    const text = await refusal(tool.name, {});
    expect(text).not.toMatch(/undefined/);
    expect(text).toContain(
      `Missing required argument${required.length === 1 ? '' : 's'} ${required.map((n) => `"${n}"`).join(', ')}.`,
    );
  }
});
