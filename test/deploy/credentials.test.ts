/**
 * Where --deploy's credentials come from (scripts/fc-credentials.js): the default chain of @alicloud/credentials
 * (environment, Aliyun CLI profile, ~/.alibabacloud/credentials, ECS RAM role), one chosen profile, or an access
 * Serverless Devs stored in ~/.s/access.yaml. Each test gets a temporary HOME; every call passes
 * ALIBABA_CLOUD_ECS_METADATA_DISABLED=true, so no test reaches the instance metadata address (only loopback is
 * used, by the fake FC API of the CLI tests). The CLI tests run the real CLI against that fake, which checks every
 * request's signature against the credentials the test expects the CLI to have found.
 */
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { DefaultCredentialsProvider } from '@alicloud/credentials';

import { UsageError } from '../../scripts/deploy-errors';
import { CHAIN_PROVIDERS, CREDENTIALS_HELP, resolveFcCredentials } from '../../scripts/fc-credentials';
import { makeTempDir, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { fakeEndpoints } from '../support/deploy-to-fake';
import { type Credentials, startFakeFc, unsignedCalls } from '../support/fake-fc';

const OFFLINE = { ALIBABA_CLOUD_ECS_METADATA_DISABLED: 'true' };

const PROFILE_AK = { accessKeyId: 'LTAI5tProfileKeyId01', accessKeySecret: 'profile-secret-a1b2c3d4e5f6' };
const PROFILE_STS = {
  accessKeyId: 'STS.NTestStsKeyId02',
  accessKeySecret: 'sts-secret-0f9e8d7c6b5a',
  securityToken: 'CAIS-test-security-token-7d6c5b4a',
};
const PROFILE_OTHER = { accessKeyId: 'LTAI5tOtherKeyId0003', accessKeySecret: 'other-secret-5a4b3c2d1e0f' };
const INI_AK = { accessKeyId: 'LTAI5tIniKeyId000004', accessKeySecret: 'ini-secret-99aa88bb77cc' };
const ENV_AK = { accessKeyId: 'LTAI5tEnvKeyId000005', accessKeySecret: 'env-secret-1234abcd5678' };
/** What SDEVS_ACCESS_YAML holds, encrypted. */
const SDEVS_AK = { accessKeyId: 'LTAI5tSdevsFixtureId', accessKeySecret: 'sdevs-fixture-secret-0123456789' };
/**
 * An access.yaml as Serverless Devs 3.x writes it (`s config add --AccessKeyID … --AccessKeySecret …`, then
 * `s config default`): made with crypto-js 4.2.0 `AES.encrypt(value, 'SecretKey123')` and js-yaml's dump, as
 * @serverless-devs/credential does, so these bytes come from the real writer, not from this repository's code.
 */
const SDEVS_ACCESS_YAML = `default:
  AccessKeyID: U2FsdGVkX181heuTjATG66sLyjLgyy5DN+eq+8S2nk+U9ac0HjJ6+HrPMydupjge
  AccessKeySecret: U2FsdGVkX1/dgQTBwdmgY3n6rd+/QZTy8Q+zHNR47DSZ1tNNdzk38WLCYp373z2z
  AccountID: U2FsdGVkX18ZSy9uuC0oguLoOMfnmKEZFBsRphHEaFUjf+LJLolxHeeygkoIqtWo
  __default: U2FsdGVkX19qzwG17Dcupw4lsYkYYgWSLJsmDHMl71E=
`;

/**
 * The builders of @alicloud/credentials fall back to process.env for a few values; a developer's own
 * ALIBABA_CLOUD_* variables must not reach these tests.
 */
const savedEnv: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const name of Object.keys(process.env).filter(
    (n) => n.startsWith('ALIBABA_CLOUD_') || n === 'serverless_devs_config_home',
  )) {
    savedEnv[name] = process.env[name];
    delete process.env[name];
  }
});
afterAll(() => {
  Object.assign(process.env, savedEnv);
  removeTempDirs();
});

interface CliProfile {
  name: string;
  mode: 'AK' | 'StsToken';
  accessKeyId: string;
  accessKeySecret: string;
  securityToken?: string;
}

