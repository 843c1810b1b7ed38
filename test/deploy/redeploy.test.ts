/**
 * What `--deploy` does with a function that already exists, against the signature-checking fake FC API: a re-deploy
 * from a shell that has none of the function's secrets changes nothing it was not asked to change; a function with
 * no sandbox backend or no token is refused before anything is written or changed; `--dry-run` shows the
 * environment diff with secrets masked.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { removeTempDirs } from '../support/deploy-cli';
import { CREDENTIALS, deployToFake, E2B_KEY, EMPTY_SHELL, TOKEN, tokenFile } from '../support/deploy-to-fake';
import { type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';

const ALIBABA = { E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com', E2B_TEMPLATE: 'team-template' };
const SESSION_SECRET = 'a-session-secret-of-at-least-32-bytes-long';

let fake: FakeFc;
beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
});
afterEach(() => fake.close());
afterAll(removeTempDirs);

const actions = () => fake.calls.map((c) => c.action);
/** The function as FC keeps it, without what every deploy changes (the code and the time). */
function functionState(): Record<string, unknown> {
  const { codeSize: _codeSize, lastModifiedTime: _lastModifiedTime, ...rest } = fake.functions.get('sandbox-mcp') ?? {};
  return rest;
}

/** The first deploy, from the operator's own shell: every secret and E2B setting there, logs, an extra variable. */
async function firstDeploy() {
  const run = await deployToFake(
    fake,
    [
      '--auth-token-file',
      tokenFile(),
      '--env',
      'TEAM_SETTING=blue',
      '--sls-project',
      'mcp-logs',
      '--sls-logstore',
      'function-logs',
    ],
    {
      ...EMPTY_SHELL,
      ...ALIBABA,
      E2B_API_KEY: E2B_KEY,
      MCP_SESSION_SECRET: SESSION_SECRET,
    },
  );
  expect(run.code).toBe(0);
  fake.calls.length = 0;
}

