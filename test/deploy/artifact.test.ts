/**
 * `node scripts/deploy.js --output-dir DIR`: the artifact it writes (code/index.js and its source maps, code.zip,
 * config.yaml, s.yaml, auth-token), with the defaults and with each option, its --help and --json contracts.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  fc3Props,
  makeTempDir,
  resolveVars,
  readYaml,
  removeTempDirs,
  ROOT,
  runDeployCli,
} from '../support/deploy-cli';
import { checkFc3Props } from '../support/fc3-rules';
import { codeCachesIn, shippedFiles } from '../support/shipped-files';
import { readZip } from '../support/zip-reader';

afterAll(removeTempDirs);

const E2B_KEY = 'e2b_live_key_that_must_not_leak_0123456789';

/** Runs the CLI into a fresh directory with --json and returns the parsed result and the directory. */
async function generate(args: string[] = [], env: Record<string, string> = {}) {
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', dir, '--json', ...args], { env: { E2B_API_KEY: E2B_KEY, ...env } });
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  const result = JSON.parse(run.stdout) as {
    ok: boolean;
    files: string[];
    manifest: Record<string, unknown>;
    url: string;
    warnings: string[];
  };
  return { dir, run, result, manifest: readYaml(join(dir, 'config.yaml')), sYaml: readYaml(join(dir, 's.yaml')) };
}

