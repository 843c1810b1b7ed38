/**
 * `node scripts/deploy.js --deploy` against the loopback fake FC API (fake-fc.ts), the way the deploy tests run it:
 * credentials in the environment, a token file, --json, and a fresh output directory per run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeTempDir, runDeployCli } from './deploy-cli';
import type { Credentials, FakeFc } from './fake-fc';

export const CREDENTIALS: Credentials = {
  accessKeyId: 'LTAI5tTestKeyId0001',
  accessKeySecret: 'test-secret-9f8e7d6c5b4a',
};
export const E2B_KEY = 'e2b_key_for_the_function_0123456789';
export const TOKEN = 'deploy-test-token-0123456789abcdef';
/** A NAS mount target of the deploy tests, and the VPC options it is reached through. */
export const NAS = '0a1b2c3d4e-abc12.cn-hangzhou.nas.aliyuncs.com:/sandbox-mcp';
export const VPC = ['--vpc-id', 'vpc-bp1abc', '--vswitch-id', 'vsw-bp1def', '--security-group-id', 'sg-bp1ghi'];

export interface DeployJson {
  ok: boolean;
  url: string;
  outputDir: string;
  environment: string[] | null;
  plannedCalls: string[] | null;
  deployed: { function: string; trigger: string; customDomain?: string; url: string; sessionSecret: string };
  error?: {
    kind: string;
    code: string;
    requestId: string;
    hint: string;
    step: string;
    message: string;
    problems?: string[];
  };
}

/** A token file, to share between the runs of one test. */
export function tokenFile(): string {
  const file = join(makeTempDir(), 'tokens');
  writeFileSync(file, `${TOKEN}\n`, { mode: 0o600 });
  return file;
}

/** The FC credentials and nothing else: a shell that has never seen the function's secrets. */
export const EMPTY_SHELL: Record<string, string> = {
  ALIBABA_CLOUD_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
  ALIBABA_CLOUD_ACCESS_KEY_SECRET: CREDENTIALS.accessKeySecret,
};

/**
 * The options that point every API of a deploy at the fake (FC, Resource Manager, the certificate service), and
 * --no-logs unless the test says how the function logs: a new function needs logs or --no-logs, and the tests of
 * logs (domain-and-logs.test.ts, fc-deploy-production.test.ts) name them.
 */
export function fakeEndpoints(fake: FakeFc, args: readonly string[]): string[] {
  const namesLogs = args.some((a) => a === '--sls-project' || a === '--logs' || a === '--no-logs');
  return [
    '--endpoint',
    fake.endpoint,
    '--resource-manager-endpoint',
    fake.endpoint,
    '--cas-endpoint',
    fake.endpoint,
    ...(namesLogs ? [] : ['--no-logs']),
  ];
}

/**
 * Runs the CLI against `fake`. `env` is the whole environment besides PATH and HOME (EMPTY_SHELL plus what the test
 * adds); `args` come after --deploy, the endpoints (fakeEndpoints), --output-dir and --json.
 */
export async function deployToFake(fake: FakeFc, args: string[], env: Record<string, string> = EMPTY_SHELL) {
  const outputDir = makeTempDir();
  const run = await runDeployCli(
    ['--output-dir', outputDir, '--deploy', ...fakeEndpoints(fake, args), '--json', ...args],
    { env },
  );
  return { ...run, outputDir, json: JSON.parse(run.stdout) as DeployJson };
}
