/**
 * The repository's s.yaml (`npm run build && s deploy`): the same settings as `node scripts/deploy.js` with its
 * defaults, code from the build output, secrets as ${env(...)} references (STYLE R17: s.yaml is tested too).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { fc3Props, makeTempDir, readYaml, removeTempDirs, resolveVars, ROOT, runDeployCli } from '../support/deploy-cli';
import { checkFc3Props } from '../support/fc3-rules';

afterAll(removeTempDirs);

const repo = readYaml(join(ROOT, 's.yaml'));

it('has the settings of the deploy CLI with its defaults, with the code taken from dist/', async () => {
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', dir], { env: { E2B_API_KEY: 'k' } });
  expect(run.code).toBe(0);
  const generated = readYaml(join(dir, 's.yaml'));
  const props = fc3Props(generated);
  expect(repo).toEqual({ ...generated, resources: { mcp: { component: 'fc3', props: { ...props, code: './dist' } } } });
});

it('runs the build output: code ./dist holds index.js, started as /code/index.js on the runtime Node', () => {
  const props = resolveVars(fc3Props(repo), repo);
  expect(checkFc3Props(props)).toEqual([]);
  expect(props.code).toBe('./dist');
  expect(existsSync(join(ROOT, 'dist/index.js'))).toBe(true);
  expect(props.customRuntimeConfig).toMatchObject({ command: ['/var/fc/lang/nodejs20/bin/node'], args: ['/code/index.js'], port: 9000 });
});

it('holds secrets only as ${env(...)} references', () => {
  const env = fc3Props(repo).environmentVariables;
  expect(env).toMatchObject({ MCP_AUTH_TOKENS: '${env(MCP_AUTH_TOKENS)}', MCP_SESSION_SECRET: '${env(MCP_SESSION_SECRET)}', E2B_API_KEY: "${env('E2B_API_KEY', '')}" });
  const text = readFileSync(join(ROOT, 's.yaml'), 'utf8');
  for (const line of text.split('\n').filter((l) => /(TOKEN|SECRET|KEY):/.test(l))) expect(line).toMatch(/\$\{env\(/);
});
