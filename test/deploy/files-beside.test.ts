/**
 * scripts/artifact.js ships every file index.js requires at run time: a dist/ without one of them stops the deploy
 * rather than shipping a function that fails at its first tool call.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { readFilesBeside } from '../../scripts/artifact';
import { DEFERRED_FILES } from '../support/shipped-files';

it('reads the deferred files beside index.js, and refuses a directory that lacks one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'beside-'));
  try {
    for (const file of ['index.js', ...DEFERRED_FILES]) writeFileSync(join(dir, file), `// ${file}\n`);
    expect(readFilesBeside(join(dir, 'index.js')).map((file) => file.name)).toEqual(DEFERRED_FILES);
    rmSync(join(dir, 'e2b-sdk.js'));
    expect(() => readFilesBeside(join(dir, 'index.js'))).toThrow(/has no e2b-sdk\.js beside index\.js/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
