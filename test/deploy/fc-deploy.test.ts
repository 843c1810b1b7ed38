/**
 * `node scripts/deploy.js --deploy` against a loopback fake of the FC 3.0 API, through the real SDK
 * (@alicloud/fc20230330 with --endpoint http://127.0.0.1:PORT). The fake recomputes the ACS3-HMAC-SHA256 signature
 * of every request; each test also asserts that every request it recorded was signed correctly. The retry and
 * polling policy is tested in-process, without real waits, in fc-deploy-retries.test.ts; one test here shows that
 * the CLI retries at all.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeTempDir, removeTempDirs, ROOT, runDeployCli } from '../support/deploy-cli';
import {
  CREDENTIALS,
  deployToFake,
  E2B_KEY,
  EMPTY_SHELL,
  fakeEndpoints,
  TOKEN,
  tokenFile,
} from '../support/deploy-to-fake';
import { type FakeFc, type RecordedCall, startFakeFc, unsignedCalls } from '../support/fake-fc';
import { shippedFiles } from '../support/shipped-files';
import { readZip } from '../support/zip-reader';

const TRIGGER_URL = 'https://sandbox-mcp-abcdefghij.cn-hangzhou.fcapp.run';

let fake: FakeFc;
beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
});
afterEach(() => fake.close());
afterAll(removeTempDirs);

/** A deploy with a token file and an E2B key (the test's `env` adds to them or overrides them). */
function deploy(args: string[] = [], env: Record<string, string> = {}, tokens = tokenFile()) {
  return deployToFake(fake, ['--auth-token-file', tokens, ...args], { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY, ...env });
}

const actions = (calls: RecordedCall[]) => calls.map((c) => c.action);
const expectAllSigned = () => expect(unsignedCalls(fake.calls)).toEqual([]);

describe('a first deploy', () => {
  it('creates the function and the HTTP trigger, signs every request, and prints the URL', async () => {
    const run = await deploy();
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(actions(fake.calls)).toEqual([
      'GetFunction',
      'CreateFunction',
      'GetFunction',
      'PublishFunctionVersion',
      'GetAlias',
      'CreateAlias',
      'GetTrigger',
      'CreateTrigger',
      'GetTrigger',
      'GetScalingConfig',
      'GetConcurrencyConfig',
    ]);
    expect(fake.calls.map((c) => `${c.method} ${c.path}`).slice(0, 2)).toEqual([
      'GET /2023-03-30/functions/sandbox-mcp',
      'POST /2023-03-30/functions',
    ]);
    expectAllSigned();
    expect(run.json).toMatchObject({
      ok: true,
      url: `${TRIGGER_URL}/mcp`,
      deployed: { function: 'created', trigger: 'created', sessionSecret: 'file' },
    });
    // A new function gets the secret kept in the output directory, so that a later `s deploy` of the artifact sends
    // the same one.
    const secret = readFileSync(join(run.outputDir, 'session-secret'), 'utf8').trim();
    expect((fake.functions.get('sandbox-mcp')!.environmentVariables as Record<string, string>).MCP_SESSION_SECRET).toBe(
      secret,
    );
    for (const step of [
      'Looking up function sandbox-mcp',
      'Creating function sandbox-mcp',
      'Waiting for the function to become active',
      'Creating HTTP trigger mcp',
      `Deployed: ${TRIGGER_URL}/mcp`,
    ]) {
      expect(run.stderr).toContain(step);
    }
  });

  it('sends the function FC needs: custom runtime, Node 22, port, hooks, affinity, limits and the code', async () => {
    await deploy();
    const body = fake.calls.find((c) => c.action === 'CreateFunction')?.body ?? {};
    expect(body).toMatchObject({
      functionName: 'sandbox-mcp',
      runtime: 'custom.debian12',
      memorySize: 1024,
      cpu: 1,
      diskSize: 512,
      timeout: 600,
      instanceConcurrency: 200,
      customRuntimeConfig: {
        command: ['/opt/nodejs22/bin/node'],
        args: ['/code/index.js'],
        port: 9000,
        healthCheckConfig: { httpGetUrl: '/health' },
      },
      instanceLifecycleConfig: { initializer: { timeout: 30 }, preStop: { timeout: 10 } },
      sessionAffinity: 'MCP_STREAMABLE',
    });
    expect(JSON.parse(String(body.sessionAffinityConfig))).toEqual({
      sessionConcurrencyPerInstance: 20,
      sessionTTLInSeconds: 21600,
      sessionIdleTimeoutInSeconds: 1800,
    });
    const env = body.environmentVariables as Record<string, string>;
    expect(env).toMatchObject({
      MCP_AUTH_TOKENS: TOKEN,
      E2B_API_KEY: E2B_KEY,
      MCP_FUNCTION_TIMEOUT_S: '600',
      MCP_TOOL_TIMEOUT_MAX_S: '300',
    });
    expect(Buffer.byteLength(String(env.MCP_SESSION_SECRET))).toBeGreaterThanOrEqual(32);
    expect(Object.keys(env).filter((k) => k.startsWith('FC_'))).toEqual([]);
    const zip = Buffer.from(String((body.code as { zipFile: string }).zipFile), 'base64');
    const entries = readZip(zip);
    expect(entries.map((e) => e.name)).toEqual(shippedFiles());
    for (const entry of entries) expect(entry.data.equals(readFileSync(join(ROOT, 'dist', entry.name)))).toBe(true);
  });

  it('creates an anonymous HTTP trigger allowing GET, POST, PUT, DELETE, HEAD and OPTIONS', async () => {
    await deploy();
    const body = fake.calls.find((c) => c.action === 'CreateTrigger')?.body ?? {};
    expect(body).toMatchObject({ triggerName: 'mcp', triggerType: 'http', qualifier: 'live' });
    expect(JSON.parse(String(body.triggerConfig))).toEqual({
      authType: 'anonymous',
      methods: ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'],
      disableURLInternet: false,
    });
  });

  it('takes the session secret from MCP_SESSION_SECRET when it is set', async () => {
    const secret = 'a-session-secret-of-at-least-32-bytes-long';
    const run = await deploy([], { MCP_SESSION_SECRET: secret });
    expect(run.json.deployed.sessionSecret).toBe('environment');
    expect(
      (fake.calls.find((c) => c.action === 'CreateFunction')!.body!.environmentVariables as Record<string, string>)
        .MCP_SESSION_SECRET,
    ).toBe(secret);
  });
});

