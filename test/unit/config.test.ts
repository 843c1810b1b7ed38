import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadConfig, parseList } from '../../functions/mcp/config';
import { ConfigError } from '../../functions/mcp/errors';

function problemsOf(env: Record<string, string>, options: { asRoot?: boolean } = {}): readonly string[] {
  try {
    loadConfig(env, options);
  } catch (err: unknown) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('defaults to 127.0.0.1:9000, the local backend, no auth, and FC-compatible session limits', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 9000,
      onFc: false,
      auth: { mode: 'none', tokens: [] },
      sessionIdleTtlS: 1800,
      maxSessions: 100,
      maxBodyBytes: 4 * 1024 * 1024,
      sandboxBackend: 'local',
      local: { isolation: 'auto', allowNetwork: false },
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('listens on 0.0.0.0:$FC_CUSTOM_LISTEN_PORT on FC, whatever HOST says', () => {
    const config = loadConfig({
      FC_CUSTOM_LISTEN_PORT: '9100',
      HOST: '127.0.0.1',
      MCP_AUTH_TOKENS: 'a-long-enough-token-value',
    });
    expect(config).toMatchObject({ host: '0.0.0.0', port: 9100, onFc: true });
  });

  it('refuses a non-loopback bind without a token unless MCP_AUTH=none', () => {
    expect(problemsOf({ HOST: '0.0.0.0' }).join()).toMatch(/MCP_AUTH_TOKENS/);
    expect(problemsOf({ FC_FUNCTION_NAME: 'f' }).join()).toMatch(/MCP_AUTH=none/);
    expect(loadConfig({ HOST: '0.0.0.0', MCP_AUTH: 'none' }).auth.mode).toBe('none');
  });

  it('refuses LOCAL_SANDBOX_ISOLATION=none where sandbox code would run as the server on a reachable address', () => {
    const exposed = { HOST: '0.0.0.0', MCP_AUTH_TOKENS: 'token-0123456789abcdef', LOCAL_SANDBOX_ISOLATION: 'none' };
    expect(problemsOf(exposed, { asRoot: false }).join()).toMatch(
      /LOCAL_SANDBOX_ISOLATION=none runs sandbox code as the server's own user.*refused on 0\.0\.0\.0/,
    );
    expect(problemsOf({ ...exposed, HOST: '127.0.0.1' }, { asRoot: false })).toEqual([]);
    expect(problemsOf({ ...exposed, FC_FUNCTION_NAME: 'f' }, { asRoot: false }).join()).toMatch(/refused on FC/);
    // As root each sandbox has a user of its own: allowed, on purpose.
    expect(problemsOf(exposed, { asRoot: true })).toEqual([]);
    // Not the local backend's business when the sandboxes are E2B's.
    expect(problemsOf({ ...exposed, SANDBOX_BACKEND: 'e2b', E2B_API_KEY: 'e2b_x' }, { asRoot: false })).toEqual([]);
    expect(loadConfig({ ...exposed }, { asRoot: true }).local.exposed).toBe(true);
    expect(loadConfig({ MCP_AUTH_TOKENS: 'token-0123456789abcdef' }).local.exposed).toBe(false);
  });

  it(
    'serves previews on 127.0.0.1 by default, and another address only ' +
      'on purpose (LOCAL_SANDBOX_PREVIEW_PUBLIC=on)',
    () => {
      expect(loadConfig({}).local.previewHost).toBe('127.0.0.1');
      expect(loadConfig({ LOCAL_SANDBOX_PREVIEW_HOST: '::1' }).local.previewHost).toBe('::1');
      expect(problemsOf({ LOCAL_SANDBOX_PREVIEW_HOST: '10.1.2.3' }).join()).toMatch(
        new RegExp(
          String.raw`LOCAL_SANDBOX_PREVIEW_HOST=10\.1\.2\.3 would serve sandbox previews to every host .* ` +
            'capability URL .*: set LOCAL_SANDBOX_PREVIEW_PUBLIC=on',
        ),
      );
      expect(
        loadConfig({ LOCAL_SANDBOX_PREVIEW_HOST: '10.1.2.3', LOCAL_SANDBOX_PREVIEW_PUBLIC: 'on' }).local.previewHost,
      ).toBe('10.1.2.3');
      // The address is also the URL's host: a name or a wildcard is refused, opt-in or not.
      for (const host of ['0.0.0.0', '::', 'preview.example.com']) {
        expect(problemsOf({ LOCAL_SANDBOX_PREVIEW_HOST: host, LOCAL_SANDBOX_PREVIEW_PUBLIC: 'on' }).join()).toMatch(
          /LOCAL_SANDBOX_PREVIEW_HOST must be one IP address/,
        );
      }
      expect(problemsOf({ LOCAL_SANDBOX_PREVIEW_PUBLIC: 'yes' }).join()).toMatch(
        /LOCAL_SANDBOX_PREVIEW_PUBLIC must be on or off/,
      );
    },
  );

  it(
    'names previews by the address unless LOCAL_SANDBOX_PREVIEW_DOMAIN gives a DNS name (lower-cased), without a ' +
      'wildcard, a port or an address',
    () => {
      expect(loadConfig({}).local.previewDomain).toBeUndefined();
      expect(loadConfig({ LOCAL_SANDBOX_PREVIEW_DOMAIN: '' }).local.previewDomain).toBeUndefined();
      expect(loadConfig({ LOCAL_SANDBOX_PREVIEW_DOMAIN: 'localhost' }).local.previewDomain).toBe('localhost');
      expect(loadConfig({ LOCAL_SANDBOX_PREVIEW_DOMAIN: ' Previews.Example.COM ' }).local.previewDomain).toBe(
        'previews.example.com',
      );
      for (const domain of [
        '*.example.com',
        'example.com:8080',
        '10.1.2.3',
        '-bad.example.com',
        'a..b',
        `${'a'.repeat(64)}.com`,
        `${'a.'.repeat(120)}com`,
      ]) {
        expect({ domain, problems: problemsOf({ LOCAL_SANDBOX_PREVIEW_DOMAIN: domain }).join() }).toEqual({
          domain,
          problems: expect.stringMatching(/LOCAL_SANDBOX_PREVIEW_DOMAIN must be a DNS name/),
        });
      }
    },
  );

  it('refuses a world-readable token file wherever the local backend runs sandbox code, isolated or not', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tokens-')), 'tokens');
    writeFileSync(file, 'token-0123456789abcdef\n', { mode: 0o644 });
    const env = { MCP_AUTH_TOKEN_FILE: file, LOCAL_SANDBOX_ISOLATION: 'none' };
    expect(problemsOf(env, { asRoot: true }).join()).toMatch(
      /MCP_AUTH_TOKEN_FILE is readable by every user.*chmod 600/,
    );
    for (const isolation of ['auto', 'bwrap']) {
      expect(
        problemsOf({ MCP_AUTH_TOKEN_FILE: file, LOCAL_SANDBOX_ISOLATION: isolation }, { asRoot: true }).join(),
      ).toMatch(/MCP_AUTH_TOKEN_FILE is readable by every user.*chmod 600/);
    }
    // On E2B no sandbox runs on this host.
    expect(
      problemsOf({ MCP_AUTH_TOKEN_FILE: file, SANDBOX_BACKEND: 'e2b', E2B_API_KEY: 'k' }, { asRoot: true }),
    ).toEqual([]);
    writeFileSync(file, 'token-0123456789abcdef\n', { mode: 0o600 });
    chmodSync(file, 0o600);
    expect(problemsOf(env, { asRoot: true })).toEqual([]);
  });

  it('treats a configured but empty token list as bearer auth with no valid token (fail closed)', () => {
    expect(loadConfig({ MCP_AUTH_TOKENS: '' }).auth).toEqual({ mode: 'bearer', tokens: [], source: 'MCP_AUTH_TOKENS' });
    expect(loadConfig({ MCP_AUTH_TOKENS: ' , ,' }).auth.tokens).toEqual([]);
  });

  it('merges tokens from MCP_AUTH_TOKENS and MCP_AUTH_TOKEN_FILE, skipping comments and blanks', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'tokens');
    writeFileSync(file, '# team tokens\nfile-token-1\n\nfile-token-2 # ci\n', { mode: 0o600 });
    const config = loadConfig({ MCP_AUTH_TOKENS: 'env-token-1,env-token-2', MCP_AUTH_TOKEN_FILE: file });
    expect(config.auth.tokens).toEqual(['env-token-1', 'env-token-2', 'file-token-1', 'file-token-2']);
    expect(config.auth.source).toBe('both');
    expect(config.local.hiddenPaths).toEqual([file]);
  });

  it('reports every problem at once, naming each variable, without echoing token values', () => {
    const problems = problemsOf({
      MCP_SESSION_IDLE_TTL_S: 'abc',
      MCP_MAX_SESSIONS: '0',
      LOCAL_SANDBOX_ISOLATION: 'docker',
      LOG_LEVEL: 'loud',
      MCP_AUTH_TOKENS: 'has space',
      SANDBOX_BACKEND: 'kubernetes',
    });
    const text = problems.join('\n');
    for (const name of [
      'MCP_SESSION_IDLE_TTL_S',
      'MCP_MAX_SESSIONS',
      'LOCAL_SANDBOX_ISOLATION',
      'LOG_LEVEL',
      'SANDBOX_BACKEND',
    ]) {
      expect(text).toContain(name);
    }
    expect(text).toContain('visible ASCII');
    expect(text).not.toContain('has space');
  });

  it('picks the E2B backend when E2B_API_KEY is set, unless SANDBOX_BACKEND says local', () => {
    expect(loadConfig({ E2B_API_KEY: 'e2b_x' })).toMatchObject({
      sandboxBackend: 'e2b',
      e2b: {
        apiKey: 'e2b_x',
        template: 'code-interpreter-v1',
        maxCreatesPerS: 1,
        domain: undefined,
        apiUrl: undefined,
        charts: 'inline',
      },
    });
    expect(loadConfig({ E2B_API_KEY: 'e2b_x', SANDBOX_BACKEND: 'local' }).sandboxBackend).toBe('local');
    const aliyun = loadConfig({
      E2B_API_KEY: 'k',
      E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com',
      E2B_API_URL: 'https://api.cn-hangzhou.e2b.fc.aliyuncs.com',
      E2B_TEMPLATE: 'my-template',
      E2B_MAX_CREATES_PER_S: '5',
    });
    expect(aliyun.e2b).toMatchObject({
      domain: 'cn-hangzhou.e2b.fc.aliyuncs.com',
      apiUrl: 'https://api.cn-hangzhou.e2b.fc.aliyuncs.com',
      template: 'my-template',
      maxCreatesPerS: 5,
      charts: 'files',
    });
    expect(
      loadConfig({ E2B_API_KEY: 'k', E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com', E2B_CHARTS: 'inline' }).e2b.charts,
    ).toBe('inline');
    expect(loadConfig({ E2B_API_KEY: 'k', E2B_CHARTS: 'files' }).e2b.charts).toBe('files');
  });

  it('refuses SANDBOX_BACKEND=e2b without a key, and bad E2B settings', () => {
    const problems = problemsOf({
      SANDBOX_BACKEND: 'e2b',
      E2B_API_URL: 'ftp://x',
      E2B_MAX_CREATES_PER_S: '0',
      E2B_CHARTS: 'svg',
    }).join('\n');
    expect(problems).toContain('E2B_CHARTS must be "inline" or "files"');
    expect(problems).toContain('needs E2B_API_KEY');
    expect(problems).toContain('E2B_API_URL');
    expect(problems).toContain('E2B_MAX_CREATES_PER_S');
  });

  it('uses MCP_SESSION_SECRET when it is long enough, and otherwise makes one per process', () => {
    const secret = 'x'.repeat(32);
    expect(loadConfig({ MCP_SESSION_SECRET: secret })).toMatchObject({
      sessionSecret: secret,
      sessionSecretSource: 'configured',
      sessionMaxAgeS: 21_600,
    });
    const generated = loadConfig({});
    expect(generated.sessionSecretSource).toBe('generated');
    expect(Buffer.byteLength(generated.sessionSecret)).toBeGreaterThanOrEqual(32);
    expect(loadConfig({}).sessionSecret).not.toBe(generated.sessionSecret);
    const problems = problemsOf({ MCP_SESSION_SECRET: 'too-short-secret', MCP_SESSION_MAX_AGE_S: '5' }).join('\n');
    expect(problems).toContain('MCP_SESSION_SECRET must be at least 32 bytes');
    expect(problems).not.toContain('too-short-secret');
    expect(problems).toContain('MCP_SESSION_MAX_AGE_S');
  });

  it('keeps every tool timeout safely below the function timeout', () => {
    expect(loadConfig({ MCP_FUNCTION_TIMEOUT_S: '120' })).toMatchObject({
      functionTimeoutS: 120,
      toolTimeoutMaxS: 110,
    });
    expect(loadConfig({ MCP_FUNCTION_TIMEOUT_S: '600' }).toolTimeoutMaxS).toBe(300);
    expect(loadConfig({ MCP_FUNCTION_TIMEOUT_S: '600', MCP_TOOL_TIMEOUT_MAX_S: '590' }).toolTimeoutMaxS).toBe(590);
    expect(problemsOf({ MCP_FUNCTION_TIMEOUT_S: '600', MCP_TOOL_TIMEOUT_MAX_S: '595' }).join()).toMatch(
      /MCP_TOOL_TIMEOUT_MAX_S \(595\) must be at least 10 s below MCP_FUNCTION_TIMEOUT_S \(600\)/,
    );
    expect(loadConfig({}).functionTimeoutS).toBeUndefined();
  });

  it('names an unreadable token file by its error code', () => {
    expect(problemsOf({ MCP_AUTH_TOKEN_FILE: '/nonexistent/tokens' }).join()).toMatch(
      /MCP_AUTH_TOKEN_FILE cannot be read \(ENOENT\)/,
    );
  });

  it('rejects MCP_AUTH=none together with tokens, as an ambiguous setup', () => {
    expect(problemsOf({ MCP_AUTH: 'none', MCP_AUTH_TOKENS: 'x' }).join()).toMatch(/conflicts/);
  });
});

