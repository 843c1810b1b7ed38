/**
 * The plan rules of a production deploy, in-process (createPlan, as the CLI calls it): shared state on a NAS, the
 * affinity checks, versions and capacity options, logs, the runtime and the E2B region. Each refusal names the
 * option to change; test/deploy/fc-deploy-production.test.ts runs what they allow against the fake FC API.
 */
import { DEPLOY_OPTIONS } from '../../scripts/deploy-options';
import { createPlan } from '../../scripts/deploy-plan';
import { toFunctionConfig, toLogPlacement, toStatePlacement } from '../../scripts/fc-function-config';
import { checkStateAgainstFunction } from '../../scripts/state-plan';
import { NAS, VPC } from '../support/deploy-to-fake';

const SHELL = {
  MCP_AUTH_TOKENS: 'plan-test-token-0123456789abcdef',
  MCP_SESSION_SECRET: 'plan-test-session-secret-0123456789abcdef',
  E2B_API_KEY: 'e2b-key',
  E2B_DOMAIN: 'cn-hangzhou.e2b.fc.aliyuncs.com',
};

const camelCase = (name: string): string => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** The CLI's arguments parsed as yargs would: `--name value` pairs and `--flag` / `--no-flag` switches. */
function parse(argv: string[]): Record<string, unknown> {
  const args: Record<string, unknown> = Object.fromEntries(
    Object.entries(DEPLOY_OPTIONS).map(([name, option]) => [camelCase(name), option.default]),
  );
  for (let i = 0; i < argv.length; i++) {
    const name = String(argv[i]).replace(/^--/, '');
    const option = DEPLOY_OPTIONS[name.replace(/^no-/, '')];
    if (option?.type === 'boolean') {
      args[camelCase(name.replace(/^no-/, ''))] = !name.startsWith('no-');
      continue;
    }
    const value = argv[++i];
    const key = camelCase(name);
    args[key] = option?.array
      ? [...((args[key] as unknown[]) ?? []), value]
      : option?.type === 'number'
        ? Number(value)
        : value;
  }
  return args;
}

function plan(argv: string[] = [], shell: Record<string, string> = SHELL) {
  return createPlan({ ...parse(argv), outputDir: '/tmp/unused', deploy: true }, shell);
}

describe('shared state', () => {
  it('a NAS mount target becomes nasConfig, its VPC vpcConfig, and E2B_STATE_DIR the mount directory', () => {
    const { plan: p, problems } = plan(['--nas', NAS, ...VPC]);
    expect(problems).toEqual([]);
    expect(p.environment.E2B_STATE_DIR).toBe('/mnt/state');
    expect(toStatePlacement(p, undefined)).toEqual({
      nasConfig: {
        userId: 0,
        groupId: 0,
        mountPoints: [{ serverAddr: NAS, mountDir: '/mnt/state', enableTLS: false }],
      },
      vpcConfig: { vpcId: 'vpc-bp1abc', vSwitchIds: ['vsw-bp1def'], securityGroupId: 'sg-bp1ghi' },
    });
    // Internet access stays on: the sandboxes are reached over the internet.
    const config = toFunctionConfig(p, {}, { logConfig: {}, ...toStatePlacement(p, undefined) });
    expect(config.internetAccess).toBe(true);
  });

  it('an E2B_STATE_DIR under the mount is kept; one elsewhere, or with no mount, is refused', () => {
    expect(plan(['--nas', NAS, ...VPC, '--env', 'E2B_STATE_DIR=/mnt/state/e2b']).plan.environment.E2B_STATE_DIR).toBe(
      '/mnt/state/e2b',
    );
    expect(plan(['--nas', NAS, ...VPC, '--env', 'E2B_STATE_DIR=/tmp/state']).problems).toEqual([
      expect.stringContaining('E2B_STATE_DIR=/tmp/state is not under the NAS mount /mnt/state'),
    ]);
    expect(plan(['--env', 'E2B_STATE_DIR=/mnt/state']).problems).toEqual([
      expect.stringContaining('is not on storage the instances share: pass --nas'),
    ]);
  });

  it('a mount target needs its whole VPC, ids of the right form, and a mount directory FC allows', () => {
    expect(plan(['--nas', NAS]).problems).toEqual([expect.stringContaining('needs the VPC its mount target is in')]);
    expect(plan(['--nas', NAS, ...VPC.slice(0, 4), '--security-group-id', 'bogus']).problems).toEqual([
      '--security-group-id "bogus" is not a security group id',
    ]);
    expect(plan(['--nas', NAS, ...VPC, '--nas-mount-dir', '/code/state']).problems).toEqual([
      expect.stringContaining('--nas-mount-dir /code/state must be an absolute directory under /mnt/'),
    ]);
    expect(plan(['--nas', 'nas.example.com:/x', ...VPC]).problems).toEqual([
      expect.stringContaining('is not auto, none or a NAS mount target'),
    ]);
    expect(plan(VPC).problems).toEqual([expect.stringContaining('go with --nas SERVER:/PATH')]);
  });

  it('--deploy refuses to drop a mount the function has, and auto without one to keep', () => {
    const mounted = {
      nasConfig: { mountPoints: [{ serverAddr: NAS, mountDir: '/mnt/state' }] },
      environmentVariables: { E2B_STATE_DIR: '/mnt/state' },
    };
    const none = plan().plan;
    expect(checkStateAgainstFunction(none, mounted, { E2B_STATE_DIR: '/mnt/state' })).toEqual([
      expect.stringContaining(`mounts ${NAS} at /mnt/state, which this deploy would remove`),
      expect.stringContaining('has E2B_STATE_DIR=/mnt/state, which this deploy leaves on no shared mount'),
    ]);
    // --nas none removes it on purpose; the kept E2B_STATE_DIR must then go too.
    expect(checkStateAgainstFunction(plan(['--nas', 'none']).plan, mounted, {})).toEqual([]);
    const auto = plan(['--nas', 'auto']).plan;
    expect(checkStateAgainstFunction(auto, undefined, { E2B_STATE_DIR: '/mnt/state' })).toEqual([
      expect.stringContaining('has no NAS to keep, and --deploy does not create one'),
    ]);
    expect(checkStateAgainstFunction(auto, mounted, { E2B_STATE_DIR: '/mnt/state' })).toEqual([]);
    // auto keeps the function's own NAS and VPC.
    expect(toStatePlacement(auto, { ...mounted, vpcConfig: { vpcId: 'vpc-x' } })).toEqual({
      nasConfig: mounted.nasConfig,
      vpcConfig: { vpcId: 'vpc-x' },
    });
  });
});