/** ~/.aliyun/config.json as `aliyun configure` writes it (the fields of an AK or StsToken profile). */
function writeAliyunConfig(home: string, current: string, profiles: CliProfile[]): void {
  mkdirSync(join(home, '.aliyun'), { recursive: true });
  const config = {
    current,
    profiles: profiles.map((p) => ({
      name: p.name,
      mode: p.mode,
      access_key_id: p.accessKeyId,
      access_key_secret: p.accessKeySecret,
      sts_token: p.securityToken ?? '',
      ram_role_name: '',
      ram_role_arn: '',
      ram_session_name: '',
      private_key: '',
      key_pair_name: '',
      expired_seconds: 0,
      verified: '',
      region_id: 'cn-hangzhou',
      output_format: 'json',
      language: 'en',
      site: '',
      retry_timeout: 0,
      connect_timeout: 0,
      retry_count: 0,
      process_command: '',
    })),
    meta_path: '',
  };
  writeFileSync(join(home, '.aliyun', 'config.json'), JSON.stringify(config, null, '\t'), { mode: 0o600 });
}

/** ~/.alibabacloud/credentials, the shared ini file of the Alibaba Cloud SDKs. */
function writeIniCredentials(
  home: string,
  section: string,
  keys: { accessKeyId: string; accessKeySecret: string },
): void {
  mkdirSync(join(home, '.alibabacloud'), { recursive: true });
  writeFileSync(
    join(home, '.alibabacloud', 'credentials'),
    `[${section}]\ntype = access_key\naccess_key_id = ${keys.accessKeyId}\naccess_key_secret = ` +
      `${keys.accessKeySecret}\n`,
  );
}

function writeAccessYaml(home: string, text: string, name = 'access.yaml'): void {
  mkdirSync(join(home, '.s'), { recursive: true });
  writeFileSync(join(home, '.s', name), text, { mode: 0o600 });
}

/** crypto-js's `AES.encrypt(text, passphrase).toString()`: OpenSSL's salted format, key and IV from MD5
 * EVP_BytesToKey. */
function cryptoJsEncrypt(text: string): string {
  const passphrase = 'SecretKey123';
  const salt = randomBytes(8);
  let block = Buffer.alloc(0);
  let material = Buffer.alloc(0);
  while (material.length < 48) {
    block = createHash('md5')
      .update(Buffer.concat([block, Buffer.from(passphrase), salt]))
      .digest();
    material = Buffer.concat([material, block]);
  }
  const cipher = createCipheriv('aes-256-cbc', material.subarray(0, 32), material.subarray(32, 48));
  return Buffer.concat([Buffer.from('Salted__'), salt, cipher.update(text, 'utf8'), cipher.final()]).toString('base64');
}

/** A message or source shows no secret: not the secret, not its token, not a long piece of either. */
function expectNoSecret(text: string, ...secrets: Array<{ accessKeySecret: string; securityToken?: string }>): void {
  for (const { accessKeySecret, securityToken } of secrets) {
    for (const secret of [accessKeySecret, securityToken].filter((s): s is string => s !== undefined)) {
      expect({
        text,
        leaks: text.includes(secret) || text.includes(secret.slice(0, 8)) || text.includes(secret.slice(-8)),
      }).toEqual({ text, leaks: false });
    }
  }
}

async function usageErrorOf(promise: Promise<unknown>): Promise<InstanceType<typeof UsageError>> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UsageError);
  return err as InstanceType<typeof UsageError>;
}