describe('loadConfig: OAuth (config-oauth.ts)', () => {
  const oauthEnv = { MCP_OAUTH_ISSUER: 'https://id.example.com/realms/mcp', MCP_PUBLIC_URL: 'https://mcp.example.com' };

  it('turns OAuth on with an issuer and the public URL; the resource, metadata URL and audience follow from it', () => {
    const { auth } = loadConfig({ ...oauthEnv, MCP_OAUTH_SCOPES: ' mcp:tools  openid ' });
    expect(auth).toMatchObject({ mode: 'bearer', tokens: [], source: 'none' });
    expect(auth.oauth).toEqual({
      issuer: 'https://id.example.com/realms/mcp',
      resource: 'https://mcp.example.com/mcp',
      metadataUrl: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
      audience: 'https://mcp.example.com/mcp',
      scopes: ['mcp:tools', 'openid'],
      introspection: undefined,
    });
    expect(loadConfig({ ...oauthEnv, MCP_OAUTH_AUDIENCE: 'api://mcp' }).auth.oauth?.audience).toBe('api://mcp');
    // Exposed without a static token: OAuth is auth enough.
    expect(problemsOf({ ...oauthEnv, HOST: '0.0.0.0' })).toEqual([]);
  });

  it('keeps static tokens beside OAuth', () => {
    const { auth } = loadConfig({ ...oauthEnv, MCP_AUTH_TOKENS: 'token-0123456789abcdef' });
    expect(auth).toMatchObject({ mode: 'bearer', tokens: ['token-0123456789abcdef'], source: 'MCP_AUTH_TOKENS' });
    expect(auth.oauth?.issuer).toBe(oauthEnv.MCP_OAUTH_ISSUER);
  });

  it('takes an http issuer only on loopback', () => {
    expect(problemsOf({ ...oauthEnv, MCP_OAUTH_ISSUER: 'http://127.0.0.1:8080' })).toEqual([]);
    expect(problemsOf({ ...oauthEnv, MCP_OAUTH_ISSUER: 'http://localhost:8080/issuer' })).toEqual([]);
    expect(problemsOf({ ...oauthEnv, MCP_OAUTH_ISSUER: 'http://id.example.com' }).join()).toMatch(
      /MCP_OAUTH_ISSUER must use https/,
    );
    expect(problemsOf({ ...oauthEnv, MCP_OAUTH_ISSUER: 'https://id.example.com/?x=1' }).join()).toMatch(
      /without query or fragment/,
    );
    expect(problemsOf({ ...oauthEnv, MCP_OAUTH_ISSUER: 'not a url' }).join()).toMatch(
      /MCP_OAUTH_ISSUER must be an https URL/,
    );
  });

  it('needs MCP_PUBLIC_URL as an origin', () => {
    expect(problemsOf({ MCP_OAUTH_ISSUER: oauthEnv.MCP_OAUTH_ISSUER }).join()).toMatch(
      /MCP_OAUTH_ISSUER needs MCP_PUBLIC_URL/,
    );
    for (const bad of [
      'https://mcp.example.com/base',
      'https://mcp.example.com/?a=b',
      'ftp://mcp.example.com',
      'https://user:pw@mcp.example.com',
    ]) {
      expect(problemsOf({ ...oauthEnv, MCP_PUBLIC_URL: bad }).join()).toMatch(/MCP_PUBLIC_URL must be an origin/);
    }
    expect(loadConfig({ ...oauthEnv, MCP_PUBLIC_URL: 'https://mcp.example.com/' }).auth.oauth?.resource).toBe(
      'https://mcp.example.com/mcp',
    );
  });

  it(
    'refuses scopes that cannot go in a challenge, ' + 'settings without an issuer, and MCP_AUTH=none beside an issuer',
    () => {
      expect(problemsOf({ ...oauthEnv, MCP_OAUTH_SCOPES: 'mcp:tools "quoted"' }).join()).toMatch(/MCP_OAUTH_SCOPES/);
      expect(problemsOf({ MCP_OAUTH_SCOPES: 'mcp:tools' }).join()).toMatch(/MCP_OAUTH_SCOPES needs MCP_OAUTH_ISSUER/);
      expect(problemsOf({ MCP_OAUTH_AUDIENCE: 'x' }).join()).toMatch(/MCP_OAUTH_AUDIENCE needs MCP_OAUTH_ISSUER/);
      expect(problemsOf({ ...oauthEnv, MCP_AUTH: 'none' }).join()).toMatch(/MCP_AUTH=none conflicts/);
      expect(loadConfig({}).auth.oauth).toBeUndefined();
    },
  );

  it('takes introspection credentials as a pair, with an issuer', () => {
    const pair = {
      MCP_OAUTH_INTROSPECTION_CLIENT_ID: 'mcp-server',
      MCP_OAUTH_INTROSPECTION_CLIENT_SECRET: 'secret-0123456789',
    };
    expect(loadConfig({ ...oauthEnv, ...pair }).auth.oauth?.introspection).toEqual({
      clientId: 'mcp-server',
      clientSecret: 'secret-0123456789',
    });
    expect(loadConfig(oauthEnv).auth.oauth?.introspection).toBeUndefined();
    expect(problemsOf({ ...oauthEnv, MCP_OAUTH_INTROSPECTION_CLIENT_ID: 'mcp-server' }).join()).toMatch(/go together/);
    expect(problemsOf(pair).join()).toMatch(/MCP_OAUTH_INTROSPECTION_CLIENT_ID needs MCP_OAUTH_ISSUER/);
  });
});

