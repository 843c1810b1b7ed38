/**
 * The repository's s.yaml: the same settings as `node scripts/deploy.js` with its defaults, the code the CLI writes to
 * fc-deploy/code (exactly the artifact's), secrets as ${env(...)} references, logging on.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  fc3Props,
  makeTempDir,
  readYaml,
  removeTempDirs,
  resolveVars,
  ROOT,
  runDeployCli,
} from '../support/deploy-cli';
import { checkFc3Props } from '../support/fc3-rules';

afterAll(removeTempDirs);

const repo = readYaml(join(ROOT, 's.yaml'));

it('has the settings of the deploy CLI with its defaults, with the code of the artifact', async () => {
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', dir], { env: { E2B_API_KEY: 'k' } });
  expect(run.code).toBe(0);
  const generated = readYaml(join(dir, 's.yaml'));
  const props = fc3Props(generated);
  expect(repo).toEqual({
    ...generated,
    resources: { mcp: { component: 'fc3', props: { ...props, code: './fc-deploy/code' } } },
  });
});

it('ships the code the CLI writes to fc-deploy/code: index.js and what it loads, not the stdio entry', async () => {
  const props = resolveVars(fc3Props(repo), repo);
  expect(checkFc3Props(props)).toEqual([]);
  expect(props.code).toBe('./fc-deploy/code');
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', join(dir, 'fc-deploy')], { env: { E2B_API_KEY: 'k' } });
  expect(run.code).toBe(0);
  const shipped = readdirSync(join(dir, props.code));
  expect(shipped).toContain('index.js');
  expect(shipped.filter((f) => f.startsWith('stdio'))).toEqual([]);
  expect(props.customRuntimeConfig).toMatchObject({
    command: ['/opt/nodejs22/bin/node'],
    args: ['/code/index.js'],
    port: 9000,
  });
});

it('holds secrets and E2B settings only as ${env(...)} references, the key and the domain required', () => {
  const env = fc3Props(repo).environmentVariables;
  expect(env).toMatchObject({
    MCP_AUTH_TOKENS: '${env(MCP_AUTH_TOKENS)}',
    MCP_SESSION_SECRET: '${env(MCP_SESSION_SECRET)}',
    // `s deploy` must stop without them: fc3 sends the whole environment, and "" would replace the function's key.
    E2B_API_KEY: '${env(E2B_API_KEY)}',
    E2B_DOMAIN: '${env(E2B_DOMAIN)}',
    E2B_API_URL: "${env('E2B_API_URL', '')}",
    E2B_TEMPLATE: "${env('E2B_TEMPLATE', '')}",
    SANDBOX_BACKEND: 'e2b',
  });
  const text = readFileSync(join(ROOT, 's.yaml'), 'utf8');
  for (const line of text.split('\n').filter((l) => !l.startsWith('#') && /(TOKEN|SECRET|KEY):/.test(l)))
    expect(line).toMatch(/\$\{env\(/);
});

it('sets logConfig: auto, so that s deploy turns logging on instead of off', () => {
  expect(fc3Props(repo).logConfig).toBe('auto');
});

it('tells in its header which variables to export, and which are optional', () => {
  const header = readFileSync(join(ROOT, 's.yaml'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('#'));
  const env = fc3Props(repo).environmentVariables;
  const fromShell = Object.keys(env).filter((name) => env[name]?.startsWith('${env('));
  expect(fromShell).toEqual([
    'MCP_AUTH_TOKENS',
    'MCP_SESSION_SECRET',
    'E2B_API_KEY',
    'E2B_DOMAIN',
    'E2B_API_URL',
    'E2B_TEMPLATE',
  ]);
  for (const name of fromShell) {
    const line = header.find((l) => l.includes(`export ${name}=`));
    const required = !env[name]?.includes(", '')");
    expect({ name, line }).toEqual({ name, line: expect.stringMatching(required ? /# required/ : /# optional/) });
  }
  expect(header.join('\n')).toContain('<region>.e2b.fc.aliyuncs.com');
});

it('is checked for logConfig as fc3 takes it: auto or a project and a logstore, never left out', () => {
  const props = resolveVars(fc3Props(repo), repo);
  const named = {
    project: 'p',
    logstore: 'l',
    enableRequestMetrics: true,
    enableInstanceMetrics: true,
    logBeginRule: 'DefaultRegex' as const,
  };
  expect(checkFc3Props({ ...props, logConfig: named })).toEqual([]);
  expect(checkFc3Props({ ...props, logConfig: undefined })).toEqual([expect.stringContaining('logConfig is missing')]);
  expect(checkFc3Props({ ...props, logConfig: { ...named, logstore: '' } })).toEqual([
    'logConfig.logstore must be a non-empty string',
  ]);
  expect(checkFc3Props({ ...props, logConfig: 'AUTO' as 'auto' })).toEqual([
    expect.stringContaining('neither auto nor'),
  ]);
});
