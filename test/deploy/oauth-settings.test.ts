/**
 * The OAuth settings through the deploy CLI (--oauth-issuer, --public-url, --oauth-audience, --oauth-scopes;
 * scripts/oauth-settings.js), against the signature-checking fake FC API: they reach the function and s.yaml, are
 * shown unmasked in the diff, stand in for a token, are kept by a re-deploy that does not give them, go with
 * --unset, and are refused, naming the option, in any shape the server would refuse at start
 * (functions/mcp/config-oauth.ts).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { makeCertificate } from '../support/certificates';
import { fc3Props, makeTempDir, readYaml, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { CREDENTIALS, deployToFake, E2B_KEY, EMPTY_SHELL, TOKEN, tokenFile } from '../support/deploy-to-fake';
import { type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';

const ISSUER = 'https://auth.example.com/realms/mcp';
const PUBLIC_URL = 'https://mcp.example.com';
const AUDIENCE = 'sandbox-mcp-api';
const SCOPES = 'mcp:tools mcp:read';
const OAUTH = {
  MCP_OAUTH_ISSUER: ISSUER,
  MCP_PUBLIC_URL: PUBLIC_URL,
  MCP_OAUTH_AUDIENCE: AUDIENCE,
  MCP_OAUTH_SCOPES: SCOPES,
};
const OAUTH_ARGS = [
  '--oauth-issuer',
  ISSUER,
  '--public-url',
  PUBLIC_URL,
  '--oauth-audience',
  AUDIENCE,
  '--oauth-scopes',
  SCOPES,
];
const SHELL = { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY };
const DOMAIN = 'mcp.example.com';

let fake: FakeFc;
beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
});
afterEach(() => fake.close());
afterAll(removeTempDirs);

const actions = () => fake.calls.map((c) => c.action);
const functionEnv = () => (fake.functions.get('sandbox-mcp')?.environmentVariables ?? {}) as Record<string, string>;
const sYamlEnv = (outputDir: string) => fc3Props(readYaml(join(outputDir, 's.yaml'))).environmentVariables;

/** The first deploy: OAuth alone, no token, from a shell with the E2B key. */
async function deployWithOAuth() {
  const run = await deployToFake(fake, OAUTH_ARGS, SHELL);
  expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
  fake.calls.length = 0;
  return run;
}

describe('a deploy with the OAuth options', () => {
  it(
    'puts the four variables into the function and s.yaml, ' + 'needs no token, and shows them unmasked in the diff',
    async () => {
      const run = await deployWithOAuth();
      expect(functionEnv()).toMatchObject(OAUTH);
      expect(functionEnv()).not.toHaveProperty('MCP_AUTH_TOKENS');
      expect(sYamlEnv(run.outputDir)).toMatchObject(OAUTH);
      const added = [
        `+ MCP_OAUTH_ISSUER="${ISSUER}"`,
        `+ MCP_PUBLIC_URL="${PUBLIC_URL}"`,
        `+ MCP_OAUTH_AUDIENCE="${AUDIENCE}"`,
        `+ MCP_OAUTH_SCOPES="${SCOPES}"`,
      ];
      expect(run.json.environment).toEqual(expect.arrayContaining(added));
      for (const line of added) expect(run.stderr).toContain(line);
      expect(run.json).toMatchObject({ oauth: { issuer: ISSUER, resource: `${PUBLIC_URL}/mcp` } });
      expect(unsignedCalls(fake.calls)).toEqual([]);
    },
  );

  it('keeps a token given beside them', async () => {
    const run = await deployToFake(fake, ['--auth-token-file', tokenFile(), ...OAUTH_ARGS], SHELL);
    expect(run.code).toBe(0);
    expect(functionEnv()).toMatchObject({ ...OAUTH, MCP_AUTH_TOKENS: TOKEN });
  });

  it('writes an artifact whose s.yaml leaves the token optional, and a client configuration without one', async () => {
    const out = makeTempDir();
    const run = await runDeployCli(['--output-dir', out, ...OAUTH_ARGS], { env: { E2B_API_KEY: E2B_KEY } });
    expect({ code: run.code, stderr: run.stderr }).toEqual({
      code: 0,
      stderr: expect.not.stringContaining('no auth token yet'),
    });
    expect(sYamlEnv(out)).toMatchObject({ ...OAUTH, MCP_AUTH_TOKENS: "${env('MCP_AUTH_TOKENS', '')}" });
    expect(run.stdout).toContain(`OAuth: access tokens from ${ISSUER} are accepted for ${PUBLIC_URL}/mcp.`);
    expect(run.stdout).not.toContain('Bearer <token>');
  });
});