describe('parseList', () => {
  it('splits on commas and newlines and trims', () => {
    expect(parseList(' a, b\nc ,, ')).toEqual(['a', 'b', 'c']);
  });
});

describe('what one credential may take of an instance', () => {
  const TOKEN = 'token-0123456789abcdef';
  const OAUTH = { MCP_OAUTH_ISSUER: 'https://id.example.com/realms/mcp', MCP_PUBLIC_URL: 'https://mcp.example.com' };
  const shareOf = (env: Record<string, string>) => {
    const { sessions, sandboxes } = loadConfig({ MCP_MAX_SESSIONS: '10', ...env }).perCredential;
    return { sessions, sandboxes };
  };

  it(
    'is the whole instance where only one credential can exist: ' + 'no auth, or one static token and no OAuth issuer',
    () => {
      expect(shareOf({})).toEqual({ sessions: 10, sandboxes: 10 });
      expect(shareOf({ MCP_AUTH: 'none' })).toEqual({ sessions: 10, sandboxes: 10 });
      expect(shareOf({ MCP_AUTH_TOKENS: TOKEN })).toEqual({ sessions: 10, sandboxes: 10 });
      expect(shareOf({ MCP_AUTH_TOKENS: `${TOKEN},${TOKEN}` })).toEqual({ sessions: 10, sandboxes: 10 });
    },
  );

  it(
    'is a quarter of the instance, rounded up, where there can be more than one, so that no two leave a third ' +
      'without a session',
    () => {
      expect(shareOf({ MCP_AUTH_TOKENS: `${TOKEN},${TOKEN}-2` })).toEqual({ sessions: 3, sandboxes: 3 });
      expect(shareOf({ MCP_AUTH_TOKENS: TOKEN, ...OAUTH })).toEqual({ sessions: 3, sandboxes: 3 });
      expect(shareOf(OAUTH)).toEqual({ sessions: 3, sandboxes: 3 });
      expect(loadConfig({ MCP_AUTH_TOKENS: `${TOKEN},${TOKEN}-2` }).perCredential.sessions).toBe(25);
      for (const max of [3, 4, 5, 7, 20, 100, 101]) {
        const share = loadConfig({ MCP_MAX_SESSIONS: String(max), MCP_AUTH_TOKENS: `${TOKEN},${TOKEN}-2` })
          .perCredential.sessions;
        expect(2 * share).toBeLessThan(max);
      }
    },
  );

  it('takes the shares that are set, and the sandboxes share follows the sessions share', () => {
    expect(shareOf({ MCP_AUTH_TOKENS: TOKEN, MCP_MAX_SESSIONS_PER_CREDENTIAL: '4' })).toEqual({
      sessions: 4,
      sandboxes: 4,
    });
    expect(shareOf({ MCP_AUTH_TOKENS: `${TOKEN},${TOKEN}-2`, MCP_MAX_SANDBOXES_PER_CREDENTIAL: '9' })).toEqual({
      sessions: 3,
      sandboxes: 9,
    });
  });

  it(
    'opens 120 sessions at once and 120 a minute after that by default; MCP_INITIALIZE_PER_MIN=0 lifts the limit; ' +
      'bad values are refused by name',
    () => {
      expect(loadConfig({}).perCredential).toMatchObject({ initializeBurst: 120, initializePerMin: 120 });
      expect(loadConfig({ MCP_INITIALIZE_BURST: '5', MCP_INITIALIZE_PER_MIN: '0' }).perCredential).toMatchObject({
        initializeBurst: 5,
        initializePerMin: 0,
      });
      const problems = problemsOf({ MCP_INITIALIZE_BURST: '0', MCP_INITIALIZE_PER_MIN: '-1' }).join('\n');
      expect(problems).toMatch(/MCP_INITIALIZE_BURST must be an integer from 1/);
      expect(problems).toMatch(/MCP_INITIALIZE_PER_MIN must be an integer from 0/);
    },
  );
});
