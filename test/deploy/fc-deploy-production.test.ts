/**
 * A production deploy through the CLI against the fake FC API (test/support/fake-fc.ts, extended with versions,
 * aliases, scaling, concurrency, NAS/VPC, the service-linked role and the certificate service): each deploy publishes
 * a version behind the alias the trigger routes to, --rollback moves the alias back with one write, a NAS holds
 * E2B_STATE_DIR, warm instances and reserved concurrency are set and removed, the domain gets TLS 1.2 and up.
 */
import { readFileSync } from 'node:fs';

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { loadConfig } from '../../functions/mcp/config';
import { makeTempDir, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { makeCertificate } from '../support/certificates';
import {
  CREDENTIALS,
  deployToFake,
  E2B_KEY,
  EMPTY_SHELL,
  fakeEndpoints,
  NAS,
  tokenFile,
  VPC,
} from '../support/deploy-to-fake';
import { type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';

const SHELL = { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY };

let fake: FakeFc;
beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
});
afterEach(() => fake.close());
afterAll(removeTempDirs);

const deploy = (args: string[] = [], tokens = tokenFile()) =>
  deployToFake(fake, ['--auth-token-file', tokens, ...args], SHELL);
const writes = (from = 0) =>
  fake.calls.slice(from).filter((c) => c.method !== 'GET' && !/^(Check|Get|List)/.test(String(c.action)));

/** --rollback against the fake: no output directory, no artifact, only the endpoints and the alias. */
function rollback(args: string[] = []) {
  return runDeployCli(['--rollback', ...args, ...fakeEndpoints(fake, ['--logs']), '--json'], { env: SHELL });
}