describe('a re-deploy', () => {
  it('updates the function and the trigger, keeping the session secret', async () => {
    const tokens = tokenFile();
    expect((await deploy([], {}, tokens)).code).toBe(0);
    const firstSecret = (fake.functions.get('sandbox-mcp')!.environmentVariables as Record<string, string>)
      .MCP_SESSION_SECRET;
    fake.calls.length = 0;
    const run = await deploy(['--memory', '2048'], {}, tokens);
    expect(run.code).toBe(0);
    expect(actions(fake.calls)).toEqual([
      'GetFunction',
      'UpdateFunction',
      'GetFunction',
      'PublishFunctionVersion',
      'GetAlias',
      'UpdateAlias',
      'GetTrigger',
      'UpdateTrigger',
      'GetTrigger',
      'GetScalingConfig',
      'GetConcurrencyConfig',
    ]);
    expect(fake.calls.find((c) => c.action === 'UpdateFunction')).toMatchObject({
      method: 'PUT',
      path: '/2023-03-30/functions/sandbox-mcp',
      body: { memorySize: 2048 },
    });
    expect(fake.calls.find((c) => c.action === 'UpdateTrigger')).toMatchObject({
      method: 'PUT',
      path: '/2023-03-30/functions/sandbox-mcp/triggers/mcp',
    });
    expect(run.json.deployed).toMatchObject({ function: 'updated', trigger: 'updated', sessionSecret: 'kept' });
    expect((fake.functions.get('sandbox-mcp')!.environmentVariables as Record<string, string>).MCP_SESSION_SECRET).toBe(
      firstSecret,
    );
    expectAllSigned();
  });

  it(
    "keeps what it does not set: the E2B key and domain, the tokens and the operator's own variables, from a shell " +
      'without them',
    async () => {
      const tokens = tokenFile();
      expect(
        (await deploy(['--e2b-domain', 'cn-hangzhou.e2b.fc.aliyuncs.com', '--env', 'TEAM_SETTING=blue'], {}, tokens))
          .code,
      ).toBe(0);
      const before = { ...(fake.functions.get('sandbox-mcp')?.environmentVariables as Record<string, string>) };
      // Another shell: no E2B key, no --e2b-domain, no --env.
      const run = await deploy(['--memory', '2048'], { E2B_API_KEY: '' }, tokens);
      expect(run.code).toBe(0);
      const after = fake.functions.get('sandbox-mcp')?.environmentVariables as Record<string, string>;
      expect(after).toEqual(before);
      expect(after).toMatchObject({
        E2B_API_KEY: E2B_KEY,
        E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com',
        TEAM_SETTING: 'blue',
      });
      // Said by name, secrets never by value.
      expect(run.json.environment).toEqual(
        expect.arrayContaining([
          '= E2B_API_KEY (kept)',
          '= E2B_DOMAIN (kept)',
          '= MCP_SESSION_SECRET (kept)',
          '= TEAM_SETTING (kept)',
          '= MCP_MAX_SESSIONS',
        ]),
      );
      expect(run.stderr).toContain('  = E2B_API_KEY (kept)');
      expect(run.stderr).not.toContain(E2B_KEY);
      expectAllSigned();
    },
  );

  it(
    'removes what --unset names, and what the plan decides: tokens with --no-auth, MCP_AUTH=none when tokens come ' +
      'back',
    async () => {
      const tokens = tokenFile();
      expect((await deploy(['--env', 'TEAM_SETTING=blue', '--env', 'OLD_FLAG=1'], {}, tokens)).code).toBe(0);
      expect((await deploy(['--unset', 'OLD_FLAG'], {}, tokens)).code).toBe(0);
      expect(fake.functions.get('sandbox-mcp')?.environmentVariables).not.toHaveProperty('OLD_FLAG');
      expect(fake.functions.get('sandbox-mcp')?.environmentVariables).toMatchObject({ TEAM_SETTING: 'blue' });

      const open = await runDeployCli(
        ['--output-dir', makeTempDir(), '--deploy', ...fakeEndpoints(fake, []), '--no-auth', '--json'],
        {
          env: {
            ALIBABA_CLOUD_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
            ALIBABA_CLOUD_ACCESS_KEY_SECRET: CREDENTIALS.accessKeySecret,
            E2B_API_KEY: E2B_KEY,
          },
        },
      );
      expect(open.code).toBe(0);
      const opened = fake.functions.get('sandbox-mcp')?.environmentVariables as Record<string, string>;
      expect(opened).toMatchObject({ MCP_AUTH: 'none', TEAM_SETTING: 'blue' });
      expect(opened).not.toHaveProperty('MCP_AUTH_TOKENS');

      expect((await deploy([], {}, tokens)).code).toBe(0);
      const closed = fake.functions.get('sandbox-mcp')?.environmentVariables as Record<string, string>;
      expect(closed).not.toHaveProperty('MCP_AUTH');
      expect(closed.MCP_AUTH_TOKENS).toBe(TOKEN);
    },
  );

  it('refuses an --unset of a variable the deploy itself sets, before any call', async () => {
    const run = await deploy(['--env', 'TEAM_SETTING=blue', '--unset', 'TEAM_SETTING']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--unset TEAM_SETTING conflicts with this deploy, which sets it');
    expect(fake.calls).toEqual([]);
  });

  it('meets 409 FunctionAlreadyExists on create and updates instead', async () => {
    const tokens = tokenFile();
    expect((await deploy([], {}, tokens)).code).toBe(0);
    fake.calls.length = 0;
    fake.hiddenGets = 1;
    const run = await deploy([], {}, tokens);
    expect(run.code).toBe(0);
    expect(actions(fake.calls).slice(0, 3)).toEqual(['GetFunction', 'CreateFunction', 'UpdateFunction']);
    expect(fake.calls[1]).toMatchObject({ status: 409, code: 'FunctionAlreadyExists' });
    expect(run.stderr).toContain('already exists (created meanwhile); updating it instead');
    expect(run.json.deployed.function).toBe('updated');
    expectAllSigned();
  });
});

// The one run of the CLI through a retry (it waits for real, 0.5–0.75 s): the policy itself is in
// fc-deploy-retries.test.ts.
it('retries a throttled call with backoff, re-signing it, and says so on stderr', async () => {
  fake.fail('CreateFunction', {
    status: 429,
    code: 'Throttling.User',
    message: 'Request was denied due to user flow control.',
  });
  const run = await deploy();
  expect(run.code).toBe(0);
  const creates = fake.calls.filter((c) => c.action === 'CreateFunction');
  expect(creates.map((c) => c.status)).toEqual([429, 200]);
  expect(run.stderr).toMatch(/CreateFunction: Throttling\.User \(HTTP 429\); retrying in 0\.[5-7] s \(attempt 2\)/);
  expect(run.json.deployed.function).toBe('created');
  expectAllSigned();
});

describe('errors', () => {
  it('reports AccessDenied with its code, the request id and what to do, without retrying (exit 1)', async () => {
    fake.fail('GetFunction', {
      status: 403,
      code: 'AccessDenied',
      message: 'You are not authorized to do this action. Resource: acs:fc:cn-hangzhou:123:functions/sandbox-mcp',
    });
    const run = await deploy();
    expect(run.code).toBe(1);
    expect(fake.calls).toHaveLength(1);
    const requestId = fake.calls[0]?.requestId;
    expect(run.json.error).toMatchObject({
      kind: 'deploy',
      step: 'GetFunction',
      code: 'AccessDenied',
      requestId,
      hint: expect.stringContaining('AliyunFCFullAccess'),
    });
    expect(run.json.error?.message).toContain('GetFunction failed: AccessDenied (HTTP 403): You are not authorized');
    expect(run.stderr).toContain(`request id: ${requestId}`);
    expect(run.stderr).toContain('what to do: The credentials lack permission');
    expectAllSigned();
  });

  it('reports a rejected signature (a wrong AccessKey secret) and what to check', async () => {
    const run = await deploy([], { ALIBABA_CLOUD_ACCESS_KEY_SECRET: 'not-the-right-secret' });
    expect(run.code).toBe(1);
    expect(fake.calls.map((c) => [c.action, c.signature.ok, c.status])).toEqual([['GetFunction', false, 403]]);
    expect(run.json.error).toMatchObject({
      code: 'SignatureDoesNotMatch',
      hint: expect.stringContaining('ALIBABA_CLOUD_ACCESS_KEY_SECRET'),
    });
  });
});

it('signs STS requests with the security token', async () => {
  await fake.close();
  fake = await startFakeFc({ ...CREDENTIALS, securityToken: 'sts-token-abc' });
  const run = await deploy([], { ALIBABA_CLOUD_SECURITY_TOKEN: 'sts-token-abc' });
  expect(run.code).toBe(0);
  expectAllSigned();
});

it('creates, then updates, the custom-domain route (HTTP only, on purpose)', async () => {
  const tokens = tokenFile();
  const first = await deploy(['--custom-domain', 'mcp.example.com', '--domain-http-only'], {}, tokens);
  expect(first.code).toBe(0);
  expect(first.json).toMatchObject({ url: 'http://mcp.example.com/mcp', deployed: { customDomain: 'created' } });
  expect(fake.calls.find((c) => c.action === 'CreateCustomDomain')?.body).toEqual({
    domainName: 'mcp.example.com',
    protocol: 'HTTP',
    routeConfig: {
      routes: [
        {
          path: '/*',
          functionName: 'sandbox-mcp',
          qualifier: 'live',
          methods: ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'],
        },
      ],
    },
  });
  const second = await deploy(['--custom-domain', 'mcp.example.com', '--domain-http-only'], {}, tokens);
  expect(second.json.deployed.customDomain).toBe('updated');
  expect(fake.calls.filter((c) => c.action === 'UpdateCustomDomain')).toHaveLength(1);
  expectAllSigned();
});

it('--dry-run with --deploy only reads the function, and lists the calls it would make', async () => {
  const run = await deploy(['--dry-run']);
  expect(run.code).toBe(0);
  expect(actions(fake.calls)).toEqual(['GetFunction']);
  expect(JSON.parse(run.stdout)).toMatchObject({
    plannedCalls: expect.arrayContaining([`GET  ${fake.endpoint}/2023-03-30/functions/sandbox-mcp`]),
  });
});