describe('a re-deploy', () => {
  it('from an empty shell keeps them, and still needs no token', async () => {
    await deployWithOAuth();
    const run = await deployToFake(fake, []);
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    expect(actions()).toContain('UpdateFunction');
    expect(functionEnv()).toMatchObject(OAUTH);
    expect(run.json.environment).toEqual(
      expect.arrayContaining([
        '= MCP_OAUTH_ISSUER (kept)',
        '= MCP_PUBLIC_URL (kept)',
        '= MCP_OAUTH_AUDIENCE (kept)',
        '= MCP_OAUTH_SCOPES (kept)',
      ]),
    );
  });

  it('changes only the option it is given: a new issuer keeps the public URL the function has', async () => {
    await deployWithOAuth();
    const run = await deployToFake(fake, [
      '--oauth-issuer',
      'https://login.example.org',
      '--oauth-scopes',
      'mcp:admin',
    ]);
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    expect(functionEnv()).toMatchObject({
      ...OAUTH,
      MCP_OAUTH_ISSUER: 'https://login.example.org',
      MCP_OAUTH_SCOPES: 'mcp:admin',
    });
    expect(run.json.environment).toEqual(
      expect.arrayContaining([
        `~ MCP_OAUTH_ISSUER: "${ISSUER}" → "https://login.example.org"`,
        '= MCP_PUBLIC_URL (kept)',
      ]),
    );
  });

  it('--unset removes one', async () => {
    await deployWithOAuth();
    const run = await deployToFake(fake, ['--unset', 'MCP_OAUTH_SCOPES']);
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    expect(functionEnv()).not.toHaveProperty('MCP_OAUTH_SCOPES');
    expect(functionEnv()).toMatchObject({
      MCP_OAUTH_ISSUER: ISSUER,
      MCP_PUBLIC_URL: PUBLIC_URL,
      MCP_OAUTH_AUDIENCE: AUDIENCE,
    });
    expect(run.json.environment).toContain('- MCP_OAUTH_SCOPES (removed)');
  });

  it('--unset of the issuer, its audience and its scopes turns OAuth off (here beside a token given now)', async () => {
    await deployWithOAuth();
    const run = await deployToFake(fake, [
      '--auth-token-file',
      tokenFile(),
      '--unset',
      'MCP_OAUTH_ISSUER',
      '--unset',
      'MCP_OAUTH_AUDIENCE',
      '--unset',
      'MCP_OAUTH_SCOPES',
    ]);
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    for (const name of ['MCP_OAUTH_ISSUER', 'MCP_OAUTH_AUDIENCE', 'MCP_OAUTH_SCOPES'])
      expect(functionEnv()).not.toHaveProperty(name);
    expect(functionEnv()).toMatchObject({ MCP_AUTH_TOKENS: TOKEN });
    expect(run.json.environment).toContain('- MCP_OAUTH_ISSUER (removed)');
  });

  it(
    '--no-auth drops the issuer, its audience and scopes with the tokens (the server refuses them beside ' +
      'MCP_AUTH=none)',
    async () => {
      await deployWithOAuth();
      const run = await deployToFake(fake, ['--no-auth']);
      expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
      expect(functionEnv()).toMatchObject({ MCP_AUTH: 'none', MCP_PUBLIC_URL: PUBLIC_URL });
      for (const name of ['MCP_OAUTH_ISSUER', 'MCP_OAUTH_AUDIENCE', 'MCP_OAUTH_SCOPES'])
        expect(functionEnv()).not.toHaveProperty(name);
    },
  );

  it(
    '--unset of the issuer alone is refused: ' + 'the audience and scopes kept without it would stop the server',
    async () => {
      await deployWithOAuth();
      const run = await deployToFake(fake, ['--unset', 'MCP_OAUTH_ISSUER', '--auth-token-file', tokenFile()]);
      expect(run.code).toBe(2);
      expect(run.json.error?.problems).toEqual(
        expect.arrayContaining([
          expect.stringContaining('--unset MCP_OAUTH_AUDIENCE'),
          expect.stringContaining('--unset MCP_OAUTH_SCOPES'),
        ]),
      );
      expect(actions()).toEqual(['GetFunction']);
    },
  );

  it('--unset of the issuer of a function without a token is refused as a deploy without auth', async () => {
    await deployWithOAuth();
    const run = await deployToFake(fake, [
      '--unset',
      'MCP_OAUTH_ISSUER',
      '--unset',
      'MCP_OAUTH_AUDIENCE',
      '--unset',
      'MCP_OAUTH_SCOPES',
    ]);
    expect(run.code).toBe(2);
    expect(run.json.error?.message).toContain(
      'refusing to deploy without an auth token (function sandbox-mcp has none to keep)',
    );
    expect(actions()).toEqual(['GetFunction']);
  });
});