describe('affinity', () => {
  it('refuses an idle timeout above the session TTL', () => {
    expect(plan(['--session-idle-ttl', '7200', '--session-ttl', '3600']).problems).toEqual([
      expect.stringContaining('--session-idle-ttl 7200 is longer than --session-ttl 3600'),
    ]);
    expect(plan(['--session-idle-ttl', '3600', '--session-ttl', '3600']).problems).toEqual([]);
  });

  it('states SHARE isolation, and NONE for --no-enable-session-affinity', () => {
    const on = toFunctionConfig(plan().plan, {}, { logConfig: {}, nasConfig: {}, vpcConfig: {} });
    expect(on).toMatchObject({ instanceIsolationMode: 'SHARE', sessionAffinity: 'MCP_STREAMABLE' });
    const off = toFunctionConfig(
      plan(['--no-enable-session-affinity']).plan,
      {},
      {
        logConfig: {},
        nasConfig: {},
        vpcConfig: {},
      },
    );
    expect(off).toMatchObject({ instanceIsolationMode: 'SHARE', sessionAffinity: 'NONE' });
    expect(off).not.toHaveProperty('sessionAffinityConfig');
  });
});

describe('versions, capacity and logs', () => {
  it('checks the alias, warm instances and reserved concurrency', () => {
    expect(plan(['--alias', 'LATEST']).problems).toEqual([expect.stringContaining('--alias "LATEST"')]);
    expect(plan(['--alias', '9x']).problems).toEqual([expect.stringContaining('must start with a letter')]);
    expect(plan(['--min-instances', '-1']).problems).toEqual([expect.stringContaining('--min-instances -1')]);
    expect(plan(['--min-instances', '1.5']).problems).toEqual([expect.stringContaining('--min-instances 1.5')]);
    expect(plan(['--max-concurrency', '0']).problems).toEqual([expect.stringContaining('0 would stop the function')]);
    expect(plan(['--min-instances', '2', '--max-concurrency', '50', '--alias', 'prod']).plan).toMatchObject({
      alias: 'prod',
      minInstances: 2,
      maxConcurrency: 50,
    });
  });

  it("--no-logs sends logging off in fc3's empty form, and conflicts with an SLS project", () => {
    expect(toLogPlacement(plan(['--no-logs']).plan, { logConfig: { project: 'p', logstore: 'l' } })).toEqual({
      project: '',
      logstore: '',
      enableRequestMetrics: false,
      enableInstanceMetrics: false,
      logBeginRule: 'None',
    });
    expect(plan(['--no-logs', '--sls-project', 'proj', '--sls-logstore', 'store']).problems).toEqual([
      '--no-logs conflicts with --sls-project and --sls-logstore: choose one',
    ]);
    // Neither: the function's current logs, or none (which --deploy refuses for lack of logs).
    expect(toLogPlacement(plan().plan, { logConfig: { project: 'p', logstore: 'l' } })).toEqual({
      project: 'p',
      logstore: 'l',
    });
    expect(toLogPlacement(plan().plan, undefined)).toBeUndefined();
  });

  it('turns the fcapp.run URL off only with a custom domain to reach the function by', () => {
    expect(plan(['--disable-fcapp-url']).problems).toEqual([expect.stringContaining('leaves clients no way in')]);
  });
});

