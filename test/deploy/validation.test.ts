/**
 * The rules checked before anything is written or called: each one refuses with exit 2 and a message that names
 * the option, and leaves the output directory untouched. And the warnings that do not stop a run.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeTempDir, removeTempDirs, runDeployCli } from '../support/deploy-cli';

afterAll(removeTempDirs);

const E2B = { E2B_API_KEY: 'e2b_test_key' };

/** Runs with `args` into a fresh directory; expects a refusal naming `option`, with nothing written. */
async function expectRefusal(args: string[], option: string | RegExp, env: Record<string, string> = E2B) {
  const dir = join(makeTempDir(), 'out');
  const run = await runDeployCli(['--output-dir', dir, '--generate-token', '--json', ...args], { env });
  expect({ code: run.code, written: existsSync(dir) }).toEqual({ code: 2, written: false });
  const { error } = JSON.parse(run.stdout) as { error: { kind: string; problems: string[] } };
  expect(error.kind).toBe('usage');
  expect(error.problems.join('\n')).toMatch(option);
  expect(run.stderr).toMatch(option);
  return error.problems;
}

describe('refuses, naming the option', () => {
  it('a function timeout not at least 10 s above the tool timeout cap', async () => {
    const [problem] = await expectRefusal(['--timeout', '305', '--tool-timeout-max', '300'], '--timeout 305');
    expect(problem).toContain('--tool-timeout-max 300');
    expect(problem).toContain('raise --timeout to 310 or lower --tool-timeout-max to 295');
  });

  it('a function timeout that leaves no time for tool calls', async () => {
    await expectRefusal(['--timeout', '10'], /--timeout 10 leaves no time/);
  });

  it('a function timeout out of FC range', async () => {
    await expectRefusal(['--timeout', '90000'], /--timeout 90000 must be a whole number of seconds from 1 to 86400/);
  });

  it('session affinity on a runtime that cannot hold it', async () => {
    const problems = await expectRefusal(
      ['--runtime', 'nodejs20'],
      /--runtime nodejs20 cannot hold session affinity \(--enable-session-affinity\)/,
    );
    expect(problems.join('\n')).toContain('needs a custom runtime such as custom.debian12');
  });

  it('a built-in runtime even without affinity (the server is an HTTP server)', async () => {
    const problems = await expectRefusal(
      ['--runtime', 'python3.10', '--no-enable-session-affinity'],
      /--runtime python3.10 runs event handlers/,
    );
    expect(problems.join('\n')).not.toContain('cannot hold session affinity');
  });

  it('a custom runtime without a known Node, unless --node-path is given', async () => {
    await expectRefusal(
      ['--runtime', 'custom.debian11'],
      /--runtime custom.debian11 has no Node at a known path: pass --node-path/,
    );
  });

  it('an unknown runtime', async () => {
    await expectRefusal(['--runtime', 'custom-container'], /--runtime "custom-container" is not one this CLI knows/);
  });

  it.each([
    [['GET', 'POST', 'OPTIONS'], 'DELETE'],
    [['POST', 'DELETE'], 'GET'],
  ])('a trigger with methods %j while affinity is on (lacks %s)', async (methods, missing) => {
    await expectRefusal(
      ['--trigger-methods', ...methods],
      new RegExp(`--trigger-methods lacks ${missing}: with --enable-session-affinity`),
    );
  });

  it('a trigger without POST', async () => {
    await expectRefusal(
      ['--no-enable-session-affinity', '--trigger-methods', 'GET'],
      /--trigger-methods must include POST/,
    );
  });

  it.each(['0', '201', '2.5'])('session concurrency %s (outside 1–200)', async (value) => {
    await expectRefusal(
      ['--session-concurrency', value],
      new RegExp(`--session-concurrency ${value} must be a whole number from 1 to 200`),
    );
  });

  it.each(['100', '1000', '40000', '64'])('memory %s MB (not a multiple of 64 in 128–32768)', async (value) => {
    await expectRefusal(
      ['--memory', value, '--cpu', '0.05'],
      new RegExp(`--memory ${value} must be a multiple of 64 MB from 128 to 32768`),
    );
  });

  it('a CPU:memory ratio FC rejects, with the memory range that would fit', async () => {
    const [problem] = await expectRefusal(['--cpu', '4', '--memory', '1024'], /--cpu 4 with --memory 1024/);
    expect(problem).toContain('use --memory 4096–16384');
    await expectRefusal(['--cpu', '0.25', '--memory', '2048'], /--cpu 0.25 with --memory 2048/);
  });

  it('a CPU count off FC steps', async () => {
    await expectRefusal(['--cpu', '0.33'], /--cpu 0.33 must be from 0.05 to 16 vCPU in steps of 0.05/);
  });

  it.each(['1abc', 'has space', 'a'.repeat(65), 'dot.name'])('a bad function name (%s)', async (name) => {
    await expectRefusal(['--name', name], /--name ".*" is not a valid function name/);
  });

  it('a user environment variable starting with FC_', async () => {
    await expectRefusal(
      ['--env', 'FC_SECRET_THING=1'],
      /--env FC_SECRET_THING: FC reserves variables starting with FC_/,
    );
  });

  it('user environment variables over 4 KB in all', async () => {
    const problems = await expectRefusal(
      ['--env', `BIG=${'x'.repeat(3900)}`],
      /--env: the function's environment variables come to \d+ bytes, over FC's 4096-byte limit/,
    );
    expect(problems.join('\n')).not.toContain('xxxx');
  });

  it('an --env entry that is not NAME=VALUE, or one the CLI sets itself', async () => {
    await expectRefusal(['--env', 'JUSTANAME'], /--env "JUSTANAME" must be NAME=VALUE/);
    // FC refuses names that do not start with a letter: refused here, before any call.
    await expectRefusal(
      ['--env', '_HIDDEN=1'],
      /--env "_HIDDEN" must be NAME=VALUE with a NAME .* that starts with a letter/,
    );
    await expectRefusal(['--env', '9LIVES=1'], /--env "9LIVES" must be NAME=VALUE/);
    await expectRefusal(['--env', 'E2B_API_KEY=abc'], /--env E2B_API_KEY is set by this CLI/);
  });

  it('--deploy without credentials', async () => {
    // Refusing without a token, or without an E2B key, needs the function looked up first:
    // test/deploy/redeploy.test.ts.
    await expectRefusal(['--deploy'], /no Alibaba Cloud credentials found for --deploy; tried, in order:/, {
      ...E2B,
      HOME: makeTempDir(),
    });
  });

  it('conflicting auth options', async () => {
    await expectRefusal(['--no-auth'], /--no-auth conflicts with --generate-token/);
    const file = join(makeTempDir(), 'tokens');
    writeFileSync(file, 'a-token-of-enough-length-123\n');
    await expectRefusal(['--auth-token-file', file], /--generate-token conflicts with --auth-token-file/);
  });

  it('an unreadable or empty token file', async () => {
    const dir = join(makeTempDir(), 'out');
    const missing = await runDeployCli(['--output-dir', dir, '--auth-token-file', '/nonexistent/tokens', '--json'], {
      env: E2B,
    });
    expect(missing.code).toBe(2);
    expect(missing.stdout).toContain('--auth-token-file /nonexistent/tokens cannot be read (ENOENT)');
    const empty = join(makeTempDir(), 'empty');
    writeFileSync(empty, '# nothing\n');
    const none = await runDeployCli(['--output-dir', dir, '--auth-token-file', empty, '--json'], { env: E2B });
    expect(none.code).toBe(2);
    expect(none.stdout).toContain('holds no token');
  });

  it('a short MCP_SESSION_SECRET, without showing it', async () => {
    const problems = await expectRefusal([], /MCP_SESSION_SECRET must be at least 32 bytes/, {
      ...E2B,
      MCP_SESSION_SECRET: 'short-secret',
    });
    expect(problems.join('\n')).not.toContain('short-secret');
  });

  it('bad E2B settings and a bad custom domain', async () => {
    await expectRefusal(
      ['--e2b-api-url', 'api.example.com'],
      /--e2b-api-url "api.example.com" must be an http\(s\) URL/,
    );
    await expectRefusal(['--e2b-domain', 'not a domain'], /--e2b-domain "not a domain" is not a domain name/);
    await expectRefusal(['--custom-domain', 'localhost'], /--custom-domain "localhost" is not a domain name/);
  });

  it('a bad region', async () => {
    await expectRefusal(['--region', 'Hangzhou'], /--region "Hangzhou" is not a region id/);
  });

  it('every problem at once', async () => {
    const problems = await expectRefusal(
      ['--memory', '100', '--session-concurrency', '0', '--name', '9'],
      /--memory 100/,
    );
    expect(problems).toHaveLength(3);
  });
});

describe('warnings that do not stop the run', () => {
  it('warns when no E2B key is set: s deploy would refuse to run without it', async () => {
    const dir = makeTempDir();
    const run = await runDeployCli(['--output-dir', dir, '--generate-token', '--json'], { env: {} });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      'warning: E2B_API_KEY is not set: s.yaml reads it (and E2B_DOMAIN) from the environment at `s deploy` and ' +
        'fails without it',
    );
    expect((JSON.parse(run.stdout) as { warnings: string[] }).warnings).toEqual([
      expect.stringContaining('E2B_API_KEY is not set'),
    ]);
  });

  it('does not warn about E2B when the key is set', async () => {
    const run = await runDeployCli(['--output-dir', makeTempDir(), '--generate-token', '--json'], { env: E2B });
    expect(run.stderr).not.toContain('E2B_API_KEY is not set');
  });

  it('warns that s deploy will need MCP_AUTH_TOKENS when no token is given for an artifact', async () => {
    const run = await runDeployCli(['--output-dir', makeTempDir()], { env: E2B });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('no auth token yet: s.yaml reads MCP_AUTH_TOKENS');
  });
});