describe('the public URL', () => {
  it('defaults to https://<custom domain> with --oauth-issuer', async () => {
    const { cert, key } = makeCertificate(makeTempDir('certs-'), DOMAIN);
    const run = await deployToFake(
      fake,
      ['--oauth-issuer', ISSUER, '--custom-domain', DOMAIN, '--domain-cert', cert, '--domain-key', key],
      SHELL,
    );
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    expect(functionEnv()).toMatchObject({ MCP_OAUTH_ISSUER: ISSUER, MCP_PUBLIC_URL: `https://${DOMAIN}` });
    expect(sYamlEnv(run.outputDir)).toMatchObject({ MCP_PUBLIC_URL: `https://${DOMAIN}` });
    expect(run.json.url).toBe(`https://${DOMAIN}/mcp`);
  });

  it('is the one --public-url gives, beside a domain', async () => {
    const run = await deployToFake(
      fake,
      [
        '--oauth-issuer',
        ISSUER,
        '--public-url',
        'https://edge.example.net',
        '--custom-domain',
        DOMAIN,
        '--domain-http-only',
      ],
      SHELL,
    );
    expect(run.code).toBe(0);
    expect(functionEnv()).toMatchObject({ MCP_PUBLIC_URL: 'https://edge.example.net' });
  });

  it(
    'is required: --oauth-issuer without --public-url or a domain is refused, ' + 'for a new function after one read',
    async () => {
      const run = await deployToFake(fake, ['--oauth-issuer', ISSUER], SHELL);
      expect(run.code).toBe(2);
      expect(run.json.error?.message).toContain(
        'the FC trigger URL is not known before the function exists: pass --public-url',
      );
      expect(run.json.error?.message).toContain('--custom-domain DOMAIN');
      expect(actions()).toEqual(['GetFunction']);
      expect(readdirSync(run.outputDir)).toEqual([]);
    },
  );

  it('is required for an artifact too, refused before anything is written', async () => {
    const out = join(makeTempDir(), 'out');
    const run = await runDeployCli(['--output-dir', out, '--json', '--oauth-issuer', ISSUER], {
      env: { E2B_API_KEY: E2B_KEY },
    });
    expect({ code: run.code, written: existsSync(out) }).toEqual({ code: 2, written: false });
    expect(run.stderr).toContain("--oauth-issuer (MCP_OAUTH_ISSUER) needs the server's public URL");
  });
});

