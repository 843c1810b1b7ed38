/**
 * The local sandbox's Python programs are Python files (kernel.py, supervisor.py), imported as their text: what the
 * server runs is each file exactly, and each compiles (Python 3, the standard library only).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { KERNEL_SOURCE } from '../../../../functions/mcp/sandbox/local/kernel-source';
import { SUPERVISOR_SOURCE } from '../../../../functions/mcp/sandbox/local/supervisor-source';

const LOCAL = join(__dirname, '../../../../functions/mcp/sandbox/local');

it.each([
  ['kernel.py', KERNEL_SOURCE],
  ['supervisor.py', SUPERVISOR_SOURCE],
])('%s is the program, and compiles', (file, source) => {
  const path = join(LOCAL, file);
  expect(source).toBe(readFileSync(path, 'utf8'));
  // compile(), not py_compile: nothing is written beside the sources.
  expect(
    execFileSync(
      'python3',
      ['-I', '-S', '-c', 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec"); print("ok")', path],
      { encoding: 'utf8' },
    ),
  ).toBe('ok\n');
});