describe('the default chain', () => {
  // Proves: the Aliyun CLI's current profile is read from HOME's ~/.aliyun/config.json, AK mode without a token.
  it('reads the current AK profile of ~/.aliyun/config.json, and says so without the secret', async () => {
    const home = makeTempDir('home-');
    writeAliyunConfig(home, 'default', [{ name: 'default', mode: 'AK', ...PROFILE_AK }]);
    const found = await resolveFcCredentials({ env: OFFLINE, home });
    expect(found).toEqual({
      ...PROFILE_AK,
      securityToken: undefined,
      source: 'profile "default" in ~/.aliyun/config.json (AccessKey)',
    });
    expectNoSecret(found.source, PROFILE_AK);
  });

  // Proves: an StsToken profile gives its security token too (a lost token would fail the signature upstream).
  it('reads an StsToken profile with its security token', async () => {
    const home = makeTempDir('home-');
    writeAliyunConfig(home, 'sts', [
      { name: 'default', mode: 'AK', ...PROFILE_AK },
      { name: 'sts', mode: 'StsToken', ...PROFILE_STS },
    ]);
    const found = await resolveFcCredentials({ env: OFFLINE, home });
    expect(found).toEqual({ ...PROFILE_STS, source: 'profile "sts" in ~/.aliyun/config.json (STS token)' });
    expectNoSecret(found.source, PROFILE_STS);
  });

  // Proves: a profile other than the current one is chosen by the profile option, or else by ALIBABA_CLOUD_PROFILE.
  it('reads a non-current profile named by --profile or by ALIBABA_CLOUD_PROFILE', async () => {
    const home = makeTempDir('home-');
    writeAliyunConfig(home, 'default', [
      { name: 'default', mode: 'AK', ...PROFILE_AK },
      { name: 'other', mode: 'AK', ...PROFILE_OTHER },
    ]);
    const byOption = await resolveFcCredentials({ env: OFFLINE, home, profile: 'other' });
    expect(byOption).toEqual({
      ...PROFILE_OTHER,
      securityToken: undefined,
      source: 'profile "other" in ~/.aliyun/config.json (AccessKey)',
    });
    const byVariable = await resolveFcCredentials({ env: { ...OFFLINE, ALIBABA_CLOUD_PROFILE: 'other' }, home });
    expect(byVariable).toEqual(byOption);
  });

  // Proves: the environment variables come first in the chain, ahead of a profile file that is also there.
  it('prefers ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET/_SECURITY_TOKEN to any profile', async () => {
    const home = makeTempDir('home-');
    writeAliyunConfig(home, 'default', [{ name: 'default', mode: 'AK', ...PROFILE_AK }]);
    const env = {
      ...OFFLINE,
      ALIBABA_CLOUD_ACCESS_KEY_ID: ENV_AK.accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: ENV_AK.accessKeySecret,
    };
    const found = await resolveFcCredentials({ env, home });
    expect(found).toEqual({
      ...ENV_AK,
      securityToken: undefined,
      source: 'environment variables ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET',
    });
    const withToken = await resolveFcCredentials({
      env: { ...env, ALIBABA_CLOUD_SECURITY_TOKEN: 'env-sts-token-abcdef0123' },
      home,
    });
    expect(withToken).toMatchObject({
      ...ENV_AK,
      securityToken: 'env-sts-token-abcdef0123',
      source: expect.stringContaining('ALIBABA_CLOUD_SECURITY_TOKEN'),
    });
    expectNoSecret(found.source + withToken.source, ENV_AK, { accessKeySecret: 'env-sts-token-abcdef0123' });
  });

  // Proves: ~/.alibabacloud/credentials is read when the CLI has no config, and config.json wins when both exist.
  it('falls back to ~/.alibabacloud/credentials, after ~/.aliyun/config.json', async () => {
    const home = makeTempDir('home-');
    writeIniCredentials(home, 'default', INI_AK);
    const fromIni = await resolveFcCredentials({ env: OFFLINE, home });
    expect(fromIni).toEqual({
      ...INI_AK,
      securityToken: undefined,
      source: 'profile "default" in ~/.alibabacloud/credentials (AccessKey)',
    });
    writeAliyunConfig(home, 'default', [{ name: 'default', mode: 'AK', ...PROFILE_AK }]);
    expect(await resolveFcCredentials({ env: OFFLINE, home })).toMatchObject(PROFILE_AK);
  });

  // Proves: the chain here has the same links, in the same order, as the installed package's default chain, so an
  // upgrade that changes the package's chain fails here instead of drifting silently.
  it("has the links of @alicloud/credentials' own default chain, in its order", () => {
    // The package adds its OIDC and URI links only when their variables are set: set them for this construction.
    const links = {
      ALIBABA_CLOUD_ROLE_ARN: 'acs:ram::1:role/x',
      ALIBABA_CLOUD_OIDC_PROVIDER_ARN: 'acs:ram::1:oidc-provider/x',
      ALIBABA_CLOUD_OIDC_TOKEN_FILE: '/nonexistent',
      ALIBABA_CLOUD_CREDENTIALS_URI: 'http://127.0.0.1:9/',
    };
    Object.assign(process.env, links);
    try {
      const chain = DefaultCredentialsProvider.builder().build() as unknown as {
        providers: Array<{ getProviderName(): string }>;
      };
      expect(chain.providers.map((p) => p.getProviderName())).toEqual(CHAIN_PROVIDERS);
    } finally {
      for (const name of Object.keys(links)) delete process.env[name];
    }
    expect(CHAIN_PROVIDERS).toEqual([
      'env',
      'oidc_role_arn',
      'cli_profile',
      'profile',
      'ecs_ram_role',
      'credential_uri',
    ]);
  });
});

