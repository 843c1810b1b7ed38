/**
 * `npm ci --omit=dev && node scripts/deploy.js` must work: every package the deploy CLI can load at run time is in
 * package.json `dependencies`. The requires are found by reading the source text of scripts/*.js, from
 * scripts/deploy.js on, lazy ones inside functions included.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';

import { ROOT } from '../support/deploy-cli';

const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

/** `require('x')` and `import … from 'x'` / `import('x')` (build.mjs is ESM), with either quote. */
const REQUIRE = /\brequire\(\s*(['"])([^'"]+)\1\s*\)/g;
const IMPORT = /\b(?:from|import\()\s*(['"])([^'"]+)\1/g;

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/**
 * Files reached from scripts/deploy.js and the bare packages they load. scripts/bundle.js runs build.mjs (in a child
 * node, to build dist/ when it is missing or stale), so build.mjs and its imports are reached too.
 */
function reachable(): { files: string[]; packages: Set<string> } {
  const files: string[] = [];
  const packages = new Set<string>();
  const queue = ['scripts/deploy.js'];
  while (queue.length > 0) {
    const file = queue.shift() as string;
    if (files.includes(file)) continue;
    files.push(file);
    const source = readFileSync(join(ROOT, file), 'utf8');
    const specifiers = [
      ...source.matchAll(REQUIRE),
      ...(file.endsWith('.mjs') ? [...source.matchAll(IMPORT)] : []),
    ].map((m) => m[2] as string);
    for (const specifier of specifiers) {
      // A relative path to TypeScript (build.mjs hands functions/ sources to esbuild) is bundled, not loaded by Node.
      if (specifier.startsWith('.') && existsSync(join(ROOT, dirname(file), `${specifier}.ts`))) continue;
      if (specifier.startsWith('.'))
        queue.push(join(dirname(file), /\.[cm]?js$/.test(specifier) ? specifier : `${specifier}.js`));
      else if (!isBuiltin(specifier)) packages.add(packageName(specifier));
    }
    if (file === 'scripts/bundle.js' && source.includes("'build.mjs'")) queue.push('build.mjs');
  }
  return { files, packages };
}

describe('the deploy CLI installs with npm ci --omit=dev', () => {
  // Proves: the walk really follows the CLI (lazy requires and the build included), so an empty or partial walk
  // cannot pass the next test by finding nothing to check.
  it('finds the files and packages the CLI loads, lazy ones included', () => {
    const { files, packages } = reachable();
    expect(files).toEqual(
      expect.arrayContaining([
        'scripts/cli.js',
        'scripts/run-deploy.js',
        'scripts/fc-api.js',
        'scripts/fc-credentials.js',
        'scripts/bundle.js',
        'build.mjs',
      ]),
    );
    expect([...packages]).toEqual(
      expect.arrayContaining([
        'yargs',
        'yaml',
        'yazl',
        '@alicloud/fc20230330',
        '@alicloud/openapi-core',
        '@alicloud/credentials',
        'esbuild',
      ]),
    );
  });

  // Proves: every package the CLI can load is a production dependency, not only a dev one.
  it('has every package it loads in dependencies', () => {
    const { packages } = reachable();
    const dependencies = Object.keys(packageJson.dependencies ?? {});
    expect(packages.size).toBeGreaterThan(0);
    expect([...packages].filter((name) => !dependencies.includes(name)).sort()).toEqual([]);
  });

  // Proves: no package is listed twice, where `npm ci --omit=dev` would depend on which list npm reads.
  it('lists none of them in devDependencies as well', () => {
    const { packages } = reachable();
    const dev = Object.keys(packageJson.devDependencies ?? {});
    expect([...packages].filter((name) => dev.includes(name)).sort()).toEqual([]);
  });
});
