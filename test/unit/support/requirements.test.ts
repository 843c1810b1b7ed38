/**
 * What the suites say and do on a machine without bubblewrap (test/support/requirements.js, needs.ts,
 * skip-reporter.js, test/preflight.js), shown on this machine with its bubblewrap hidden: a mount namespace of the
 * test's own binds an empty file over it (root only, as CI runs; there bubblewrap is installed, and must be).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { needs } from '../../support/needs';
import { REQUIREMENTS } from '../../support/requirements';

const ROOT = join(__dirname, '../../..');
const INSTALL = REQUIREMENTS.bubblewrap.install;

/** Runs `script` (sh) in a mount namespace where /usr/bin/bwrap is an empty, non-executable file. */
function withoutBubblewrap(script: string, env: Record<string, string | undefined>) {
  const hidden = `mount --bind /dev/null /usr/bin/bwrap && ${script}`;
  return spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', hidden], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
}

needs('root', 'bubblewrap').describe('without bubblewrap', () => {
  it('the preflight fails at once with CI=true, naming bubblewrap and the packages to install', () => {
    const run = withoutBubblewrap('node test/preflight.js', { CI: 'true' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('CI=true, so nothing may be skipped');
    expect(run.stderr).toContain(`bubblewrap: not installed; to get it: ${INSTALL}`);
  });

  it('the preflight lets a run go on elsewhere, saying what will be skipped', () => {
    const run = withoutBubblewrap('node test/preflight.js', { CI: undefined });
    expect(run.status).toBe(0);
    expect(run.stderr).toContain(`will be skipped:\n  bubblewrap: not installed; to get it: ${INSTALL}`);
  });

  it('a test that needs it is skipped, and the run ends with a line that counts it and says what to install', () => {
    const jest = join(ROOT, 'node_modules/jest/bin/jest.js');
    const args = [
      '--rootDir',
      ROOT,
      '--roots',
      '<rootDir>/test/unit/support/fixtures',
      '--testMatch',
      '**/*.fixture.ts',
      '--testPathIgnorePatterns',
      '/node_modules/',
    ];
    const run = withoutBubblewrap(`node ${jest} ${args.map((arg) => `'${arg}'`).join(' ')}`, { CI: undefined });
    expect(run.stderr).toMatch(/Tests: +1 skipped, 1 passed, 2 total/);
    expect(run.stderr).toContain('○ skipped is skipped');
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toBe(`Skipped 1 test this machine cannot run: 1 needs bubblewrap (${INSTALL}).`);
    expect(run.status).toBe(0);
  });
});