describe('--profile', () => {
  // Proves: an explicit --profile is not overridden by credentials in the environment.
  it('reads only the named profile, even when the environment has credentials', async () => {
    const home = makeTempDir('home-');
    writeAliyunConfig(home, 'default', [
      { name: 'default', mode: 'AK', ...PROFILE_AK },
      { name: 'other', mode: 'AK', ...PROFILE_OTHER },
    ]);
    const env = {
      ...OFFLINE,
      ALIBABA_CLOUD_ACCESS_KEY_ID: ENV_AK.accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: ENV_AK.accessKeySecret,
    };
    expect(await resolveFcCredentials({ env, home, profile: 'other' })).toMatchObject(PROFILE_OTHER);
  });

  // Proves: a missing profile is an error naming it and both profile files, not a fall-through to other sources.
  it('fails for a profile that does not exist, naming it and the files read', async () => {
    const home = makeTempDir('home-');
    writeAliyunConfig(home, 'default', [{ name: 'default', mode: 'AK', ...PROFILE_AK }]);
    const env = {
      ...OFFLINE,
      ALIBABA_CLOUD_ACCESS_KEY_ID: ENV_AK.accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: ENV_AK.accessKeySecret,
    };
    const err = await usageErrorOf(resolveFcCredentials({ env, home, profile: 'missing' }));
    expect(err.message).toContain('--profile missing');
    expect(err.message).toContain('profile "missing" in ~/.aliyun/config.json');
    expect(err.message).toContain('profile "missing" in ~/.alibabacloud/credentials: no such file');
    expectNoSecret(err.message, PROFILE_AK, ENV_AK);
  });

  // Proves: the two ways of choosing credentials cannot be combined.
  it('refuses --profile together with --s-access', async () => {
    const err = await usageErrorOf(
      resolveFcCredentials({ env: OFFLINE, home: makeTempDir('home-'), profile: 'a', sAccess: 'b' }),
    );
    expect(err.message).toContain('--profile and --s-access');
  });
});

describe('--s-access (Serverless Devs)', () => {
  // Proves: an access.yaml written by Serverless Devs itself (encrypted values) decrypts to its keys, and it is used
  // instead of the chain: credentials in the environment do not win.
  it('decrypts the access `s config add` wrote, instead of using the chain', async () => {
    const home = makeTempDir('home-');
    writeAccessYaml(home, SDEVS_ACCESS_YAML);
    const env = {
      ...OFFLINE,
      ALIBABA_CLOUD_ACCESS_KEY_ID: ENV_AK.accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: ENV_AK.accessKeySecret,
    };
    const found = await resolveFcCredentials({ env, home, sAccess: 'default' });
    expect(found).toEqual({
      ...SDEVS_AK,
      securityToken: undefined,
      source: 'Serverless Devs access "default" (~/.s/access.yaml)',
    });
    expectNoSecret(found.source, SDEVS_AK);
  });

  // Proves: another alias is found, its SecurityToken is read, values stored in clear are taken as they are (as s
  // does), access.yml is read when access.yaml is absent, and serverless_devs_config_home moves the .s directory.
  it('reads a SecurityToken, clear-text values, access.yml and serverless_devs_config_home', async () => {
    const home = makeTempDir('home-');
    const sts = PROFILE_STS;
    writeAccessYaml(
      home,
      `default:\n  AccessKeyID: ${cryptoJsEncrypt('LTAI5tUnused0000000')}\n  AccessKeySecret: ` +
        `${cryptoJsEncrypt('unused-secret-000000')}\n` +
        `sts:\n  AccessKeyID: ${cryptoJsEncrypt(sts.accessKeyId)}\n  AccessKeySecret: ` +
        `${cryptoJsEncrypt(sts.accessKeySecret)}\n  SecurityToken: ${cryptoJsEncrypt(sts.securityToken)}\n  ` +
        `AccountID: ${cryptoJsEncrypt('1234567890123456')}\n` +
        `plain:\n  AccessKeyID: ${PROFILE_OTHER.accessKeyId}\n  AccessKeySecret: ${PROFILE_OTHER.accessKeySecret}\n`,
      'access.yml',
    );
    expect(await resolveFcCredentials({ env: OFFLINE, home, sAccess: 'sts' })).toEqual({
      ...sts,
      source: 'Serverless Devs access "sts" (~/.s/access.yml)',
    });
    expect(await resolveFcCredentials({ env: OFFLINE, home, sAccess: 'plain' })).toMatchObject({
      ...PROFILE_OTHER,
      securityToken: undefined,
    });
    const elsewhere = makeTempDir('s-home-');
    writeAccessYaml(elsewhere, SDEVS_ACCESS_YAML);
    expect(
      await resolveFcCredentials({
        env: { ...OFFLINE, serverless_devs_config_home: elsewhere },
        home,
        sAccess: 'default',
      }),
    ).toMatchObject(SDEVS_AK);
  });

  // Proves: without access.yaml the error names the path it looked at.
  it('names the file when there is no access.yaml', async () => {
    const err = await usageErrorOf(
      resolveFcCredentials({ env: OFFLINE, home: makeTempDir('home-'), sAccess: 'default' }),
    );
    expect(err.message).toContain('--s-access default: ~/.s/access.yaml does not exist');
  });

  // Proves: an unknown alias lists the aliases the file has, and none of their (decrypted or stored) values.
  it('lists the aliases, never their values, when the alias is not there', async () => {
    const home = makeTempDir('home-');
    writeAccessYaml(
      home,
      `${SDEVS_ACCESS_YAML}prod:\n  AccessKeyID: ${PROFILE_OTHER.accessKeyId}\n  AccessKeySecret: ` +
        `${PROFILE_OTHER.accessKeySecret}\n`,
    );
    const err = await usageErrorOf(resolveFcCredentials({ env: OFFLINE, home, sAccess: 'staging' }));
    expect(err.message).toBe('--s-access staging: ~/.s/access.yaml has no access "staging"; it has "default", "prod"');
  });

  // Proves: a value that looks encrypted but does not decrypt is reported by its key, not sent to FC as a key.
  it('reports a value that does not decrypt', async () => {
    const home = makeTempDir('home-');
    // Cut short: no longer whole AES blocks, so it can never decrypt (a wrong key alone might, by chance, unpad).
    const damaged = Buffer.from(cryptoJsEncrypt('some-secret-value-000'), 'base64').subarray(0, -4).toString('base64');
    writeAccessYaml(
      home,
      `default:\n  AccessKeyID: ${cryptoJsEncrypt('LTAI5tSomeKeyId00000')}\n  AccessKeySecret: ${damaged}\n`,
    );
    const err = await usageErrorOf(resolveFcCredentials({ env: OFFLINE, home, sAccess: 'default' }));
    expect(err.message).toContain('AccessKeySecret of that access in ~/.s/access.yaml cannot be decrypted');
  });
});