describe('the default artifact', () => {
  let out: Awaited<ReturnType<typeof generate>>;
  beforeAll(async () => {
    out = await generate([], { MCP_AUTH_TOKENS: 'token-from-env-0123456789abcdef' });
  });

  it(
    "holds code/index.js (the bundle) with its source maps and the core's code cache, and code.zip with the same " +
      'files at its root',
    () => {
      expect(codeCachesIn().length).toBeGreaterThanOrEqual(1);
      const code = shippedFiles();
      for (const name of code)
        expect(readFileSync(join(out.dir, 'code', name)).equals(readFileSync(join(ROOT, 'dist', name)))).toBe(true);
      const entries = readZip(readFileSync(join(out.dir, 'code.zip')));
      expect(entries.map((e) => e.name)).toEqual(code);
      for (const entry of entries) expect(entry.data.equals(readFileSync(join(ROOT, 'dist', entry.name)))).toBe(true);
      expect(out.result.files.map((f) => f.slice(out.dir.length + 1)).sort()).toEqual(
        ['code.zip', ...code.map((name) => `code/${name}`), 'config.yaml', 's.yaml', 'session-secret'].sort(),
      );
    },
  );

  it('describes the deployment in config.yaml, provider-neutral and without secret values', () => {
    expect(out.manifest).toMatchObject({
      kind: 'sandbox-mcp-fc/deployment',
      name: 'sandbox-mcp',
      region: 'cn-hangzhou',
      start: { command: ['/opt/nodejs22/bin/node', '/code/index.js'], listen: '0.0.0.0', port: 9000 },
      resources: { memoryMb: 1024, cpu: 1, diskMb: 512 },
      timeouts: { functionS: 600, toolMaxS: 300 },
      concurrency: { requestsPerInstance: 200, sessionsPerInstance: 20 },
      sessionAffinity: { enabled: true, mode: 'MCP_STREAMABLE', header: 'Mcp-Session-Id' },
      http: {
        path: '/mcp',
        methods: ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'],
        triggerAuth: 'anonymous',
        healthPath: '/health',
      },
      lifecycle: {
        initializer: { method: 'POST', path: '/initialize' },
        preStop: { method: 'GET', path: '/pre-stop' },
      },
    });
    expect(out.manifest.environment).toEqual({
      names: [
        'E2B_API_KEY',
        'E2B_API_URL',
        'E2B_DOMAIN',
        'E2B_TEMPLATE',
        'LOG_LEVEL',
        'MCP_AUTH_TOKENS',
        'MCP_FUNCTION_TIMEOUT_S',
        'MCP_MAX_SESSIONS',
        'MCP_SESSION_IDLE_TTL_S',
        'MCP_SESSION_MAX_AGE_S',
        'MCP_SESSION_SECRET',
        'MCP_TOOL_TIMEOUT_MAX_S',
        'SANDBOX_BACKEND',
      ],
      fromShell: [
        { name: 'MCP_AUTH_TOKENS', required: true, secret: true },
        { name: 'MCP_SESSION_SECRET', required: true, secret: true },
        { name: 'E2B_API_KEY', required: true, secret: true },
        { name: 'E2B_DOMAIN', required: true, secret: false },
        { name: 'E2B_API_URL', required: false, secret: false },
        { name: 'E2B_TEMPLATE', required: false, secret: false },
      ],
    });
    expect(out.manifest).toEqual(out.result.manifest);
    expect(out.manifest).not.toHaveProperty('customRuntimeConfig');
  });

  it(
    'writes an fc3 s.yaml whose secrets and E2B settings are ${env(...)} references, ' + 'the key and domain required',
    () => {
      const text = readFileSync(join(out.dir, 's.yaml'), 'utf8');
      expect(text).not.toContain(E2B_KEY);
      expect(text).not.toContain('token-from-env');
      expect(readFileSync(join(out.dir, 'config.yaml'), 'utf8')).not.toContain(E2B_KEY);
      const props = fc3Props(out.sYaml);
      expect(props.environmentVariables).toMatchObject({
        MCP_AUTH_TOKENS: '${env(MCP_AUTH_TOKENS)}',
        MCP_SESSION_SECRET: '${env(MCP_SESSION_SECRET)}',
        // Required: `s deploy` stops without them rather than send "" over the function's key and domain.
        E2B_API_KEY: '${env(E2B_API_KEY)}',
        E2B_DOMAIN: '${env(E2B_DOMAIN)}',
        E2B_API_URL: "${env('E2B_API_URL', '')}",
        E2B_TEMPLATE: "${env('E2B_TEMPLATE', '')}",
        SANDBOX_BACKEND: 'e2b',
        MCP_FUNCTION_TIMEOUT_S: '600',
        MCP_TOOL_TIMEOUT_MAX_S: '300',
      });
      expect(props.logConfig).toBe('auto');
      expect(props).toMatchObject({
        runtime: 'custom.debian12',
        code: './code',
        timeout: 600,
        instanceConcurrency: 200,
        sessionAffinity: 'MCP_STREAMABLE',
      });
      expect(JSON.parse(String(props.sessionAffinityConfig))).toEqual({
        sessionConcurrencyPerInstance: 20,
        sessionTTLInSeconds: 21600,
        sessionIdleTimeoutInSeconds: 1800,
      });
      expect(props.triggers).toEqual([
        {
          triggerName: 'mcp',
          triggerType: 'http',
          qualifier: 'live',
          triggerConfig: {
            authType: 'anonymous',
            methods: ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'],
            disableURLInternet: false,
          },
        },
      ]);
      expect(checkFc3Props(resolveVars(props, out.sYaml))).toEqual([]);
    },
  );

  it('prints one JSON document with the URL form, and nothing but JSON on stdout', () => {
    expect(out.result).toMatchObject({
      ok: true,
      url: 'https://sandbox-mcp-<id>.cn-hangzhou.fcapp.run/mcp',
      warnings: [],
    });
    expect(out.run.stderr).toContain('Wrote the artifact');
  });

  it('gives the same code.zip bytes for the same bundle (a re-run changes nothing)', async () => {
    const again = await generate([], { MCP_AUTH_TOKENS: 'token-from-env-0123456789abcdef' });
    expect(readFileSync(join(again.dir, 'code.zip')).equals(readFileSync(join(out.dir, 'code.zip')))).toBe(true);
  });
});

