/**
 * The generated s.yaml and the repository's s.yaml, rendered by Serverless Devs itself (`s preview`, offline) and
 * their fc3 props checked against the rules. `s preview` resolves variables and `${env(...)}` but does not load
 * the fc3 component, so its schema is not applied: test/support/fc3-rules.ts restates the rules that matter.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { stringify } from 'yaml';

import { DEPLOY_OPTIONS } from '../../scripts/deploy-options';
import { createPlan } from '../../scripts/deploy-plan';
import { toServerlessDevsYaml } from '../../scripts/s-yaml';
import { fc3Props, makeTempDir, removeTempDirs, ROOT, runDeployCli } from '../support/deploy-cli';
import { sPreview } from '../support/deploy-tools';
import { checkFc3Props } from '../support/fc3-rules';
import { needs } from '../support/needs';

const describeIfInstalled = needs('the deploy tools').describe;

const SECRETS = {
  MCP_AUTH_TOKENS: 'preview-token-0123456789abcdef',
  MCP_SESSION_SECRET: 'preview-session-secret-0123456789abcdef',
};
/** What the E2B backend (the default) needs from the shell of `s deploy`. */
const E2B = { E2B_API_KEY: 'e2b-key-from-env', E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com' };

afterAll(removeTempDirs);

async function generate(args: string[]): Promise<string> {
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', dir, '--json', ...args], { env: { E2B_API_KEY: 'k' } });
  expect(run.code).toBe(0);
  return join(dir, 's.yaml');
}

/** The plan of `node scripts/deploy.js` with every option at its default, as the CLI makes it. */
function defaultPlan() {
  const camelCase = (name: string): string => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
  const args = Object.fromEntries(
    Object.entries(DEPLOY_OPTIONS).map(([name, option]) => [camelCase(name), option.default]),
  );
  const { plan, problems } = createPlan({ ...args, outputDir: makeTempDir() }, { ...SECRETS, ...E2B });
  expect(problems).toEqual([]);
  return plan;
}

describeIfInstalled('s preview', () => {
  it(
    'renders the generated s.yaml, resolving the secrets from the environment, ' + 'and its fc3 props pass the rules',
    async () => {
      const preview = await sPreview(await generate(['--generate-token']), { ...SECRETS, ...E2B });
      expect({ code: preview.code, rendered: preview.document !== undefined }).toEqual({ code: 0, rendered: true });
      const props = fc3Props(preview.document ?? {});
      expect(checkFc3Props(props)).toEqual([]);
      expect(props).toMatchObject({
        region: 'cn-hangzhou',
        functionName: 'sandbox-mcp',
        code: './code',
        logConfig: 'auto',
      });
      // Unset optional variables render empty, which the server takes as its defaults.
      expect(props.environmentVariables).toMatchObject({
        ...SECRETS,
        ...E2B,
        SANDBOX_BACKEND: 'e2b',
        E2B_API_URL: '',
        E2B_TEMPLATE: '',
      });
    },
  );

  it.each([['E2B_API_KEY'], ['E2B_DOMAIN']])(
    "refuses to render without %s, so that s deploy never sends an empty one over the function's",
    async (name) => {
      const file = await generate(['--generate-token']);
      const shell: Record<string, string> = { ...SECRETS, ...E2B };
      delete shell[name];
      const preview = await sPreview(file, shell);
      expect(preview.code).not.toBe(0);
      expect(preview.output).toContain(`env('${name}') not found`);
    },
  );

  it(
    'renders the s.yaml of --sandbox-backend local with the secrets alone: ' + 'no E2B variable, SANDBOX_BACKEND=local',
    async () => {
      const preview = await sPreview(await generate(['--generate-token', '--sandbox-backend', 'local']), SECRETS);
      expect(preview.code).toBe(0);
      const props = fc3Props(preview.document ?? {});
      expect(checkFc3Props(props)).toEqual([]);
      expect(props.environmentVariables).toMatchObject({ SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_ISOLATION: 'none' });
      expect(Object.keys(props.environmentVariables).filter((name) => name.startsWith('E2B_'))).toEqual([]);
    },
  );

  it(
    'requires at s deploy an E2B_TEMPLATE or E2B_API_URL the generating shell set, so that a shell without it ' +
      "stops instead of moving the function back to the server's default",
    async () => {
      const dir = makeTempDir();
      const shell = { E2B_API_KEY: 'k', E2B_TEMPLATE: 'team-template', E2B_API_URL: 'https://api.e2b.example' };
      const run = await runDeployCli(['--output-dir', dir, '--json', '--generate-token'], { env: shell });
      expect(run.code).toBe(0);
      const file = join(dir, 's.yaml');
      const full = { ...SECRETS, ...E2B, E2B_TEMPLATE: 'team-template', E2B_API_URL: 'https://api.e2b.example' };
      const preview = await sPreview(file, full);
      expect(preview.code).toBe(0);
      expect(fc3Props(preview.document ?? {}).environmentVariables).toMatchObject({
        E2B_TEMPLATE: 'team-template',
        E2B_API_URL: 'https://api.e2b.example',
      });
      for (const name of ['E2B_TEMPLATE', 'E2B_API_URL']) {
        const without: Record<string, string> = { ...full };
        delete without[name];
        const refused = await sPreview(file, without);
        expect({ code: refused.code, named: refused.output.includes(`env('${name}') not found`) }).toEqual({
          code: 1,
          named: true,
        });
      }
    },
  );

  it.each([
    [
      'a given NAS mount target in its VPC',
      [
        '--nas',
        'fs-1.cn-hangzhou.nas.aliyuncs.com:/mcp',
        '--vpc-id',
        'vpc-1',
        '--vswitch-id',
        'vsw-1',
        '--security-group-id',
        'sg-1',
      ],
      {
        nasConfig: {
          userId: 0,
          groupId: 0,
          mountPoints: [
            { serverAddr: 'fs-1.cn-hangzhou.nas.aliyuncs.com:/mcp', mountDir: '/mnt/state', enableTLS: false },
          ],
        },
        vpcConfig: { vpcId: 'vpc-1', vSwitchIds: ['vsw-1'], securityGroupId: 'sg-1' },
      },
    ],
    // fc3 keeps the function's NAS and VPC, or creates both and mounts the NAS at mountDir.
    ['fc3 auto', ['--nas', 'auto'], { nasConfig: 'auto|mountDir=/mnt/state', vpcConfig: 'auto' }],
  ])('renders the NAS that holds E2B_STATE_DIR: %s', async (_name, args, expected) => {
    const preview = await sPreview(await generate(['--generate-token', ...args]), { ...SECRETS, ...E2B });
    expect(preview.code).toBe(0);
    const props = fc3Props(preview.document ?? {});
    expect(checkFc3Props(props)).toEqual([]);
    expect(props).toMatchObject({ ...expected, internetAccess: true });
    expect(props.environmentVariables.E2B_STATE_DIR).toBe('/mnt/state');
  });

  it('renders a named SLS project and logstore as fc3 takes them', async () => {
    const dir = makeTempDir();
    const file = join(dir, 's.yaml');
    const withLogs = { ...defaultPlan(), logConfig: { project: 'mcp-logs', logstore: 'mcp-function' } };
    writeFileSync(file, stringify(toServerlessDevsYaml(withLogs, { codePath: './code' })));
    const preview = await sPreview(file, { ...SECRETS, ...E2B });
    expect(preview.code).toBe(0);
    const props = fc3Props(preview.document ?? {});
    expect(checkFc3Props(props)).toEqual([]);
    expect(props.logConfig).toEqual({
      project: 'mcp-logs',
      logstore: 'mcp-function',
      enableRequestMetrics: true,
      enableInstanceMetrics: true,
      logBeginRule: 'DefaultRegex',
    });
  });

  it('renders an s.yaml with other options and a custom domain (fc3-domain)', async () => {
    const file = await generate([
      '--generate-token',
      '--name',
      'mcp-2',
      '--region',
      'cn-shanghai',
      '--memory',
      '2048',
      '--cpu',
      '2',
      '--timeout',
      '900',
      '--session-concurrency',
      '100',
      '--custom-domain',
      'mcp.example.com',
      '--domain-http-only',
    ]);
    const preview = await sPreview(file, { ...SECRETS, ...E2B, E2B_API_KEY: 'e2b-from-env' });
    expect(preview.code).toBe(0);
    const props = fc3Props(preview.document ?? {});
    expect(checkFc3Props(props)).toEqual([]);
    expect(props).toMatchObject({
      functionName: 'mcp-2',
      region: 'cn-shanghai',
      memorySize: 2048,
      cpu: 2,
      timeout: 900,
    });
    expect(props.environmentVariables.E2B_API_KEY).toBe('e2b-from-env');
    const domain = (
      preview.document!.resources as Record<string, { component: string; props: Record<string, unknown> }>
    ).domain;
    expect(domain).toMatchObject({
      component: 'fc3-domain',
      props: { region: 'cn-shanghai', domainName: 'mcp.example.com' },
    });
    expect(JSON.stringify(domain?.props)).toContain('"functionName":"mcp-2"');
  });

  it('renders the s.yaml of --no-enable-session-affinity', async () => {
    const preview = await sPreview(await generate(['--generate-token', '--no-enable-session-affinity']), {
      ...SECRETS,
      ...E2B,
    });
    const props = fc3Props(preview.document ?? {});
    expect(props.sessionAffinity).toBe('NONE');
    expect(checkFc3Props(props)).toEqual([]);
  });

  it('refuses to render without MCP_AUTH_TOKENS, so that s deploy never ships an open server by accident', async () => {
    const preview = await sPreview(await generate(['--generate-token']), {
      MCP_SESSION_SECRET: SECRETS.MCP_SESSION_SECRET,
      ...E2B,
    });
    expect(preview.code).not.toBe(0);
    expect(preview.output).toContain("env('MCP_AUTH_TOKENS') not found");
  });

  it("renders the repository's s.yaml, whose code is the artifact's and whose props pass the rules", async () => {
    const preview = await sPreview(join(ROOT, 's.yaml'), { ...SECRETS, ...E2B });
    expect(preview.code).toBe(0);
    const props = fc3Props(preview.document ?? {});
    expect(checkFc3Props(props)).toEqual([]);
    expect(props.code).toBe('./fc-deploy/code');
    expect(props.logConfig).toBe('auto');
    expect(props.environmentVariables).toMatchObject({ ...SECRETS, ...E2B, SANDBOX_BACKEND: 'e2b' });
  });

  it.each([['E2B_API_KEY'], ['E2B_DOMAIN'], ['MCP_AUTH_TOKENS'], ['MCP_SESSION_SECRET']])(
    "refuses to render the repository's s.yaml without %s",
    async (name) => {
      const shell: Record<string, string> = { ...SECRETS, ...E2B };
      delete shell[name];
      const preview = await sPreview(join(ROOT, 's.yaml'), shell);
      expect(preview.code).not.toBe(0);
      expect(preview.output).toContain(`env('${name}') not found`);
    },
  );

  it('fails to render an s.yaml with an unresolved variable (the check is real)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 's-broken-'));
    try {
      const file = join(dir, 's.yaml');
      writeFileSync(file, 'edition: 3.0.0\nresources:\n  mcp:\n    props:\n      region: ${vars.nope}\n');
      const preview = await sPreview(file, SECRETS);
      expect(preview.code).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