describe('when no source has credentials', () => {
  // Proves: the error lists every source of the chain with why it gave nothing, and shows no secret, even from a
  // config file the package could not parse (its own message would quote the file).
  it('throws a UsageError naming each source tried, without any secret', async () => {
    const home = makeTempDir('home-');
    mkdirSync(join(home, '.aliyun'));
    writeFileSync(
      join(home, '.aliyun', 'config.json'),
      `{"current": "default", "profiles": [{"name": "default", "access_key_secret": "${PROFILE_AK.accessKeySecret}",`,
    );
    writeIniCredentials(home, 'prod', INI_AK);
    const err = await usageErrorOf(resolveFcCredentials({ env: OFFLINE, home }));
    const lines = err.message.split('\n');
    expect(lines[0]).toBe('no Alibaba Cloud credentials found for --deploy; tried, in order:');
    expect(lines.slice(1, 7)).toEqual([
      '    - environment variables ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET: not set',
      '    - OIDC role (ALIBABA_CLOUD_ROLE_ARN/ALIBABA_CLOUD_OIDC_PROVIDER_ARN/ALIBABA_CLOUD_OIDC_TOKEN_FILE): not set',
      expect.stringMatching(
        new RegExp(
          String.raw`^ {4}- the current profile in ~\/\.aliyun\/config\.json: ` +
            String.raw`parse aliyun cli config from '.*config\.json' failed$`,
        ),
      ),
      '    - profile "default" in ~/.alibabacloud/credentials: Can not find credential type for "default"',
      '    - ECS RAM role (instance metadata): turned off by ALIBABA_CLOUD_ECS_METADATA_DISABLED=true',
      '    - the credentials URL in ALIBABA_CLOUD_CREDENTIALS_URI: not set',
    ]);
    expect(err.message).toContain('--s-access ALIAS');
    expectNoSecret(err.message, PROFILE_AK, INI_AK);
  });

  // Proves: --help's text names every source, in the chain's order.
  it('CREDENTIALS_HELP lists the sources in order', () => {
    const order = [
      'ALIBABA_CLOUD_ACCESS_KEY_ID',
      'ALIBABA_CLOUD_OIDC_TOKEN_FILE',
      '~/.aliyun/config.json',
      '~/.alibabacloud/credentials',
      'ECS',
      'ALIBABA_CLOUD_CREDENTIALS_URI',
      '--profile',
      '--s-access',
    ];
    const at = order.map((word) => CREDENTIALS_HELP.indexOf(word));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
  });
});

