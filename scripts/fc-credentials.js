/**
 * The Alibaba Cloud credentials --deploy signs its FC API calls with: the default credential chain of
 * `@alicloud/credentials` (its providers, in its order), one profile (--profile), or an access stored by
 * Serverless Devs (--s-access). Secrets never reach a message: sources are named, values are not.
 */
'use strict';

const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

const { UsageError, describeError } = require('./deploy-errors');
const { readServerlessDevsAccess, shown } = require('./serverless-devs-access');

/**
 * @typedef {object} FcCredentials
 * @property {string} accessKeyId
 * @property {string} accessKeySecret
 * @property {string | undefined} securityToken
 * @property {string} source where they came from, for the log; never any part of a secret
 */

/**
 * @typedef {object} CredentialsRequest
 * @property {Record<string, string | undefined>} env the operator's environment
 * @property {string | undefined} home the operator's home directory (HOME)
 * @property {string} [profile] --profile: read only this profile
 * @property {string} [sAccess] --s-access: read only this alias of Serverless Devs' access.yaml
 */

/**
 * One link of the chain. `provider` is the name `@alicloud/credentials` gives the same link of its default chain;
 * `create` returns the package's provider, or a string saying why the link is skipped.
 * @typedef {object} ChainLink
 * @property {string} provider
 * @property {(request: ChainRequest) => string} label
 * @property {(lib: typeof import('@alicloud/credentials'), request: ChainRequest) =>
 * import('@alicloud/credentials').CredentialsProvider | string} create
 */

/** @typedef {{ env: Record<string, string | undefined>, home: string | undefined, profile: string | undefined }}
 * ChainRequest */

const CREDENTIALS_HELP = [
  'Credentials for --deploy: the first of these that has them (the default chain of @alicloud/credentials):',
  '  1. ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (and ALIBABA_CLOUD_SECURITY_TOKEN for an ' +
    'STS token)',
  '  2. an OIDC role: ALIBABA_CLOUD_ROLE_ARN, ALIBABA_CLOUD_OIDC_PROVIDER_ARN and ALIBABA_CLOUD_OIDC_TOKEN_FILE',
  "  3. the Aliyun CLI's ~/.aliyun/config.json: the profile ALIBABA_CLOUD_PROFILE names, else its current one",
  '  4. ~/.alibabacloud/credentials (or ALIBABA_CLOUD_CREDENTIALS_FILE): the section ALIBABA_CLOUD_PROFILE ' +
    'names, else [default]',
  "  5. the ECS instance's RAM role, from the instance metadata (ALIBABA_CLOUD_ECS_METADATA_DISABLED=true turns " +
    'it off)',
  '  6. the URL in ALIBABA_CLOUD_CREDENTIALS_URI',
  '--profile NAME reads only that profile (3, then 4); --s-access ALIAS reads only that access of Serverless ' +
    'Devs (~/.s/access.yaml).',
].join('\n');

/** What `@alicloud/credentials` names the inner provider of a profile, as words for the log. */
const MODES = {
  static_ak: 'AccessKey',
  static_sts: 'STS token',
  ram_role_arn: 'RAM role assumed through STS',
  ecs_ram_role: 'ECS RAM role',
  oidc_role_arn: 'OIDC role',
  cloud_sso: 'CloudSSO',
  oauth: 'OAuth',
  external: 'external command',
};

/** @param {string | undefined} value */
const isTrue = (value) => (value ?? '').toLowerCase() === 'true';

/**
 * The links of `@alicloud/credentials`' DefaultCredentialsProvider, in its order. Built here from the package's
 * own provider classes rather than taken whole because the whole chain reads process.env and os.homedir() itself;
 * the CLI passes the environment and HOME in explicitly (and its tests pass a temporary HOME).
 * @type {ChainLink[]}
 */
