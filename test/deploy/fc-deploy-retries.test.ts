/**
 * The retry and polling policy of the FC API deploy, in-process: the real deployToFc sends real requests, signed by
 * the FC SDK (createFcApi), to the loopback fake FC API, which checks every signature and records every call. The
 * waits are injected: each records the delay asked for and returns at once, so the policy's timing is asserted
 * without being spent. fc-deploy.test.ts keeps one run of the CLI itself through a retry, to show it is wired in.
 */
import { createRpcApi } from '../../scripts/aliyun-rpc';
import { DeployError } from '../../scripts/deploy-errors';
import { DEPLOY_OPTIONS } from '../../scripts/deploy-options';
import { createPlan } from '../../scripts/deploy-plan';
import { createFcApi, resolveEndpoint } from '../../scripts/fc-api';
import { deployToFc, lookUpFunction } from '../../scripts/fc-deploy';
import { toVariables } from '../../scripts/function-variables';
import { type Credentials, type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';

const CREDENTIALS: Credentials = { accessKeyId: 'LTAI5tTestKeyId0001', accessKeySecret: 'test-secret-9f8e7d6c5b4a' };
const SECRETS: Record<string, string> = {
  MCP_AUTH_TOKENS: 'deploy-test-token-0123456789abcdef',
  E2B_API_KEY: 'e2b_key_for_the_function_0123456789',
};
const MCP_URL = 'https://sandbox-mcp-abcdefghij.cn-hangzhou.fcapp.run/mcp';

/** The plan of `node scripts/deploy.js --deploy` with every option at its default, as the CLI would make it. */
function defaultPlan() {
  const camelCase = (name: string): string => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
  const args = Object.fromEntries(
    Object.entries(DEPLOY_OPTIONS).map(([name, option]) => [camelCase(name), option.default]),
  );
  const env = {
    ...SECRETS,
    ALIBABA_CLOUD_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: CREDENTIALS.accessKeySecret,
  };
  // Without logs: the service-linked role the logs need is checked in fc-deploy.test.ts and service-role.test.ts.
  const { plan, problems } = createPlan({ ...args, deploy: true, logs: false }, env);
  expect(problems).toEqual([]);
  return plan;
}

let fake: FakeFc;
beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
});
afterEach(() => fake.close());

/**
 * Looks the function up and deploys to the fake, as the CLI does. `timeline` holds the step lines and, where the
 * deploy waited, `(wait N ms)`: it shows what
 * was printed before each wait. The outcome is kept rather than thrown, so that a failed deploy can be read too.
 */
async function deploy(options: { random?: () => number } = {}) {
  const plan = defaultPlan();
  const timeline: string[] = [];
  const delays: number[] = [];
  const api = createFcApi({ ...resolveEndpoint({ endpoint: fake.endpoint, region: plan.region }), ...CREDENTIALS });
  const calls = {
    api,
    resourceManager: createRpcApi({ endpoint: fake.endpoint, ...CREDENTIALS }),
    step: (line: string) => timeline.push(line),
    wait: async (ms: number) => {
      delays.push(ms);
      timeline.push(`(wait ${ms} ms)`);
    },
    ...options,
  };
  const outcome = await lookUpFunction({ ...calls, name: plan.name, region: plan.region })
    .then((existing) =>
      deployToFc({
        ...calls,
        plan,
        existing,
        variables: toVariables(plan, SECRETS, existing).variables,
        zip: Buffer.from('code.zip of the test'),
      }),
    )
    .then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
  return { ...outcome, timeline, delays, steps: timeline.filter((line) => !line.startsWith('(wait ')) };
}

const statusesOf = (action: string) => fake.calls.filter((c) => c.action === action).map((c) => c.status);

