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
 * Runs the CLI against `fake`. `env` is the whole environment besides PATH and HOME (EMPTY_SHELL plus what the test
 * adds); `args` come after --deploy, --endpoint, --output-dir and --json.
 */
export async function deployToFake(fake: FakeFc, args: string[], env: Record<string, string> = EMPTY_SHELL) {
  const outputDir = makeTempDir();
  const run = await runDeployCli(
    ['--output-dir', outputDir, '--deploy', '--endpoint', fake.endpoint, '--json', ...args],
    { env },
  );
  return { ...run, outputDir, json: JSON.parse(run.stdout) as DeployJson };
}
