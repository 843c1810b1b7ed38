/**
 * The deployable artifact in --output-dir: code/index.js (the entry) with the files it loads on first use, their
 * source maps and the core's code cache beside it, code.zip (the same files at its root), config.yaml (the
 * provider-neutral manifest) and s.yaml (Serverless Devs). Rendering is pure; writing is separate so that
 * --dry-run can show the files without writing them.
 */
'use strict';

const { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
const { dirname, join, posix } = require('node:path');
const { stringify } = require('yaml');

const { createCodeZip } = require('./code-zip');
const { toManifest } = require('./deployment-manifest');
const { toServerlessDevsYaml } = require('./s-yaml');

const ENTRY = 'index.js';

/** Files of the artifact, relative to the output directory. */
const ARTIFACT_FILES = Object.freeze({
  code: 'code/index.js',
  zip: 'code.zip',
  manifest: 'config.yaml',
  sYaml: 's.yaml',
});

/**
 * The files index.js requires from its own directory on first use (build.mjs `DEFERRED_MODULES`): the core, the
 * E2B SDK, jose, OpenTelemetry. Each must ship: without one, the feature that needs it fails at run time.
 */
const DEFERRED_FILES = Object.freeze(['mcp-core.js', 'e2b-sdk.js', 'jose.js', 'telemetry.js']);

/**
 * The bundle's source maps (build.mjs writes them beside dist/index.js): the entry's, and those of the files it
 * loads on first use. Shipped beside index.js so that a logged stack names functions/…/*.ts
 * (functions/mcp/stack-maps.ts reads them only when a stack is formatted).
 */
const SOURCE_MAP_FILES = Object.freeze([
  'index.js.map',
  'mcp-core.js.map',
  'e2b-sdk.js.map',
  'jose.js.map',
  'telemetry.js.map',
]);

/**
 * The core's V8 code caches (build.mjs writes one per Node it was asked to make one for): the bundle reads the one
 * made for the Node it runs on, if any, and compiles its core without one otherwise.
 */
const CODE_CACHE_FILE = /^mcp-core\.js\.[0-9a-f]{12}-[0-9a-f]{8}\.cache$/;

/**
 * @typedef {object} RenderedArtifact
 * @property {Array<{ path: string, contents: Buffer | string }>} files relative paths and contents
 * @property {Record<string, unknown>} manifest the content of config.yaml
 * @property {Record<string, unknown>} sYaml the content of s.yaml
 * @property {Buffer} zip code.zip
 * @property {string} zipSha256
 */

/**
 * The files beside the bundle at `bundlePath` that ship with it: the deferred files, their source maps and the
 * core's code caches. A missing deferred file stops the deploy; a map that is missing is left out (the stacks of
 * its file then name the bundle's positions), and so is a cache.
 * @param {string} bundlePath
 * @returns {Array<{ name: string, contents: Buffer }>}
 */
function readFilesBeside(bundlePath) {
  const dir = dirname(bundlePath);
  const missing = DEFERRED_FILES.filter((name) => !existsSync(join(dir, name)));
  if (missing.length > 0)
    throw new Error(`${dir} has no ${missing.join(', ')} beside ${ENTRY}: rebuild it with \`node build.mjs\``);
  const names = [
    ...DEFERRED_FILES,
    ...SOURCE_MAP_FILES,
    ...readdirSync(dir)
      .filter((name) => CODE_CACHE_FILE.test(name))
      .sort(),
  ];
  const files = names.map((name) => ({ name, path: join(dir, name) }));
  return files.filter(({ path }) => existsSync(path)).map(({ name, path }) => ({ name, contents: readFileSync(path) }));
}

/**
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Buffer} bundle
 * @param {ReadonlyArray<{ name: string, contents: Buffer }>} [beside] shipped beside the bundle (readFilesBeside)
 * @returns {Promise<RenderedArtifact>}
 */
async function renderArtifact(plan, bundle, beside = []) {
  const { zip, sha256 } = await createCodeZip(bundle, beside);
  const manifest = toManifest(plan, { zipFile: ARTIFACT_FILES.zip, zipSha256: sha256, zipBytes: zip.length });
  const sYaml = toServerlessDevsYaml(plan, { codePath: './code' });
  /** @param {string} what */
  const header = (what) => `# ${what} — written by scripts/deploy.js; holds no secret values.\n`;
  return {
    files: [
      { path: ARTIFACT_FILES.code, contents: bundle },
      ...beside.map(({ name, contents }) => ({ path: posix.join(posix.dirname(ARTIFACT_FILES.code), name), contents })),
      { path: ARTIFACT_FILES.zip, contents: zip },
      {
        path: ARTIFACT_FILES.manifest,
        contents: header('Deployment manifest (provider-neutral)') + stringify(manifest, { lineWidth: 0 }),
      },
      {
        path: ARTIFACT_FILES.sYaml,
        contents:
          header('Serverless Devs project (component fc3)') +
          '# Secrets and E2B settings are ${env(...)} references: ' +
          'export them in the shell that runs `s deploy`, which\n' +
          "# refuses to run while a required one (${env(NAME)}) is unset; ${env('NAME', '')} may stay empty.\n" +
          stringify(sYaml, { lineWidth: 0 }),
      },
    ],
    manifest,
    sYaml,
    zip,
    zipSha256: sha256,
  };
}

/**
 * Writes the rendered files under `outputDir` (creating it).
 * @param {RenderedArtifact} artifact
 * @param {string} outputDir
 * @returns {string[]} the absolute paths written
 */
function writeArtifact(artifact, outputDir) {
  return artifact.files.map(({ path, contents }) => {
    const target = join(outputDir, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, contents);
    return target;
  });
}

module.exports = { readFilesBeside, renderArtifact, writeArtifact, ARTIFACT_FILES, DEFERRED_FILES, SOURCE_MAP_FILES };