describe('versions behind an alias', () => {
  it('publishes version 1 behind live, then 2, and --rollback moves live back to 1 with one write', async () => {
    const tokens = tokenFile();
    const first = await deploy([], tokens);
    expect(first.code).toBe(0);
    expect(fake.aliases.get('sandbox-mcp/live')).toMatchObject({ versionId: '1' });
    expect(fake.triggers.get('sandbox-mcp/mcp')).toMatchObject({ qualifier: 'live' });
    expect(first.json.deployed).toMatchObject({ release: { alias: 'live', version: '1' } });

    const second = await deploy(['--memory', '2048'], tokens);
    expect(second.code).toBe(0);
    expect(fake.aliases.get('sandbox-mcp/live')).toMatchObject({ versionId: '2' });
    expect(second.json.deployed).toMatchObject({ release: { alias: 'live', version: '2', previous: '1' } });
    const versions = fake.versions.get('sandbox-mcp') ?? [];
    expect(versions.map((v) => [v.versionId, (v.config as { memorySize?: number }).memorySize])).toEqual([
      ['1', 1024],
      ['2', 2048],
    ]);

    const before = fake.calls.length;
    const back = await rollback();
    expect({ code: back.code, stderr: back.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(JSON.parse(back.stdout)).toEqual({ ok: true, rollback: { alias: 'live', version: '1', previous: '2' } });
    expect(writes(before).map((c) => c.action)).toEqual(['UpdateAlias']);
    expect(fake.aliases.get('sandbox-mcp/live')).toMatchObject({ versionId: '1' });
    // Forward again to a named version.
    expect((await rollback(['2'])).code).toBe(0);
    expect(fake.aliases.get('sandbox-mcp/live')).toMatchObject({ versionId: '2' });
    expect(unsignedCalls(fake.calls)).toEqual([]);
  });

  it('refuses a rollback with nothing to go back to, or to a version that is not there, changing nothing', async () => {
    expect((await deploy()).code).toBe(0);
    const before = fake.calls.length;
    const none = await rollback();
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout).error.message).toContain('has no older version to go back to');
    const missing = await rollback(['7']);
    expect(JSON.parse(missing.stdout).error.message).toContain('has no version 7 (it has 1)');
    expect(writes(before)).toEqual([]);
  });

  it('--rollback --dry-run says where it would move the alias and writes nothing', async () => {
    const tokens = tokenFile();
    await deploy([], tokens);
    await deploy([], tokens);
    const before = fake.calls.length;
    const dry = await rollback(['--dry-run']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({
      ok: true,
      dryRun: true,
      rollback: { alias: 'live', version: '2', previous: '2', wouldServe: '1' },
    });
    expect(writes(before)).toEqual([]);
    expect(fake.aliases.get('sandbox-mcp/live')).toMatchObject({ versionId: '2' });
  });

  it('says in words which version serves', async () => {
    const tokens = tokenFile();
    await deploy([], tokens);
    const run = await runDeployCli(
      ['--output-dir', makeTempDir(), '--deploy', ...fakeEndpoints(fake, []), '--auth-token-file', tokens],
      { env: SHELL },
    );
    expect(run.stdout).toContain('Serving: alias live → version 2 (was 1; node scripts/deploy.js --rollback 1 goes');
  });
});

describe('shared state, capacity and the domain', () => {
  it('mounts the NAS in its VPC, sets E2B_STATE_DIR under it and keeps internet access', async () => {
    const run = await deploy(['--nas', NAS, ...VPC, '--sls-project', 'mcp-logs', '--sls-logstore', 'function-logs']);
    expect(run.code).toBe(0);
    const fn = fake.functions.get('sandbox-mcp') ?? {};
    expect(fn).toMatchObject({
      internetAccess: true,
      nasConfig: {
        userId: 0,
        groupId: 0,
        mountPoints: [{ serverAddr: NAS, mountDir: '/mnt/state', enableTLS: false }],
      },
      vpcConfig: { vpcId: 'vpc-bp1abc', vSwitchIds: ['vsw-bp1def'], securityGroupId: 'sg-bp1ghi' },
      environmentVariables: expect.objectContaining({ E2B_STATE_DIR: '/mnt/state' }),
    });
    // A later deploy without --nas would drop the mount: refused before any write.
    const before = fake.calls.length;
    const dropped = await deploy(['--logs']);
    expect(dropped.code).toBe(2);
    expect(dropped.json.error?.problems).toEqual(
      expect.arrayContaining([expect.stringContaining('which this deploy would remove')]),
    );
    expect(writes(before)).toEqual([]);
    // --nas auto keeps the function's NAS and VPC.
    const kept = await deploy(['--nas', 'auto', '--logs']);
    expect(kept.code).toBe(0);
    expect(fake.functions.get('sandbox-mcp')).toMatchObject({ nasConfig: fn.nasConfig, vpcConfig: fn.vpcConfig });
  });

  it('keeps instances warm on the alias and reserves concurrency, and removes both when no longer asked', async () => {
    const tokens = tokenFile();
    expect((await deploy(['--min-instances', '2', '--max-concurrency', '40'], tokens)).code).toBe(0);
    expect(fake.scalingConfigs.get('sandbox-mcp/live')).toMatchObject({ minInstances: 2 });
    expect(fake.concurrencyConfigs.get('sandbox-mcp')).toMatchObject({ reservedConcurrency: 40 });
    expect((await deploy([], tokens)).code).toBe(0);
    expect(fake.scalingConfigs.has('sandbox-mcp/live')).toBe(false);
    expect(fake.concurrencyConfigs.has('sandbox-mcp')).toBe(false);
  });

  it('serves the domain with TLS 1.2 and up, with a certificate of the certificate service, no fcapp.run', async () => {
    const pem = makeCertificate(makeTempDir(), 'mcp.example.com');
    fake.certificates.set('12345', {
      name: 'mcp',
      cert: readFileSync(pem.cert, 'utf8'),
      key: readFileSync(pem.key, 'utf8'),
    });
    const run = await deploy([
      '--custom-domain',
      'mcp.example.com',
      '--domain-cert-id',
      '12345',
      '--disable-fcapp-url',
    ]);
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    const domain = fake.domains.get('mcp.example.com') ?? {};
    expect(domain).toMatchObject({
      protocol: 'HTTPS',
      tlsConfig: { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' },
      routeConfig: { routes: [expect.objectContaining({ path: '/*', qualifier: 'live' })] },
    });
    expect(JSON.parse(String(fake.triggers.get('sandbox-mcp/mcp')?.triggerConfig))).toMatchObject({
      disableURLInternet: true,
    });
    expect(run.json.url).toBe('https://mcp.example.com/mcp');
    // The private key went to FC and nowhere else: not in the output.
    const key = readFileSync(pem.key, 'utf8').split('\n')[1] ?? '';
    expect(`${run.stdout}${run.stderr}`).not.toContain(key);
  });

  it('refuses a certificate of the service that does not name the domain, before any write', async () => {
    const pem = makeCertificate(makeTempDir(), 'other.example.com');
    fake.certificates.set('777', {
      name: 'o',
      cert: readFileSync(pem.cert, 'utf8'),
      key: readFileSync(pem.key, 'utf8'),
    });
    const run = await deploy(['--custom-domain', 'mcp.example.com', '--domain-cert-id', '777']);
    expect(run.code).toBe(1);
    expect(run.json.error?.message).toContain(
      'certificate 777 of the certificate service does not name mcp.example.com',
    );
    expect(writes()).toEqual([]);
  });
});

describe('affinity', () => {
  it.each([['SESSION_EXCLUSIVE'], ['REQUEST_EXCLUSIVE']])(
    'refuses a function whose isolation mode was set to %s elsewhere, before any write',
    async (mode) => {
      const tokens = tokenFile();
      expect((await deploy([], tokens)).code).toBe(0);
      const fn = fake.functions.get('sandbox-mcp') ?? {};
      fake.functions.set('sandbox-mcp', { ...fn, instanceIsolationMode: mode });
      const before = fake.calls.length;
      const run = await deploy([], tokens);
      expect(run.code).toBe(2);
      expect(run.json.error?.problems).toEqual([
        expect.stringContaining(`has instanceIsolationMode ${mode} (set outside this CLI)`),
      ]);
      expect(writes(before)).toEqual([]);
      expect(fake.functions.get('sandbox-mcp')?.instanceIsolationMode).toBe(mode);
    },
  );

  it('sends NONE through --deploy with --no-enable-session-affinity, and MCP_STREAMABLE again without it', async () => {
    const tokens = tokenFile();
    expect((await deploy(['--no-enable-session-affinity'], tokens)).code).toBe(0);
    expect(fake.functions.get('sandbox-mcp')).toMatchObject({ sessionAffinity: 'NONE' });
    expect((await deploy([], tokens)).code).toBe(0);
    expect(fake.functions.get('sandbox-mcp')).toMatchObject({ sessionAffinity: 'MCP_STREAMABLE' });
  });

  it.each([
    ['one static token gets the whole instance', 1, 40],
    ['three tokens get a quarter each', 3, 10],
  ])(
    "the function's environment, read by the server, agrees with FC's sessions per instance: %s",
    async (_name, tokens, perCredential) => {
      const file = join(makeTempDir(), 'tokens');
      const list = Array.from({ length: tokens }, (_, i) => `deploy-token-${i}-0123456789abcdefghij`);
      writeFileSync(file, `${list.join('\n')}\n`, { mode: 0o600 });
      expect((await deploy(['--session-concurrency', '40'], file)).code).toBe(0);
      const fn = fake.functions.get('sandbox-mcp') as {
        environmentVariables: Record<string, string>;
        sessionAffinityConfig: string;
      };
      const affinity = JSON.parse(fn.sessionAffinityConfig) as { sessionConcurrencyPerInstance: number };
      // The deploy sets no share of its own: the server's rule decides from the tokens it is given.
      expect(Object.keys(fn.environmentVariables).filter((name) => name.includes('PER_CREDENTIAL'))).toEqual([]);
      const config = loadConfig(fn.environmentVariables);
      expect(config.maxSessions).toBe(affinity.sessionConcurrencyPerInstance);
      expect([config.perCredential.sessions, config.perCredential.sandboxes]).toEqual([perCredential, perCredential]);
    },
  );
});

describe('telemetry', () => {
  it("passes the shell's OTEL_* settings to the function, the endpoint's token in no output or s.yaml", async () => {
    const endpoint = 'http://tracing-analysis-dc-hz-internal.aliyuncs.com/adapt_secret-token-8f2e/api/otlp/traces';
    const run = await deployToFake(fake, ['--auth-token-file', tokenFile(), '--no-logs'], {
      ...SHELL,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    expect(run.code).toBe(0);
    expect(fake.functions.get('sandbox-mcp')?.environmentVariables).toMatchObject({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    expect(`${run.stdout}${run.stderr}`).not.toContain('secret-token-8f2e');
    const sYaml = readFileSync(join(run.outputDir, 's.yaml'), 'utf8');
    expect(sYaml).toContain('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ${env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)}');
    expect(sYaml).not.toContain('secret-token-8f2e');
  });
});
