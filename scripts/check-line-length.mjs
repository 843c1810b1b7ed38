#!/usr/bin/env node
// Fails when a source line (TypeScript, JavaScript, Python) is longer than the formatter's width. The formatter
// (biome.json) wraps code but leaves comments and string literals as they are, so this catches what it cannot;
// the Python files (the supervisor, the kernels) have no formatter at all.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const MAX = 120;
const ROOT = new URL('..', import.meta.url).pathname;
const CHECKED = ['functions', 'scripts', 'build.mjs', 'test', 'bench', 'tools'];
// The installs biome skips too (biome.json): their sources are not ours.
const SKIPPED = new Set(['node_modules', 'dist', 'test/deploy-tools', 'test/conformance']);
const SOURCE = /\.(ts|js|mjs|cjs|py)$/;

/** @param {string} path @returns {string[]} */
function sourcesUnder(path) {
  if (SOURCE.test(path)) return [path];
  try {
    return readdirSync(path, { withFileTypes: true }).flatMap((entry) => {
      const child = join(path, entry.name);
      return SKIPPED.has(entry.name) || SKIPPED.has(relative(ROOT, child)) ? [] : sourcesUnder(child);
    });
  } catch {
    return [];
  }
}

const over = CHECKED.flatMap((top) => sourcesUnder(join(ROOT, top))).flatMap((file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, i) => (line.length > MAX ? [`${relative(ROOT, file)}:${i + 1}: ${line.length} characters`] : [])),
);
for (const line of over) console.error(line);
if (over.length > 0) {
  console.error(`${over.length} lines are over ${MAX} characters: wrap the comment or split the string.`);
  process.exitCode = 1;
}