it('prints the manual steps (console and s), the URL form and a client configuration', async () => {
  const dir = makeTempDir();
  const run = await runDeployCli(['--output-dir', dir, '--generate-token'], { env: { E2B_API_KEY: E2B_KEY } });
  expect(run.code).toBe(0);
  const token = readFileSync(join(dir, 'auth-token'), 'utf8').trim();
  expect(run.stdout).toContain(`s deploy -t ${dir}/s.yaml`);
  expect(run.stdout).toContain(`export MCP_AUTH_TOKENS="$(cat ${dir}/auth-token)"`);
  expect(run.stdout).toContain(
    "Startup command: /opt/nodejs22/bin/node /code/index.js; listening port 9000; layer: FC's official Nodejs22",
  );
  expect(run.stdout).toContain('MCP Streamable HTTP; 20 sessions per instance');
  expect(run.stdout).toContain('https://sandbox-mcp-<id>.cn-hangzhou.fcapp.run/mcp');
  expect(run.stdout).toContain('"Authorization": "Bearer <token>"');
  // The token is shown once: in this run's output, and in no file but auth-token.
  expect(run.stdout.split(token).length - 1).toBe(1);
  expect(run.stdout).not.toContain(E2B_KEY);
});

describe("the console's steps for a production deploy", () => {
  it('mount the NAS in its VPC, publish a version behind the alias, and set warm instances and the limit', async () => {
    const nas = 'fs-1.cn-hangzhou.nas.aliyuncs.com:/mcp';
    const run = await runDeployCli(
      [
        ...['--output-dir', makeTempDir(), '--generate-token', '--nas', nas, '--vpc-id', 'vpc-1'],
        ...['--vswitch-id', 'vsw-1', '--security-group-id', 'sg-1', '--min-instances', '2', '--max-concurrency', '30'],
      ],
      { env: { E2B_API_KEY: E2B_KEY } },
    );
    expect(run.code).toBe(0);
    const steps = run.stdout.slice(run.stdout.indexOf('Or in the FC console')).split('\n');
    const step = (text: string) => steps.find((line) => line.includes(text)) ?? `no step says ${text}`;
    expect(step('Network:')).toMatch(
      /^ {2}\d+\. Network: VPC vpc-1, vSwitch vsw-1, security group sg-1, internet access on/,
    );
    expect(step('Network:')).toContain(`Storage → NAS: mount ${nas} at /mnt/state`);
    expect(step('Aliases')).toMatch(/Versions → publish a version; Aliases → point live at it/);
    expect(step('HTTP trigger')).toContain('on version or alias live');
    expect(step('Elastic scaling')).toContain('alias live: 2 minimum instances (billed while idle)');
    expect(step('Concurrency:')).toContain('reserve 30 for the function');
    const numbers = steps.map((line) => /^ {2}(\d+)\. /.exec(line)?.[1]).filter((n) => n !== undefined);
    expect(numbers.map(Number)).toEqual(numbers.map((_, i) => i + 1));
  });
});