describe('retries', () => {
  it('retries a throttled call after a backoff with jitter, signing it again, then carries on', async () => {
    fake.fail('CreateFunction', {
      status: 429,
      code: 'Throttling.User',
      message: 'Request was denied due to user flow control.',
    });
    const run = await deploy({ random: () => 0.5 });
    expect(run.error).toBeUndefined();
    expect(statusesOf('CreateFunction')).toEqual([429, 200]);
    // The first backoff: 500 ms, plus half of the largest jitter (50 %) since random() gave 0.5.
    expect(run.delays).toEqual([625]);
    expect(run.timeline.slice(1, 5)).toEqual([
      'Creating function sandbox-mcp (custom.debian12, 1024 MB, 1 vCPU, timeout 600 s)…',
      '  CreateFunction: Throttling.User (HTTP 429); retrying in 0.6 s (attempt 2)',
      '(wait 625 ms)',
      'Waiting for the function to become active…',
    ]);
    expect(run.result).toMatchObject({ function: 'created', trigger: 'created', url: MCP_URL });
    expect(unsignedCalls(fake.calls)).toEqual([]);
  });

  it('retries a 5xx answer the same way', async () => {
    fake.fail('GetTrigger', { status: 503, code: 'ServiceUnavailable' });
    const run = await deploy({ random: () => 0 });
    expect(run.error).toBeUndefined();
    // 503, then the retried lookup finds no trigger (404), creates it, and reads its URL (200).
    expect(statusesOf('GetTrigger')).toEqual([503, 404, 200]);
    expect(run.delays).toEqual([500]);
    expect(run.timeline).toContain('  GetTrigger: ServiceUnavailable (HTTP 503); retrying in 0.5 s (attempt 2)');
    expect(run.result).toMatchObject({ trigger: 'created', url: MCP_URL });
    expect(unsignedCalls(fake.calls)).toEqual([]);
  });

  it(
    'gives up on a call still throttled after five attempts, ' + 'with its code, the last request id and what to do',
    async () => {
      fake.fail('GetFunction', {
        status: 429,
        code: 'Throttling',
        message: 'Request was denied due to request throttling.',
        times: 5,
      });
      // The jitter of Math.random itself: whatever it draws, each wait stays within the documented bounds.
      const run = await deploy();
      expect(fake.calls.map((c) => `${c.action} ${c.status}`)).toEqual(Array<string>(5).fill('GetFunction 429'));
      expect(run.delays).toHaveLength(4);
      run.delays.forEach((ms, i) => {
        // 500 ms doubling with each attempt, up to 50 % longer.
        expect(ms).toBeGreaterThanOrEqual(500 * 2 ** i);
        expect(ms).toBeLessThan(750 * 2 ** i);
      });
      expect(run.steps).toEqual([
        'Looking up function sandbox-mcp in cn-hangzhou…',
        ...run.delays.map(
          (ms, i) => `  GetFunction: Throttling (HTTP 429); retrying in ${(ms / 1000).toFixed(1)} s (attempt ${i + 2})`,
        ),
      ]);
      expect(run.error).toBeInstanceOf(DeployError);
      expect(run.error).toMatchObject({
        message: 'GetFunction failed: Throttling (HTTP 429): Request was denied due to request throttling.',
        step: 'GetFunction',
        code: 'Throttling',
        statusCode: 429,
        requestId: fake.calls[4]?.requestId,
        hint: 'FC kept throttling the calls: wait a minute and re-run.',
      });
      expect(unsignedCalls(fake.calls)).toEqual([]);
    },
  );
});

describe('waiting until the function is active', () => {
  it('polls while the function is pending, showing each state, after 0.5, 1 and 2 s, then every 3 s', async () => {
    fake.pendingPolls = 5;
    const run = await deploy();
    expect(run.error).toBeUndefined();
    expect(fake.calls.map((c) => c.action)).toEqual([
      'GetFunction',
      'CreateFunction',
      ...Array<string>(6).fill('GetFunction'),
      'PublishFunctionVersion',
      'GetAlias',
      'CreateAlias',
      'GetTrigger',
      'CreateTrigger',
      'GetTrigger',
      'GetScalingConfig',
      'GetConcurrencyConfig',
    ]);
    const pending = '  still pending (state Pending, last update InProgress)…';
    const waiting = run.timeline.indexOf('Waiting for the function to become active…');
    expect(run.timeline.slice(waiting, waiting + 12)).toEqual([
      'Waiting for the function to become active…',
      ...[500, 1000, 2000, 3000, 3000].flatMap((ms) => [pending, `(wait ${ms} ms)`]),
      '  active (state Active, last update Successful)',
    ]);
    expect(run.result).toMatchObject({ function: 'created', url: MCP_URL });
    expect(unsignedCalls(fake.calls)).toEqual([]);
  });
});