describe('the CLI with credentials only in HOME', () => {
  const E2B_KEY = 'e2b_key_for_the_function_0123456789';

  /** A deploy whose environment has no Alibaba Cloud credentials: only HOME, which the test has filled. */
  async function deployWith(expected: Credentials, home: string, args: string[] = []) {
    const fake = await startFakeFc(expected);
    try {
      const tokens = join(makeTempDir(), 'tokens');
      writeFileSync(tokens, 'deploy-test-token-0123456789abcdef\n', { mode: 0o600 });
      const run = await runDeployCli(
        [
          '--output-dir',
          makeTempDir(),
          '--deploy',
          ...fakeEndpoints(fake, args),
          '--auth-token-file',
          tokens,
          '--json',
          ...args,
        ],
        {
          env: { HOME: home, ...OFFLINE, E2B_API_KEY: E2B_KEY },
        },
      );
      return { ...run, calls: [...fake.calls] };
    } finally {
      await fake.close();
    }
  }

  // Proves: the CLI finds the Aliyun CLI profile in HOME, signs every FC call with that profile's keys (the fake
  // refuses any other signature), logs the source, and prints no secret.
  it(
    'deploys with the current profile of ~/.aliyun/config.json, ' + "signing every call with that profile's keys",
    async () => {
      const home = makeTempDir('home-');
      writeAliyunConfig(home, 'default', [{ name: 'default', mode: 'AK', ...PROFILE_AK }]);
      const run = await deployWith(PROFILE_AK, home);
      expect({ code: run.code, stderr: run.stderr }).toEqual({
        code: 0,
        stderr: expect.stringContaining('Credentials: profile "default" in ~/.aliyun/config.json (AccessKey).'),
      });
      expect(run.calls.map((c) => c.action)).toContain('CreateFunction');
      expect(unsignedCalls(run.calls)).toEqual([]);
      expectNoSecret(run.stdout + run.stderr, PROFILE_AK);
    },
  );

  // Proves: --profile picks a non-current StsToken profile, and its security token is sent (and signed) on every call.
  it('deploys with --profile sts, sending its security token', async () => {
    const home = makeTempDir('home-');
    writeAliyunConfig(home, 'default', [
      { name: 'default', mode: 'AK', ...PROFILE_AK },
      { name: 'sts', mode: 'StsToken', ...PROFILE_STS },
    ]);
    const run = await deployWith(PROFILE_STS, home, ['--profile', 'sts']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({
      code: 0,
      stderr: expect.stringContaining('Credentials: profile "sts" in ~/.aliyun/config.json (STS token).'),
    });
    expect(run.calls.length).toBeGreaterThan(0);
    expect(unsignedCalls(run.calls)).toEqual([]);
    expectNoSecret(run.stdout + run.stderr, PROFILE_STS);
  });

  // Proves: --s-access default deploys with the keys Serverless Devs stored, every call signed with them.
  it("deploys with --s-access default, signing every call with Serverless Devs' stored access", async () => {
    const home = makeTempDir('home-');
    writeAccessYaml(home, SDEVS_ACCESS_YAML);
    const run = await deployWith(SDEVS_AK, home, ['--s-access', 'default']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({
      code: 0,
      stderr: expect.stringContaining('Credentials: Serverless Devs access "default" (~/.s/access.yaml).'),
    });
    expect(run.calls.map((c) => c.action)).toContain('CreateFunction');
    expect(unsignedCalls(run.calls)).toEqual([]);
    expectNoSecret(run.stdout + run.stderr, SDEVS_AK);
  });

  // Proves: with no source at all the CLI stops with exit 2 before any FC call, listing what it tried.
  it('exits 2 without calling FC when no source has credentials', async () => {
    const run = await deployWith(PROFILE_AK, makeTempDir('home-'));
    expect(run.code).toBe(2);
    expect(run.calls).toEqual([]);
    expect(run.stderr).toContain('no Alibaba Cloud credentials found for --deploy; tried, in order:');
    expect(run.stderr).toContain('ALIBABA_CLOUD_ECS_METADATA_DISABLED=true');
  });
});
