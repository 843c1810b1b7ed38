/**
 * The generated s.yaml and the repository's s.yaml, rendered by Serverless Devs itself (`s preview`, offline) and
 * their fc3 props checked against the rules. `s preview` resolves variables and `${env(...)}` but does not load
 * the fc3 component, so its schema is not applied: test/support/fc3-rules.ts restates the rules that matter.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { fc3Props, makeTempDir, removeTempDirs, ROOT, runDeployCli } from '../support/deploy-cli';
import { isDeployToolInstalled, S_CLI, sPreview } from '../support/deploy-tools';
import { checkFc3Props } from '../support/fc3-rules';

const describeIfInstalled = isDeployToolInstalled(S_CLI, 'Serverless Devs (@serverless-devs/s)') ? describe : describe.skip;

const SECRETS = { MCP_AUTH_TOKENS: 'preview-token-0123456789abcdef', MCP_SESSION_SECRET: 'preview-session-secret-0123456789abcdef' };

afterAll(removeTempDirs);

async function generate(args: string[]): Promise<string> {
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', dir, '--json', ...args], { env: { E2B_API_KEY: 'k' } });
  expect(run.code).toBe(0);
  return join(dir, 's.yaml');
}

describeIfInstalled('s preview', () => {
  it('renders the generated s.yaml, resolving the secrets from the environment, and its fc3 props pass the rules', async () => {
    const preview = await sPreview(await generate(['--generate-token']), SECRETS);
    expect({ code: preview.code, rendered: preview.document !== undefined }).toEqual({ code: 0, rendered: true });
    const props = fc3Props(preview.document ?? {});
    expect(checkFc3Props(props)).toEqual([]);
    expect(props).toMatchObject({ region: 'cn-hangzhou', functionName: 'sandbox-mcp', code: './code' });
    expect(props.environmentVariables).toMatchObject({ ...SECRETS, E2B_API_KEY: '' });
  });

  it('renders an s.yaml with other options and a custom domain (fc3-domain)', async () => {
    const file = await generate(['--generate-token', '--name', 'mcp-2', '--region', 'cn-shanghai', '--memory', '2048', '--cpu', '2', '--timeout', '900', '--session-concurrency', '100', '--custom-domain', 'mcp.example.com']);
    const preview = await sPreview(file, { ...SECRETS, E2B_API_KEY: 'e2b-from-env' });
    expect(preview.code).toBe(0);
    const props = fc3Props(preview.document ?? {});
    expect(checkFc3Props(props)).toEqual([]);
    expect(props).toMatchObject({ functionName: 'mcp-2', region: 'cn-shanghai', memorySize: 2048, cpu: 2, timeout: 900 });
    expect(props.environmentVariables.E2B_API_KEY).toBe('e2b-from-env');
    const domain = (preview.document?.resources as Record<string, { component: string; props: Record<string, unknown> }>).domain;
    expect(domain).toMatchObject({ component: 'fc3-domain', props: { region: 'cn-shanghai', domainName: 'mcp.example.com' } });
    expect(JSON.stringify(domain?.props)).toContain('"functionName":"mcp-2"');
  });

  it('renders the s.yaml of --no-enable-session-affinity', async () => {
    const preview = await sPreview(await generate(['--generate-token', '--no-enable-session-affinity']), SECRETS);
    const props = fc3Props(preview.document ?? {});
    expect(props.sessionAffinity).toBeUndefined();
    expect(checkFc3Props(props)).toEqual([]);
  });

  it('refuses to render without MCP_AUTH_TOKENS, so that s deploy never ships an open server by accident', async () => {
    const preview = await sPreview(await generate(['--generate-token']), { MCP_SESSION_SECRET: SECRETS.MCP_SESSION_SECRET });
    expect(preview.code).not.toBe(0);
    expect(preview.output).toContain("env('MCP_AUTH_TOKENS') not found");
  });

  it("renders the repository's s.yaml, whose code is the build output and whose props pass the rules", async () => {
    const preview = await sPreview(join(ROOT, 's.yaml'), SECRETS);
    expect(preview.code).toBe(0);
    const props = fc3Props(preview.document ?? {});
    expect(checkFc3Props(props)).toEqual([]);
    expect(props.code).toBe('./dist');
    expect(existsSync(join(ROOT, props.code, 'index.js'))).toBe(true);
  });

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