const CHAIN = [
  {
    provider: 'env',
    label: ({ env }) =>
      'environment variables ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET' +
      (env.ALIBABA_CLOUD_SECURITY_TOKEN ? '/ALIBABA_CLOUD_SECURITY_TOKEN' : ''),
    create: (lib, { env }) => {
      const accessKeyId = env.ALIBABA_CLOUD_ACCESS_KEY_ID;
      const accessKeySecret = env.ALIBABA_CLOUD_ACCESS_KEY_SECRET;
      if (!accessKeyId || !accessKeySecret) return 'not set';
      const token = env.ALIBABA_CLOUD_SECURITY_TOKEN;
      return token
        ? lib.StaticSTSCredentialsProvider.builder()
            .withAccessKeyId(accessKeyId)
            .withAccessKeySecret(accessKeySecret)
            .withSecurityToken(token)
            .build()
        : lib.StaticAKCredentialsProvider.builder()
            .withAccessKeyId(accessKeyId)
            .withAccessKeySecret(accessKeySecret)
            .build();
    },
  },
  {
    provider: 'oidc_role_arn',
    label: ({ env }) =>
      env.ALIBABA_CLOUD_ROLE_ARN
        ? `OIDC role ${env.ALIBABA_CLOUD_ROLE_ARN} (ALIBABA_CLOUD_ROLE_ARN/ALIBABA_CLOUD_OIDC_TOKEN_FILE)`
        : 'OIDC role (ALIBABA_CLOUD_ROLE_ARN/ALIBABA_CLOUD_OIDC_PROVIDER_ARN/ALIBABA_CLOUD_OIDC_TOKEN_FILE)',
    create: (lib, { env }) => {
      const roleArn = env.ALIBABA_CLOUD_ROLE_ARN;
      const providerArn = env.ALIBABA_CLOUD_OIDC_PROVIDER_ARN;
      const tokenFile = env.ALIBABA_CLOUD_OIDC_TOKEN_FILE;
      if (!roleArn || !providerArn || !tokenFile) return 'not set';
      const builder = lib.OIDCRoleArnCredentialsProvider.builder()
        .withRoleArn(roleArn)
        .withOIDCProviderArn(providerArn)
        .withOIDCTokenFilePath(tokenFile);
      if (env.ALIBABA_CLOUD_ROLE_SESSION_NAME) builder.withRoleSessionName(env.ALIBABA_CLOUD_ROLE_SESSION_NAME);
      if (env.ALIBABA_CLOUD_STS_REGION) builder.withStsRegionId(env.ALIBABA_CLOUD_STS_REGION);
      if (isTrue(env.ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED)) builder.withEnableVpc(true);
      return builder.build();
    },
  },
  {
    provider: 'cli_profile',
    label: ({ env, home, profile }) => {
      const file = cliConfigPath(home);
      const name = profile ?? env.ALIBABA_CLOUD_PROFILE ?? (file === undefined ? undefined : currentCliProfile(file));
      return (
        `${name === undefined ? 'the current profile' : `profile "${name}"`} in ` +
        `${file === undefined ? '~/.aliyun/config.json' : shown(file, home)}`
      );
    },
    create: (lib, { env, home, profile }) => {
      if (isTrue(env.ALIBABA_CLOUD_CLI_PROFILE_DISABLED))
        return 'turned off by ALIBABA_CLOUD_CLI_PROFILE_DISABLED=true';
      const file = cliConfigPath(home);
      if (file === undefined) return 'HOME is not set';
      if (!existsSync(file)) return 'no such file';
      const builder = lib.CLIProfileCredentialsProvider.builder();
      const name = profile ?? env.ALIBABA_CLOUD_PROFILE;
      if (name !== undefined) builder.withProfileName(name);
      return withHome(builder.build(), home);
    },
  },
  {
    provider: 'profile',
    label: ({ env, home, profile }) => {
      const file = iniPath(env, home);
      return (
        `profile "${profile ?? env.ALIBABA_CLOUD_PROFILE ?? 'default'}" in ` +
        `${file === undefined ? '~/.alibabacloud/credentials' : shown(file, home)}`
      );
    },
    create: (lib, { env, home, profile }) => {
      const file = iniPath(env, home);
      if (file === undefined) return 'HOME is not set';
      if (!existsSync(file)) return 'no such file';
      return withHome(
        lib.ProfileCredentialsProvider.builder()
          .withProfileName(profile ?? env.ALIBABA_CLOUD_PROFILE ?? 'default')
          .build(),
        home,
      );
    },
  },
  {
    provider: 'ecs_ram_role',
    label: ({ env }) =>
      `ECS RAM role${env.ALIBABA_CLOUD_ECS_METADATA ? ` "${env.ALIBABA_CLOUD_ECS_METADATA}"` : ''} (instance metadata)`,
    create: (lib, { env }) => {
      if (isTrue(env.ALIBABA_CLOUD_ECS_METADATA_DISABLED))
        return 'turned off by ALIBABA_CLOUD_ECS_METADATA_DISABLED=true';
      const builder = lib.ECSRAMRoleCredentialsProvider.builder().withDisableIMDSv1(
        isTrue(env.ALIBABA_CLOUD_IMDSV1_DISABLED),
      );
      if (env.ALIBABA_CLOUD_ECS_METADATA) builder.withRoleName(env.ALIBABA_CLOUD_ECS_METADATA);
      return builder.build();
    },
  },
  {
    provider: 'credential_uri',
    // The URL is not shown: it may carry a token.
    label: () => 'the credentials URL in ALIBABA_CLOUD_CREDENTIALS_URI',
    create: (lib, { env }) =>
      env.ALIBABA_CLOUD_CREDENTIALS_URI
        ? lib.URICredentialsProvider.builder().withCredentialsURI(env.ALIBABA_CLOUD_CREDENTIALS_URI).build()
        : 'not set',
  },
];

/** The names of the chain's links, in order (the tests compare them with the package's default chain). */
const CHAIN_PROVIDERS = CHAIN.map((link) => link.provider);

