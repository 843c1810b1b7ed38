/**
 * How many source files one warm run_command goes through (scripts/call-path.mjs: the bundle run under V8's precise
 * coverage, each counted range mapped back through the source map), in each protocol era. A budget: a call path that
 * grows past it has taken on modules that a plain `echo hi` should not need.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

import { needs } from '../support/needs';

const ROOT = resolve(__dirname, '../..');
/**
 * Files under functions/ with code run by one warm run_command: 44 in each era today (the 2025 era's plain
 * request is served over its own exchange, protocol/legacy-exchange.ts; every call is asked whether it runs as an
 * MCP task, protocol/task-methods.ts), a ceiling that holds the path from growing. Issue 29 asks for 20;
 * docs/ARCHITECTURE.md's request walk says where the files go (every one does work on the call: none only
 * forwards).
 */
const MAX_CALL_PATH_FILES = 44;

interface FileRun {
  file: string;
  functions: string[];
}

type CallPath = Record<'legacy' | 'modern', FileRun[]>;

const describeWithBwrap = needs('bubblewrap').describe;

describeWithBwrap('the call path of one run_command', () => {
  let callPath: CallPath;

  beforeAll(async () => {
    // The script is an ES module, which the SWC transform's CommonJS cannot import: run it in its own Node.
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/call-path.mjs', '--json'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 55_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    callPath = JSON.parse(stdout) as CallPath;
  }, 60_000);

  it.each([
    ['legacy', '2025 era (session)'],
    ['modern', '2026-07-28 era (handle)'],
  ] as const)(`%s: at most ${MAX_CALL_PATH_FILES} files (%s)`, (era, label) => {
    const files = callPath[era];
    expect(files.length).toBeGreaterThan(0);
    const listing = `${label}: ${files.length} files\n${files
      .map(({ file, functions }) => `  ${file}  [${functions.slice(0, 4).join(', ')}]`)
      .join('\n')}`;
    // The whole list on failure, so that what joined the path can be seen.
    expect(files.length <= MAX_CALL_PATH_FILES ? 'within the budget' : listing).toBe('within the budget');
  });
});
