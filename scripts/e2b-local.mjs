// `npm run e2b:local`: the local E2B service (test/support/e2b-local/) as a command. Bundles its cli.ts
// (scripts/e2b-local-bundle.mjs), runs it in this process with the arguments given, and removes the bundle's
// directory at exit.
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';

import { bundleLocalE2B } from './e2b-local-bundle.mjs';

const { dir, file } = await bundleLocalE2B('cli.ts', 'run-');
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
createRequire(import.meta.url)(file);