/** The links --profile reads: the two files that hold named profiles. */
const PROFILE_LINKS = CHAIN.filter((link) => link.provider === 'cli_profile' || link.provider === 'profile');

/** @param {string | undefined} home */
function cliConfigPath(home) {
  return home === undefined ? undefined : join(home, '.aliyun', 'config.json');
}

/**
 * The package reads ALIBABA_CLOUD_CREDENTIALS_FILE from the process environment itself; the CLI's env is that one.
 * @param {Record<string, string | undefined>} env
 * @param {string | undefined} home
 */
function iniPath(env, home) {
  if (env.ALIBABA_CLOUD_CREDENTIALS_FILE) return env.ALIBABA_CLOUD_CREDENTIALS_FILE;
  return home === undefined ? undefined : join(home, '.alibabacloud', 'credentials');
}

/**
 * The profile the Aliyun CLI has selected (`current`), for naming the source only: the credentials themselves are
 * read by the package's provider.
 * @param {string} file
 */
function currentCliProfile(file) {
  try {
    const current = JSON.parse(readFileSync(file, 'utf8')).current;
    return typeof current === 'string' && current !== '' ? current : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The file-reading providers take the home directory from os.homedir() once, into `homedir`, in their constructor
 * (the package sets the same field in its own tests); point them at the caller's HOME instead. The field is private
 * (and readonly in one) in the package's declarations, hence the cast.
 * @template {object} P
 * @param {P} provider
 * @param {string | undefined} home
 * @returns {P}
 */
function withHome(provider, home) {
  /** @type {{ homedir?: string }} */ (provider).homedir = home;
  return provider;
}

/**
 * A failure of a link, in words fit to show: some of the package's messages end with what they read (a config
 * file's text, an HTTP answer), which may hold a secret, so only the part before that is kept.
 * @param {unknown} err
 */
function safeReason(err) {
  const message = describeError(err);
  const head = (message.split('\n')[0] ?? '').replace(/(: |, httpStatus| = | result:?\s)[\s\S]*$/, '').trim();
  return head.length > 200 ? `${head.slice(0, 200)}…` : head || 'failed';
}

/**
 * Resolves the credentials for the FC API calls.
 * @param {CredentialsRequest} request
 * @returns {Promise<FcCredentials>}
 */
async function resolveFcCredentials({ env, home, profile, sAccess }) {
  if (profile !== undefined && sAccess !== undefined)
    throw new UsageError(['--profile and --s-access both choose the credentials: pass one of them']);
  if (sAccess !== undefined) return readServerlessDevsAccess(sAccess, env, home);
  // Loaded here, not at the top: the artifact-only path never loads the credentials package.
  const lib = require('@alicloud/credentials');
  const request = { env, home, profile };
  const links = profile === undefined ? CHAIN : PROFILE_LINKS;
  const tried = [];
  for (const link of links) {
    const label = link.label(request);
    let provider;
    try {
      provider = link.create(lib, request);
    } catch (err) {
      provider = safeReason(err);
    }
    if (typeof provider === 'string') {
      tried.push(`${label}: ${provider}`);
      continue;
    }
    try {
      const found = await provider.getCredentials();
      if (found.accessKeyId && found.accessKeySecret) {
        return {
          accessKeyId: found.accessKeyId,
          accessKeySecret: found.accessKeySecret,
          securityToken: found.securityToken || undefined,
          source: toSource(label, link, found.providerName),
        };
      }
      tried.push(`${label}: no AccessKey id and secret in it`);
    } catch (err) {
      tried.push(`${label}: ${safeReason(err)}`);
    }
  }
  const what =
    profile === undefined
      ? 'no Alibaba Cloud credentials found for --deploy'
      : `--profile ${profile}: no such profile with credentials`;
  throw new UsageError([
    `${what}; tried, in order:\n    - ${tried.join('\n    - ')}\n  ` +
      (profile === undefined
        ? 'Set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET, run `aliyun configure` (or pass ' +
          '--profile NAME), or pass --s-access ALIAS for an access of Serverless Devs.'
        : 'Check the name (`aliyun configure list` shows the profiles), or drop --profile to use the whole chain.'),
  ]);
}

/**
 * The log's words for a link that answered: its label, and for a profile, the kind of credentials it holds.
 * @param {string} label
 * @param {ChainLink} link
 * @param {string | undefined} providerName the package's, e.g. `cli_profile/static_sts`
 */
function toSource(label, link, providerName) {
  if (link.provider !== 'cli_profile' && link.provider !== 'profile') return label;
  // `cli_profile/static_sts`, `profile/ram_role_arn/static_ak`: the part after the link's own name is the kind.
  const inner = String(providerName ?? '').split('/')[1] ?? '';
  const mode = Object.hasOwn(MODES, inner) ? MODES[/** @type {keyof typeof MODES} */ (inner)] : undefined;
  return mode === undefined ? label : `${label} (${mode})`;
}

module.exports = { resolveFcCredentials, CREDENTIALS_HELP, CHAIN_PROVIDERS };