describe('refused before any call, naming the option', () => {
  it.each([
    [
      'an http issuer off loopback',
      ['--oauth-issuer', 'http://auth.example.com', '--public-url', PUBLIC_URL],
      '--oauth-issuer "http://auth.example.com" must use https',
    ],
    [
      'an issuer with a query',
      ['--oauth-issuer', `${ISSUER}?tenant=1`, '--public-url', PUBLIC_URL],
      `--oauth-issuer "${ISSUER}?tenant=1" must be an https URL without query or fragment`,
    ],
    ['an issuer with a fragment', ['--oauth-issuer', `${ISSUER}#x`, '--public-url', PUBLIC_URL], '--oauth-issuer'],
    [
      'an issuer that is no URL',
      ['--oauth-issuer', 'auth.example.com', '--public-url', PUBLIC_URL],
      '--oauth-issuer "auth.example.com"',
    ],
    [
      'a public URL with a path',
      ['--oauth-issuer', ISSUER, '--public-url', `${PUBLIC_URL}/mcp`],
      `--public-url "${PUBLIC_URL}/mcp" must be an origin`,
    ],
    [
      'a public URL with credentials',
      ['--oauth-issuer', ISSUER, '--public-url', 'https://user:pw@mcp.example.com'],
      '--public-url "https://user:pw@mcp.example.com" must be an origin',
    ],
    [
      'a public URL that is not http(s)',
      ['--public-url', 'ftp://mcp.example.com'],
      '--public-url "ftp://mcp.example.com" must be an origin',
    ],
    [
      'a scope in quotes',
      ['--oauth-issuer', ISSUER, '--public-url', PUBLIC_URL, '--oauth-scopes', 'mcp:tools "mcp:read"'],
      '--oauth-scopes "mcp:tools \\"mcp:read\\"" must be scope names',
    ],
    [
      'a scope with a backslash',
      ['--oauth-issuer', ISSUER, '--public-url', PUBLIC_URL, '--oauth-scopes', 'mcp\\tools'],
      '--oauth-scopes',
    ],
    [
      'OAuth beside --no-auth',
      ['--no-auth', '--oauth-issuer', ISSUER, '--public-url', PUBLIC_URL],
      '--no-auth conflicts with --oauth-issuer',
    ],
    [
      '--env for a variable an option sets',
      ['--env', `MCP_OAUTH_ISSUER=${ISSUER}`],
      '--env MCP_OAUTH_ISSUER is set by this CLI',
    ],
    [
      '--unset of a variable the deploy sets',
      ['--oauth-scopes', SCOPES, '--unset', 'MCP_OAUTH_SCOPES'],
      '--unset MCP_OAUTH_SCOPES conflicts with this deploy',
    ],
  ])('%s', async (_what, args, message) => {
    const run = await deployToFake(fake, args, SHELL);
    expect(run.code).toBe(2);
    expect(run.json.error?.kind).toBe('usage');
    expect(run.json.error?.message).toContain(message);
    expect(fake.calls).toEqual([]);
    expect(readdirSync(run.outputDir)).toEqual([]);
  });

  it('accepts an http issuer on loopback, as the server does', async () => {
    const run = await deployToFake(
      fake,
      ['--dry-run', '--oauth-issuer', 'http://127.0.0.1:8080/issuer', '--public-url', 'http://localhost:9000'],
      SHELL,
    );
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    expect(run.json.environment).toEqual(
      expect.arrayContaining([
        '+ MCP_OAUTH_ISSUER="http://127.0.0.1:8080/issuer"',
        '+ MCP_PUBLIC_URL="http://localhost:9000"',
      ]),
    );
  });

  it('an audience without an issuer, once the function is read: nothing written', async () => {
    const run = await deployToFake(fake, ['--oauth-audience', AUDIENCE, '--auth-token-file', tokenFile()], SHELL);
    expect(run.code).toBe(2);
    expect(run.json.error?.message).toContain('--oauth-audience (MCP_OAUTH_AUDIENCE) needs --oauth-issuer');
    expect(actions()).toEqual(['GetFunction']);
  });
});