describe('a re-deploy from an empty shell', () => {
  it(
    'keeps the tokens, the session secret, the E2B key, domain and ' +
      "template, the operator's variables and the logs",
    async () => {
      await firstDeploy();
      const before = functionState();
      // --logs: neither an SLS project nor --no-logs, so the function's logs are kept.
      const run = await deployToFake(fake, ['--logs']);
      expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
      expect(actions()).toEqual([
        'GetFunction',
        'CheckServiceLinkedRoleExistence',
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
      expect(functionState()).toEqual(before);
      expect(fake.functions.get('sandbox-mcp')?.environmentVariables).toMatchObject({
        MCP_AUTH_TOKENS: TOKEN,
        MCP_SESSION_SECRET: SESSION_SECRET,
        E2B_API_KEY: E2B_KEY,
        ...ALIBABA,
        TEAM_SETTING: 'blue',
      });
      // The logs stay where they were: the update sends the function's own logConfig back, and the run says so.
      expect(fake.calls.find((c) => c.action === 'UpdateFunction')?.body?.logConfig).toEqual(before.logConfig);
      expect(run.stderr).toContain('Logs: kept (SLS project mcp-logs, logstore function-logs).');
      expect(run.json.deployed.sessionSecret).toBe('kept');
      // The function's secret is kept, not copied out: no session-secret file is made beside the artifact.
      expect(existsSync(join(run.outputDir, 'session-secret'))).toBe(false);
      expect(unsignedCalls(fake.calls)).toEqual([]);
    },
  );

  it('names what it keeps, and never shows a secret', async () => {
    await firstDeploy();
    const run = await deployToFake(fake, []);
    expect(run.json.environment).toEqual(
      expect.arrayContaining([
        '= E2B_API_KEY (kept)',
        '= E2B_DOMAIN (kept)',
        '= E2B_TEMPLATE (kept)',
        '= MCP_AUTH_TOKENS (kept)',
        '= MCP_SESSION_SECRET (kept)',
        '= TEAM_SETTING (kept)',
      ]),
    );
    for (const secret of [E2B_KEY, TOKEN, SESSION_SECRET]) expect(run.stdout + run.stderr).not.toContain(secret);
  });
});

describe('refused before anything is written or changed', () => {
  it('a new function with no E2B key and no --sandbox-backend local: one read, no write, no file', async () => {
    const run = await deployToFake(fake, ['--auth-token-file', tokenFile()]);
    expect(run.code).toBe(2);
    expect(run.json.error?.message).toContain(
      'refusing to deploy a function without a sandbox backend (function sandbox-mcp has no E2B key to keep)',
    );
    expect(run.json.error?.message).toContain('--sandbox-backend local');
    expect(actions()).toEqual(['GetFunction']);
    expect(readdirSync(run.outputDir)).toEqual([]);
  });

  it('an existing function without an E2B key, re-deployed without one', async () => {
    expect((await deployToFake(fake, ['--auth-token-file', tokenFile(), '--sandbox-backend', 'local'])).code).toBe(0);
    fake.calls.length = 0;
    const run = await deployToFake(fake, ['--auth-token-file', tokenFile()]);
    expect(run.code).toBe(2);
    expect(actions()).toEqual(['GetFunction']);
  });

  it('bearer auth with no token given and none on the function (it was deployed open)', async () => {
    expect((await deployToFake(fake, ['--no-auth'], { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY })).code).toBe(0);
    fake.calls.length = 0;
    const run = await deployToFake(fake, [], { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY });
    expect(run.code).toBe(2);
    expect(run.json.error?.message).toContain(
      'refusing to deploy without an auth token (function sandbox-mcp has none to keep)',
    );
    expect(actions()).toEqual(['GetFunction']);
  });

  it("an environment over FC's 4 KB once the function's kept variables are counted", async () => {
    expect(
      (
        await deployToFake(fake, ['--auth-token-file', tokenFile(), '--env', `BIG=${'x'.repeat(2500)}`], {
          ...EMPTY_SHELL,
          E2B_API_KEY: E2B_KEY,
        })
      ).code,
    ).toBe(0);
    fake.calls.length = 0;
    const run = await deployToFake(fake, ['--env', `OTHER=${'y'.repeat(1500)}`]);
    expect(run.code).toBe(2);
    expect(run.json.error?.message).toMatch(
      /would come to \d+ bytes with the ones kept from the function, over FC's 4096-byte limit/,
    );
    expect(actions()).toEqual(['GetFunction']);
  });

  it('an --unset of the only E2B key', async () => {
    await firstDeploy();
    const run = await deployToFake(fake, ['--unset', 'E2B_API_KEY']);
    expect(run.code).toBe(2);
    expect(actions()).toEqual(['GetFunction']);
  });
});

describe('--sandbox-backend local', () => {
  it(
    'deploys without E2B on purpose, says what it does not isolate, ' + 'and sets the backend so that it cannot drift',
    async () => {
      const run = await deployToFake(fake, ['--auth-token-file', tokenFile(), '--sandbox-backend', 'local']);
      expect(run.code).toBe(0);
      const env = fake.functions.get('sandbox-mcp')?.environmentVariables as Record<string, string>;
      expect(env).toMatchObject({ SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_ISOLATION: 'none' });
      expect(env).not.toHaveProperty('E2B_API_KEY');
      expect(run.stderr).toContain('What does not: no mount, process or network isolation');
    },
  );

  it(
    'an E2B deploy sets SANDBOX_BACKEND=e2b, so that a function that loses its key fails loudly instead of running ' +
      'local',
    async () => {
      expect(
        (await deployToFake(fake, ['--auth-token-file', tokenFile()], { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY })).code,
      ).toBe(0);
      expect(fake.functions.get('sandbox-mcp')?.environmentVariables).toMatchObject({
        SANDBOX_BACKEND: 'e2b',
        E2B_API_KEY: E2B_KEY,
      });
    },
  );

  it('refuses E2B options beside it, before any call', async () => {
    const run = await deployToFake(fake, [
      '--auth-token-file',
      tokenFile(),
      '--sandbox-backend',
      'local',
      '--e2b-domain',
      'cn-hangzhou.e2b.fc.aliyuncs.com',
    ]);
    expect(run.code).toBe(2);
    expect(fake.calls).toEqual([]);
  });
});

describe('--dry-run with --deploy', () => {
  it('shows the environment diff, secrets masked, and changes nothing', async () => {
    await firstDeploy();
    const before = functionState();
    const newKey = 'e2b_rotated_key_987654321';
    const run = await deployToFake(
      fake,
      ['--dry-run', '--env', 'NEW_SETTING=1', '--unset', 'TEAM_SETTING', '--log-level', 'debug'],
      { ...EMPTY_SHELL, E2B_API_KEY: newKey },
    );
    expect(run.code).toBe(0);
    expect(actions()).toEqual(['GetFunction']);
    expect(functionState()).toEqual(before);
    expect(run.json.environment).toEqual(
      expect.arrayContaining([
        '+ NEW_SETTING="1"',
        '- TEAM_SETTING (removed)',
        '~ LOG_LEVEL: "info" → "debug"',
        `~ E2B_API_KEY: <secret, ${E2B_KEY.length} characters> → <secret, ${newKey.length} characters>`,
        '= MCP_AUTH_TOKENS (kept)',
      ]),
    );
    expect(run.stderr).toContain('secrets masked');
    for (const secret of [E2B_KEY, newKey, TOKEN, SESSION_SECRET])
      expect(run.stdout + run.stderr).not.toContain(secret);
  });
});
