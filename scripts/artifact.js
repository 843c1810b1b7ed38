/**
 * The deployable artifact in --output-dir: code/index.js (the bundle, alone), code.zip (index.js at its root),
 * config.yaml (the provider-neutral manifest) and s.yaml (Serverless Devs). Rendering is pure; writing is separate
 * so that --dry-run can show the files without writing them.
 */
'use strict';

const { mkdirSync, writeFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { stringify } = require('yaml');

const { createCodeZip } = require('./code-zip');
const { toManifest } = require('./deployment-manifest');
const { toServerlessDevsYaml } = require('./s-yaml');

/** Files of the artifact, relative to the output directory. */
const ARTIFACT_FILES = Object.freeze({ code: 'code/index.js', zip: 'code.zip', manifest: 'config.yaml', sYaml: 's.yaml' });

/**
 * @typedef {object} RenderedArtifact
 * @property {Array<{ path: string, contents: Buffer | string }>} files relative paths and contents
 * @property {Record<string, unknown>} manifest the content of config.yaml
 * @property {Record<string, unknown>} sYaml the content of s.yaml
 * @property {Buffer} zip code.zip
 * @property {string} zipSha256
 */

/**
 * @param {import('./deploy-plan').DeploymentPlan} plan
 * @param {Buffer} bundle
 * @returns {Promise<RenderedArtifact>}
 */
async function renderArtifact(plan, bundle) {
  const { zip, sha256 } = await createCodeZip(bundle);
  const manifest = toManifest(plan, { zipFile: ARTIFACT_FILES.zip, zipSha256: sha256, zipBytes: zip.length });
  const sYaml = toServerlessDevsYaml(plan, { codePath: './code' });
  /** @param {string} what */
  const header = (what) => `# ${what} — written by scripts/deploy.js; holds no secret values.\n`;
  return {
    files: [
      { path: ARTIFACT_FILES.code, contents: bundle },
      { path: ARTIFACT_FILES.zip, contents: zip },
      { path: ARTIFACT_FILES.manifest, contents: header('Deployment manifest (provider-neutral)') + stringify(manifest, { lineWidth: 0 }) },
      {
        path: ARTIFACT_FILES.sYaml,
        contents:
          header('Serverless Devs project (component fc3)') +
          '# Secrets and E2B settings are ${env(...)} references: export them in the shell that runs `s deploy`, which\n' +
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

module.exports = { renderArtifact, writeArtifact, ARTIFACT_FILES };