describe('runtime and region', () => {
  it('runs on custom.debian12 with the official Nodejs22 layer of the region by default', () => {
    const { plan: p, warnings } = plan(['--region', 'cn-beijing'], { ...SHELL, E2B_DOMAIN: 'e2b.app' });
    expect(p).toMatchObject({ runtime: 'custom.debian12', nodePath: '/opt/nodejs22/bin/node' });
    const config = toFunctionConfig(p, {}, { logConfig: {}, nasConfig: {}, vpcConfig: {} });
    expect(config.layers).toEqual(['acs:fc:cn-beijing:official:layers/Nodejs22/versions/3']);
    expect(warnings).toEqual([]);
  });

  it('warns of Node 20 on custom.debian10 (no layer), and of a region custom.debian12 was not listed for', () => {
    const old = plan(['--runtime', 'custom.debian10']);
    expect(old.warnings).toEqual([expect.stringContaining('Node 20 reached its end of life on 2026-04-30')]);
    expect(toFunctionConfig(old.plan, {}, { logConfig: {}, nasConfig: {}, vpcConfig: {} }).layers).toEqual([]);
    expect(plan(['--region', 'ap-southeast-1'], { ...SHELL, E2B_DOMAIN: 'e2b.app' }).warnings).toEqual([
      expect.stringContaining('if FC refuses it in ap-southeast-1, pass --runtime custom.debian10'),
    ]);
  });

  it("refuses Alibaba Cloud's E2B service of another region, from the options or the shell", () => {
    expect(plan(['--region', 'cn-guangzhou']).problems).toEqual([
      expect.stringContaining(
        "E2B_DOMAIN cn-hangzhou.e2b.fc.aliyuncs.com is Alibaba Cloud's E2B service in " +
          'cn-hangzhou, but the function goes to --region cn-guangzhou',
      ),
    ]);
    expect(
      plan(['--e2b-api-url', 'https://api.cn-shanghai.e2b.fc.aliyuncs.com'], { ...SHELL, E2B_DOMAIN: 'e2b.app' })
        .problems,
    ).toEqual([expect.stringContaining('--e2b-api-url https://api.cn-shanghai.e2b.fc.aliyuncs.com')]);
    expect(plan(['--region', 'cn-guangzhou'], { ...SHELL, E2B_DOMAIN: 'e2b.app' }).problems).toEqual([]);
  });
});

describe('telemetry settings from the deploying shell', () => {
  it('take each OTEL_* variable the shell sets, required at s deploy, endpoints and headers as secrets', () => {
    const shell = {
      ...SHELL,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tracing.example/adapt_token/api/otlp/traces',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc',
      OTEL_SERVICE_NAME: 'mcp-prod',
    };
    const { plan: p, problems } = plan([], shell);
    expect(problems).toEqual([]);
    expect(p.fromShell.filter((v) => v.name.startsWith('OTEL_'))).toEqual([
      { name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', required: true, secret: true },
      { name: 'OTEL_EXPORTER_OTLP_HEADERS', required: true, secret: true },
      { name: 'OTEL_SERVICE_NAME', required: true, secret: false },
    ]);
    expect(Object.keys(p.environment).filter((name) => name.startsWith('OTEL_'))).toEqual([]);
  });

  it('refuse them through --env, which would put them in s.yaml and the command line', () => {
    const { problems } = plan(['--env', 'OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318']);
    expect(problems).toEqual([expect.stringContaining('telemetry settings come from the shell you deploy from')]);
  });
});
