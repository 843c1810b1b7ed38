/**
 * The bundle the function runs: dist/index.js, built with build.mjs when it is missing or older than its sources.
 */
'use strict';

const { execFile } = require('node:child_process');
const { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');
const { promisify } = require('node:util');

/** Files whose change means the bundle must be rebuilt, besides functions/**. */
const BUILD_INPUTS = ['build.mjs', 'package-lock.json'];

/**
 * Returns the bundle's path, building it first when needed.
 * @param {{ root: string, log: (line: string) => void }} options
 * @returns {Promise<{ path: string, built: boolean }>}
 */
async function ensureBundle({ root, log }) {
  const bundle = join(root, 'dist', 'index.js');
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= newestSourceMs(root)) return { path: bundle, built: false };
  log(existsSync(bundle) ? 'Rebuilding dist/index.js (sources changed)…' : 'Building dist/index.js…');
  // Build beside dist/ and rename into place: renames are atomic, so a concurrent run never reads half a file.
  mkdirSync(join(root, 'dist'), { recursive: true });
  const outdir = mkdtempSync(join(root, 'dist', '.build-'));
  try {
    // build.mjs resolves its entry points against the working directory: run it in the repository, as npm run build
    // does.
    const buildUrl = JSON.stringify(pathToFileURL(join(root, 'build.mjs')).href);
    const script = `import(${buildUrl}).then((m) => m.build({ outdir: process.argv[1], logLevel: 'warning' }))`;
    await promisify(execFile)(process.execPath, ['-e', script, outdir], { cwd: root });
    for (const file of readdirSync(outdir)) renameSync(join(outdir, file), join(root, 'dist', file));
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
  return { path: bundle, built: true };
}

/** @param {string} root */
function newestSourceMs(root) {
  let newest = 0;
  /** @param {string} dir */
  const visit = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  visit(join(root, 'functions'));
  for (const file of BUILD_INPUTS) {
    const path = join(root, file);
    if (existsSync(path)) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

module.exports = { ensureBundle };