describe('the manual steps name every variable from the shell', () => {
  let stdout: string;
  beforeAll(async () => {
    const run = await runDeployCli(['--output-dir', makeTempDir(), '--generate-token'], {
      env: { E2B_API_KEY: E2B_KEY },
    });
    expect(run.code).toBe(0);
    stdout = run.stdout;
  });

  it(
    'exports the required ones and marks the optional ones, saying that s deploy refuses to run without the ' +
      'required',
    () => {
      expect(stdout).toContain('export E2B_API_KEY=<your E2B API key>');
      expect(stdout).toContain('export E2B_DOMAIN=<e2b.app or <region>.e2b.fc.aliyuncs.com>');
      expect(stdout).toMatch(/# optional: export E2B_API_URL=.*https:\/\/api\.<E2B_DOMAIN>/);
      expect(stdout).toMatch(/# optional: export E2B_TEMPLATE=.*code-interpreter-v1/);
      expect(stdout).toContain(
        's deploy refuses to run while MCP_AUTH_TOKENS, MCP_SESSION_SECRET, E2B_API_KEY, E2B_DOMAIN are unset',
      );
    },
  );

  it("lists each in the console's environment variables, the optional ones marked", () => {
    const list = stdout.slice(stdout.indexOf('4. Environment variables:'), stdout.indexOf('  5. '));
    expect(list).toContain('SANDBOX_BACKEND=e2b');
    expect(list).toContain('E2B_API_KEY=<your E2B API key>');
    expect(list).toContain('E2B_DOMAIN=<e2b.app or <region>.e2b.fc.aliyuncs.com>');
    expect(list).toMatch(/E2B_API_URL=<optional: /);
    expect(list).toMatch(/E2B_TEMPLATE=<optional: .*code-interpreter-v1>/);
    expect(list).toMatch(/MCP_SESSION_SECRET=<the secret in .*session-secret; the same on every deploy>/);
  });

  it('say that FC keeps no logs until logging is on, how to turn it on, and that s deploy turns it on', () => {
    expect(stdout).toContain('FC keeps no logs of this function until logging is on');
    expect(stdout).toContain('Function → Logging: choose or create an SLS project and logstore');
    expect(stdout).toContain('--sls-project and --sls-logstore');
    expect(stdout).toContain('`s deploy` with this s.yaml turns it on by itself (logConfig: auto)');
  });
});

it(
  '--sls-project and --sls-logstore: s.yaml names them in logConfig, ' + 'and the steps say where the logs go',
  async () => {
    const args = ['--generate-token', '--sls-project', 'mcp-logs', '--sls-logstore', 'mcp-function'];
    const { sYaml } = await generate(args);
    const props = fc3Props(sYaml);
    expect(props.logConfig).toEqual({
      project: 'mcp-logs',
      logstore: 'mcp-function',
      enableRequestMetrics: true,
      enableInstanceMetrics: true,
      logBeginRule: 'DefaultRegex',
    });
    expect(checkFc3Props(resolveVars(props, sYaml))).toEqual([]);
    const human = await runDeployCli(['--output-dir', makeTempDir(), ...args], { env: { E2B_API_KEY: E2B_KEY } });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('Logging: SLS project mcp-logs, logstore mcp-function');
    expect(human.stdout).not.toContain('FC keeps no logs');
  },
);

describe('the session secret', () => {
  it('is generated once into session-secret (0600), reused by the next run, and never printed', async () => {
    const dir = makeTempDir();
    const file = join(dir, 'session-secret');
    const first = await runDeployCli(['--output-dir', dir, '--generate-token', '--json'], {
      env: { E2B_API_KEY: E2B_KEY },
    });
    expect(first.code).toBe(0);
    const secret = readFileSync(file, 'utf8').trim();
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((JSON.parse(first.stdout) as { files: string[] }).files).toContain(file);
    expect(first.stderr).toContain(`New session secret written to ${file}`);

    const again = await runDeployCli(['--output-dir', dir, '--generate-token'], { env: { E2B_API_KEY: E2B_KEY } });
    expect(again.code).toBe(0);
    expect(readFileSync(file, 'utf8').trim()).toBe(secret);
    expect(again.stderr).toContain(`Using the session secret kept in ${file}`);
    expect(again.stdout).toContain(`export MCP_SESSION_SECRET="$(cat ${file})"`);
    expect(again.stdout).toContain(
      "a new one ends every open session. A re-deploy through --deploy keeps the function's secret by itself",
    );
    for (const output of [first.stdout, first.stderr, again.stdout, again.stderr]) expect(output).not.toContain(secret);
    for (const name of ['s.yaml', 'config.yaml']) expect(readFileSync(join(dir, name), 'utf8')).not.toContain(secret);
  });

  it(
    'comes from the shell when MCP_SESSION_SECRET is set there: ' + 'no file, and the step says to keep using it',
    async () => {
      const dir = makeTempDir();
      const secret = 'session-secret-from-the-shell-0123456789abcdef';
      const run = await runDeployCli(['--output-dir', dir, '--generate-token'], {
        env: { E2B_API_KEY: E2B_KEY, MCP_SESSION_SECRET: secret },
      });
      expect(run.code).toBe(0);
      expect(existsSync(join(dir, 'session-secret'))).toBe(false);
      expect(run.stdout).toContain('MCP_SESSION_SECRET is set in this shell: keep using it');
      expect(run.stdout).not.toContain('openssl rand');
      expect(run.stdout).not.toContain(secret);
    },
  );
});

it(
  '--sandbox-backend local: s.yaml and the steps set SANDBOX_BACKEND=local and LOCAL_SANDBOX_ISOLATION=none, and ' +
    'no E2B variable',
  async () => {
    const { sYaml, manifest, dir } = await generate(['--generate-token', '--sandbox-backend', 'local'], {
      E2B_API_KEY: '',
    });
    const env = fc3Props(sYaml).environmentVariables;
    expect(env).toMatchObject({ SANDBOX_BACKEND: 'local', LOCAL_SANDBOX_ISOLATION: 'none' });
    expect(Object.keys(env).filter((name) => name.startsWith('E2B_'))).toEqual([]);
    expect((manifest.environment as { fromShell: Array<{ name: string }> }).fromShell.map((v) => v.name)).toEqual([
      'MCP_AUTH_TOKENS',
      'MCP_SESSION_SECRET',
    ]);
    const human = await runDeployCli(['--output-dir', dir, '--generate-token', '--sandbox-backend', 'local']);
    expect(human.code).toBe(0);
    const list = human.stdout.slice(human.stdout.indexOf('4. Environment variables:'), human.stdout.indexOf('  5. '));
    expect(list).toContain('SANDBOX_BACKEND=local');
    expect(list).toContain('LOCAL_SANDBOX_ISOLATION=none');
    const steps = human.stdout.slice(
      human.stdout.indexOf('Deploy with Serverless Devs'),
      human.stdout.indexOf('The URL will be'),
    );
    expect(steps).not.toContain('E2B_');
  },
);

describe('--generate-token', () => {
  it(
    'writes a 64-hex-digit token to a 0600 file, ' + 'shows it once, and keeps it out of config.yaml and s.yaml',
    async () => {
      const { dir, result, run } = await generate(['--generate-token']);
      const file = join(dir, 'auth-token');
      const token = readFileSync(file, 'utf8').trim();
      expect(token).toMatch(/^[0-9a-f]{64}$/);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(result.files).toContain(file);
      expect(readFileSync(join(dir, 'config.yaml'), 'utf8')).not.toContain(token);
      expect(readFileSync(join(dir, 's.yaml'), 'utf8')).not.toContain(token);
      expect(run.stdout).not.toContain(token);
      expect(run.stderr).toContain('New bearer token written to');
    },
  );

  it('reuses the token of an earlier run instead of replacing it', async () => {
    const dir = makeTempDir();
    expect(
      (await runDeployCli(['--output-dir', dir, '--generate-token'], { env: { E2B_API_KEY: E2B_KEY } })).code,
    ).toBe(0);
    const first = readFileSync(join(dir, 'auth-token'), 'utf8');
    const again = await runDeployCli(['--output-dir', dir, '--generate-token'], { env: { E2B_API_KEY: E2B_KEY } });
    expect(again.code).toBe(0);
    expect(readFileSync(join(dir, 'auth-token'), 'utf8')).toBe(first);
    expect(again.stdout).not.toContain(first.trim());
    expect(again.stderr).toContain('Using the token generated earlier');
  });
});

it('--auth-token-file: reads the tokens, names the file in the steps, and writes no token anywhere', async () => {
  const tokenDir = makeTempDir();
  const file = join(tokenDir, 'tokens');
  writeFileSync(file, '# team tokens\nfirst-token-0123456789abcdef\nsecond-token-0123456789abcdef\n', { mode: 0o600 });
  const { dir, sYaml } = await generate(['--auth-token-file', file]);
  expect(existsSync(join(dir, 'auth-token'))).toBe(false);
  expect(readFileSync(join(dir, 's.yaml'), 'utf8')).not.toContain('first-token');
  expect(fc3Props(sYaml).environmentVariables.MCP_AUTH_TOKENS).toBe('${env(MCP_AUTH_TOKENS)}');
  const human = await runDeployCli(['--output-dir', makeTempDir(), '--auth-token-file', file], {
    env: { E2B_API_KEY: E2B_KEY },
  });
  expect(human.stdout).toContain(`grep -v '^#' ${file} | paste -sd, -`);
});

it('--no-auth: sets MCP_AUTH=none, drops MCP_AUTH_TOKENS, and warns', async () => {
  const { sYaml, manifest, run } = await generate(['--no-auth']);
  const env = fc3Props(sYaml).environmentVariables;
  expect(env.MCP_AUTH).toBe('none');
  expect(env).not.toHaveProperty('MCP_AUTH_TOKENS');
  expect(manifest.http).toMatchObject({ auth: 'none' });
  expect(run.stderr).toContain('--no-auth: anyone who finds the URL');
});

it.each([
  [
    '--name',
    ['--name', 'agents_sandbox-2'],
    (p: ReturnType<typeof fc3Props>, m: Record<string, unknown>, s: Record<string, unknown>) => {
      expect(s.vars).toMatchObject({ functionName: 'agents_sandbox-2' });
      expect(m.name).toBe('agents_sandbox-2');
      expect(p.functionName).toBe('${vars.functionName}');
    },
  ],
  [
    '--region',
    ['--region', 'ap-southeast-1'],
    (_p: ReturnType<typeof fc3Props>, m: Record<string, unknown>, s: Record<string, unknown>) => {
      expect(s.vars).toMatchObject({ region: 'ap-southeast-1' });
      expect(m.region).toBe('ap-southeast-1');
    },
  ],
  [
    '--runtime with --node-path',
    ['--runtime', 'custom.debian11', '--node-path', '/opt/nodejs20/bin/node'],
    (p: ReturnType<typeof fc3Props>, m: Record<string, unknown>) => {
      expect(p.runtime).toBe('custom.debian11');
      // A Node of the operator's own: no layer this CLI knows puts it there.
      expect(p.layers).toEqual([]);
      expect(p.customRuntimeConfig.command).toEqual(['/opt/nodejs20/bin/node']);
      expect(m.start).toMatchObject({ command: ['/opt/nodejs20/bin/node', '/code/index.js'] });
    },
  ],
  [
    '--memory and --cpu',
    ['--memory', '4096', '--cpu', '2'],
    (p: ReturnType<typeof fc3Props>, m: Record<string, unknown>) => {
      expect([p.memorySize, p.cpu]).toEqual([4096, 2]);
      expect(m.resources).toMatchObject({ memoryMb: 4096, cpu: 2 });
    },
  ],
  [
    '--timeout',
    ['--timeout', '120'],
    (p: ReturnType<typeof fc3Props>, m: Record<string, unknown>) => {
      expect(p.timeout).toBe(120);
      expect(p.environmentVariables).toMatchObject({ MCP_FUNCTION_TIMEOUT_S: '120', MCP_TOOL_TIMEOUT_MAX_S: '110' });
      expect(m.timeouts).toEqual({ functionS: 120, toolMaxS: 110 });
    },
  ],
  [
    '--tool-timeout-max',
    ['--timeout', '900', '--tool-timeout-max', '600'],
    (p: ReturnType<typeof fc3Props>) => {
      expect(p.environmentVariables).toMatchObject({ MCP_FUNCTION_TIMEOUT_S: '900', MCP_TOOL_TIMEOUT_MAX_S: '600' });
    },
  ],
  [
    '--session-concurrency and the session TTLs',
    ['--session-concurrency', '50', '--session-idle-ttl', '600', '--session-ttl', '3600'],
    (p: ReturnType<typeof fc3Props>) => {
      expect(JSON.parse(String(p.sessionAffinityConfig))).toEqual({
        sessionConcurrencyPerInstance: 50,
        sessionTTLInSeconds: 3600,
        sessionIdleTimeoutInSeconds: 600,
      });
      expect(p.environmentVariables).toMatchObject({
        MCP_MAX_SESSIONS: '50',
        MCP_SESSION_IDLE_TTL_S: '600',
        MCP_SESSION_MAX_AGE_S: '3600',
      });
    },
  ],
  [
    '--no-enable-session-affinity',
    ['--no-enable-session-affinity', '--trigger-methods', 'POST', 'OPTIONS'],
    (p: ReturnType<typeof fc3Props>, m: Record<string, unknown>) => {
      // Stated, so that s deploy turns affinity off as --deploy does.
      expect(p.sessionAffinity).toBe('NONE');
      expect(p).not.toHaveProperty('sessionAffinityConfig');
      expect(p.triggers[0]?.triggerConfig.methods).toEqual(['POST', 'OPTIONS']);
      expect(m.sessionAffinity).toEqual({ enabled: false });
    },
  ],
  [
    '--trigger-methods',
    ['--trigger-methods', 'GET', 'POST', 'DELETE'],
    (p: ReturnType<typeof fc3Props>, m: Record<string, unknown>) => {
      expect(p.triggers[0]?.triggerConfig.methods).toEqual(['GET', 'POST', 'DELETE']);
      expect(m.http).toMatchObject({ methods: ['GET', 'POST', 'DELETE'] });
    },
  ],
  [
    'the E2B settings',
    [
      '--e2b-domain',
      'cn-hangzhou.e2b.fc.aliyuncs.com',
      '--e2b-api-url',
      'https://api.cn-hangzhou.e2b.fc.aliyuncs.com',
      '--template',
      'my-template',
    ],
    (p: ReturnType<typeof fc3Props>) => {
      expect(p.environmentVariables).toMatchObject({
        E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com',
        E2B_API_URL: 'https://api.cn-hangzhou.e2b.fc.aliyuncs.com',
        E2B_TEMPLATE: 'my-template',
        E2B_API_KEY: '${env(E2B_API_KEY)}',
      });
    },
  ],
  [
    '--log-level',
    ['--log-level', 'debug'],
    (p: ReturnType<typeof fc3Props>) => {
      expect(p.environmentVariables.LOG_LEVEL).toBe('debug');
    },
  ],
  [
    '--env',
    ['--env', 'MCP_ALLOWED_ORIGINS=https://app.example.com', '--env', 'EXTRA=a=b'],
    (p: ReturnType<typeof fc3Props>, m: Record<string, unknown>) => {
      expect(p.environmentVariables).toMatchObject({ MCP_ALLOWED_ORIGINS: 'https://app.example.com', EXTRA: 'a=b' });
      expect((m.environment as { names: string[] }).names).toEqual(
        expect.arrayContaining(['MCP_ALLOWED_ORIGINS', 'EXTRA']),
      );
    },
  ],
  [
    '--custom-domain',
    ['--custom-domain', 'mcp.example.com', '--domain-http-only'],
    (_p: ReturnType<typeof fc3Props>, m: Record<string, unknown>, s: Record<string, unknown>) => {
      expect(m.http).toMatchObject({ customDomain: 'mcp.example.com' });
      expect((s.resources as Record<string, unknown>).domain).toEqual({
        component: 'fc3-domain',
        props: {
          region: '${vars.region}',
          domainName: 'mcp.example.com',
          protocol: 'HTTP',
          routeConfig: {
            routes: [
              {
                path: '/*',
                functionName: '${vars.functionName}',
                qualifier: 'live',
                methods: ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'],
              },
            ],
          },
        },
      });
    },
  ],
])('applies %s to s.yaml and config.yaml', async (_name, args, check) => {
  const { sYaml, manifest } = await generate(['--generate-token', ...args]);
  const props = fc3Props(sYaml);
  check(props, manifest, sYaml);
  if (props.customRuntimeConfig.command[0] === '/opt/nodejs22/bin/node')
    expect(checkFc3Props(resolveVars(props, sYaml))).toEqual([]);
});

it('--output-dir: creates nested directories, relative to the working directory', async () => {
  const base = makeTempDir();
  const run = await runDeployCli(['--output-dir', 'a/b/out', '--no-auth'], {
    cwd: base,
    env: { E2B_API_KEY: E2B_KEY },
  });
  expect(run.code).toBe(0);
  for (const file of ['code/index.js', 'code.zip', 'config.yaml', 's.yaml'])
    expect(existsSync(join(base, 'a/b/out', file))).toBe(true);
  expect(run.stdout).toContain('s deploy -t a/b/out/s.yaml');
});

it('--dry-run writes nothing and lists what it would write', async () => {
  const dir = join(makeTempDir(), 'never');
  const run = await runDeployCli(['--output-dir', dir, '--dry-run', '--generate-token', '--json'], {
    env: { E2B_API_KEY: E2B_KEY },
  });
  expect(run.code).toBe(0);
  expect(existsSync(dir)).toBe(false);
  const result = JSON.parse(run.stdout) as { dryRun: boolean; files: string[] };
  expect(result.dryRun).toBe(true);
  expect(result.files).toEqual(
    expect.arrayContaining([join(dir, 'code.zip'), join(dir, 'auth-token'), join(dir, 'session-secret')]),
  );
});

describe('--help', () => {
  it('documents every option with its default, and examples', async () => {
    const run = await runDeployCli(['--help']);
    expect(run.code).toBe(0);
    const options = [
      'name',
      'region',
      'runtime',
      'node-path',
      'memory',
      'cpu',
      'timeout',
      'tool-timeout-max',
      'log-level',
      'env',
      'enable-session-affinity',
      'session-concurrency',
      'session-idle-ttl',
      'session-ttl',
      'trigger-methods',
      'custom-domain',
      'auth',
      'generate-token',
      'auth-token-file',
      'e2b-domain',
      'e2b-api-url',
      'template',
      'output-dir',
      'deploy',
      'profile',
      's-access',
      'account-id',
      'endpoint',
      'dry-run',
      'json',
    ];
    // Each option's entry: its first line (`  --name  …`) and the continuation lines up to the next entry.
    const lines = run.stdout.split('\n');
    for (const option of options) {
      const start = lines.findIndex((line) => line.startsWith(`  --${option} `));
      expect({ option, found: start >= 0 }).toEqual({ option, found: true });
      const end = lines.findIndex((line, i) => i > start && (/^\s{2}--/.test(line) || line.trim() === ''));
      const entry = lines.slice(start, end).join(' ');
      expect({ option, entry }).toEqual({ option, entry: expect.stringContaining('[default:') });
    }
    expect(run.stdout).toContain('Examples:');
    expect(run.stdout).toContain('Exit codes: 0 done, 1 failed');
  });
});

describe('exit codes and --json on failure', () => {
  it('answers an unknown option with exit 2 and one JSON error document', async () => {
    const run = await runDeployCli(['--bogus-option', '--json']);
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: false,
      error: { kind: 'usage', message: expect.stringContaining('bogus-option') },
    });
  });
});
