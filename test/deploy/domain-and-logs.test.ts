/**
 * The custom domain over HTTPS and the function's logs, through the CLI against the signature-checking fake FC API.
 * The certificates are made by openssl for each run; the fake refuses HTTPS without a whole certificate and never
 * gives a private key back, so a deploy that kept a certificate by re-sending it would fail here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { readDomainCertificate } from '../../scripts/domain-certificate';
import { makeCertificate, type Pem } from '../support/certificates';
import { makeTempDir, readYaml, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { CREDENTIALS, deployToFake, E2B_KEY, EMPTY_SHELL, tokenFile } from '../support/deploy-to-fake';
import { type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';

const DOMAIN = 'mcp.example.com';
const SHELL = { ...EMPTY_SHELL, E2B_API_KEY: E2B_KEY };

let pem: Pem;
let renewed: Pem;
let otherDomain: Pem;
beforeAll(() => {
  const dir = makeTempDir('certs-');
  pem = makeCertificate(dir, DOMAIN);
  renewed = makeCertificate(join(makeTempDir('certs-')), DOMAIN);
  otherDomain = makeCertificate(dir, 'other.example.com');
});

let fake: FakeFc;
beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
});
afterEach(() => fake.close());
afterAll(removeTempDirs);

const domainCalls = () => fake.calls.filter((c) => c.action?.includes('CustomDomain'));
const storedDomain = () =>
  fake.domains.get(DOMAIN) as {
    protocol: string;
    certConfig?: { certName: string; certificate: string; privateKey: string };
  };

describe('a custom domain over HTTPS', () => {
  it('is created with the certificate and its key, served over HTTPS only, and printed as https://', async () => {
    const run = await deployToFake(
      fake,
      ['--auth-token-file', tokenFile(), '--custom-domain', DOMAIN, '--domain-cert', pem.cert, '--domain-key', pem.key],
      SHELL,
    );
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    expect(run.json).toMatchObject({ url: `https://${DOMAIN}/mcp`, deployed: { customDomain: 'created' } });
    const body = domainCalls().find((c) => c.action === 'CreateCustomDomain')?.body;
    expect(body).toMatchObject({ domainName: DOMAIN, protocol: 'HTTPS' });
    expect(body?.certConfig).toEqual({
      certName: expect.stringMatching(/^mcp-example-com-[0-9a-f]{12}$/),
      certificate: readFileSync(pem.cert, 'utf8').trim(),
      privateKey: readFileSync(pem.key, 'utf8').trim(),
    });
    expect(run.stdout + run.stderr).not.toContain('PRIVATE KEY');
    expect(unsignedCalls(fake.calls)).toEqual([]);
  });

  it('keeps its certificate when a later deploy names the domain without one', async () => {
    const tokens = tokenFile();
    expect(
      (
        await deployToFake(
          fake,
          ['--auth-token-file', tokens, '--custom-domain', DOMAIN, '--domain-cert', pem.cert, '--domain-key', pem.key],
          SHELL,
        )
      ).code,
    ).toBe(0);
    const before = storedDomain().certConfig;
    fake.calls.length = 0;
    const run = await deployToFake(fake, ['--auth-token-file', tokens, '--custom-domain', DOMAIN], EMPTY_SHELL);
    expect({ code: run.code, error: run.json.error }).toEqual({ code: 0, error: undefined });
    expect(run.json.url).toBe(`https://${DOMAIN}/mcp`);
    const update = domainCalls().find((c) => c.action === 'UpdateCustomDomain')?.body ?? {};
    // The certificate FC holds is not sent (it cannot be read back); TLS 1.2 and up is.
    expect(Object.keys(update)).toEqual(['routeConfig', 'tlsConfig']);
    expect(storedDomain()).toMatchObject({ protocol: 'HTTPS', certConfig: before });
    expect(run.stderr).toContain('HTTPS, its certificate kept');
  });

  it('takes a renewed certificate on update', async () => {
    const tokens = tokenFile();
    expect(
      (
        await deployToFake(
          fake,
          ['--auth-token-file', tokens, '--custom-domain', DOMAIN, '--domain-cert', pem.cert, '--domain-key', pem.key],
          SHELL,
        )
      ).code,
    ).toBe(0);
    const first = storedDomain().certConfig?.certName;
    expect(
      (
        await deployToFake(
          fake,
          [
            '--auth-token-file',
            tokens,
            '--custom-domain',
            DOMAIN,
            '--domain-cert',
            renewed.cert,
            '--domain-key',
            renewed.key,
          ],
          SHELL,
        )
      ).code,
    ).toBe(0);
    expect(storedDomain().certConfig).toMatchObject({
      certificate: readFileSync(renewed.cert, 'utf8').trim(),
      privateKey: readFileSync(renewed.key, 'utf8').trim(),
    });
    expect(storedDomain().certConfig?.certName).not.toBe(first);
  });

  it(
    'refuses a new domain with no certificate unless --domain-http-only says so: one read per resource, nothing ' +
      'written',
    async () => {
      const run = await deployToFake(fake, ['--auth-token-file', tokenFile(), '--custom-domain', DOMAIN], SHELL);
      expect(run.code).toBe(2);
      expect(run.json.error?.message).toContain(
        `--custom-domain ${DOMAIN} is new: pass --domain-cert FILE and --domain-key FILE, or --domain-http-only`,
      );
      expect(fake.calls.map((c) => c.action)).toEqual(['GetFunction', 'GetCustomDomain']);
    },
  );

  it('refuses to keep "HTTPS" on a domain served over HTTP: the operator must choose', async () => {
    const tokens = tokenFile();
    expect(
      (await deployToFake(fake, ['--auth-token-file', tokens, '--custom-domain', DOMAIN, '--domain-http-only'], SHELL))
        .code,
    ).toBe(0);
    const run = await deployToFake(fake, ['--auth-token-file', tokens, '--custom-domain', DOMAIN], SHELL);
    expect(run.code).toBe(2);
    expect(run.json.error?.message).toContain('has no HTTPS certificate');
  });

  it.each([
    [
      "a key that is not the certificate's",
      () => ['--domain-cert', pem.cert, '--domain-key', otherDomain.key],
      'is not the private key of the certificate',
    ],
    [
      'a certificate for another domain',
      () => ['--domain-cert', otherDomain.cert, '--domain-key', otherDomain.key],
      `does not name ${DOMAIN}`,
    ],
    ['a certificate without its key', () => ['--domain-cert', pem.cert], '--domain-cert and --domain-key go together'],
    [
      'a certificate beside --domain-http-only',
      () => ['--domain-cert', pem.cert, '--domain-key', pem.key, '--domain-http-only'],
      '--domain-http-only conflicts',
    ],
  ])('refuses %s before any call', async (_what, args, message) => {
    const run = await deployToFake(
      fake,
      ['--auth-token-file', tokenFile(), '--custom-domain', DOMAIN, ...args()],
      SHELL,
    );
    expect(run.code).toBe(2);
    expect(run.json.error?.message).toContain(message);
    expect(fake.calls).toEqual([]);
  });

  it(
    'writes the certificate into s.yaml as file paths fc3-domain reads when it deploys, ' + 'never the key itself',
    async () => {
      const out = makeTempDir();
      const run = await runDeployCli(
        [
          '--output-dir',
          out,
          '--generate-token',
          '--custom-domain',
          DOMAIN,
          '--domain-cert',
          pem.cert,
          '--domain-key',
          pem.key,
        ],
        { env: { E2B_API_KEY: E2B_KEY } },
      );
      expect(run.code).toBe(0);
      const domain = (
        readYaml(join(out, 's.yaml')).resources as Record<string, { component: string; props: Record<string, unknown> }>
      ).domain;
      expect(domain).toMatchObject({
        component: 'fc3-domain',
        props: {
          domainName: DOMAIN,
          protocol: 'HTTPS',
          certConfig: {
            certName: expect.stringMatching(/^mcp-example-com-/),
            certificate: pem.cert,
            privateKey: pem.key,
          },
        },
      });
      expect(readFileSync(join(out, 's.yaml'), 'utf8')).not.toContain('PRIVATE KEY');
    },
  );

  it(
    'leaves a domain whose certificate only FC holds out of s.yaml, ' + 'so that s deploy cannot switch it to HTTP',
    async () => {
      const tokens = tokenFile();
      expect(
        (
          await deployToFake(
            fake,
            [
              '--auth-token-file',
              tokens,
              '--custom-domain',
              DOMAIN,
              '--domain-cert',
              pem.cert,
              '--domain-key',
              pem.key,
            ],
            SHELL,
          )
        ).code,
      ).toBe(0);
      const run = await deployToFake(fake, ['--auth-token-file', tokens, '--custom-domain', DOMAIN], SHELL);
      expect(run.code).toBe(0);
      expect(readYaml(join(run.outputDir, 's.yaml')).resources).not.toHaveProperty('domain');
    },
  );

  it(
    'without --deploy, asks for a certificate or --domain-http-only (s deploy would otherwise serve the domain ' +
      'over HTTP)',
    async () => {
      const run = await runDeployCli(['--output-dir', makeTempDir(), '--generate-token', '--custom-domain', DOMAIN], {
        env: { E2B_API_KEY: E2B_KEY },
      });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('needs --domain-cert FILE and --domain-key FILE (HTTPS), or --domain-http-only');
    },
  );
});

describe('checking a certificate (in-process, at a chosen date)', () => {
  const read = (now: Date) => readDomainCertificate({ certFile: pem.cert, keyFile: pem.key, domain: DOMAIN, now });
  it('accepts it while valid', () => {
    expect(read(new Date())).toMatchObject({ problems: [], warnings: [] });
  });
  it('warns within 14 days of its end and refuses it after', () => {
    const day = 24 * 60 * 60 * 1000;
    expect(read(new Date(Date.now() + 20 * day)).warnings).toEqual([
      expect.stringContaining(`the certificate of ${DOMAIN} expires on`),
    ]);
    expect(read(new Date(Date.now() + 31 * day)).problems).toEqual([expect.stringContaining('expired on')]);
  });
});

describe('logs', () => {
  it('--sls-project and --sls-logstore send logConfig, with request and instance metrics', async () => {
    const run = await deployToFake(
      fake,
      ['--auth-token-file', tokenFile(), '--sls-project', 'mcp-logs', '--sls-logstore', 'function-logs'],
      SHELL,
    );
    expect(run.code).toBe(0);
    expect(fake.calls.find((c) => c.action === 'CreateFunction')?.body?.logConfig).toEqual({
      project: 'mcp-logs',
      logstore: 'function-logs',
      enableRequestMetrics: true,
      enableInstanceMetrics: true,
      logBeginRule: 'DefaultRegex',
    });
    expect(run.stderr).toContain('Logs: SLS project mcp-logs, logstore function-logs.');
  });

  it('a new function without them is refused before any write; --no-logs deploys one on purpose', async () => {
    const refused = await deployToFake(fake, ['--auth-token-file', tokenFile(), '--logs'], SHELL);
    expect(refused.code).toBe(2);
    expect(refused.json.error?.problems).toEqual([
      expect.stringContaining('function sandbox-mcp is new, and FC would keep none: pass --sls-project P'),
    ]);
    expect(fake.calls.map((c) => c.action)).toEqual(['GetFunction']);

    const run = await deployToFake(fake, ['--auth-token-file', tokenFile(), '--no-logs'], SHELL);
    expect(run.code).toBe(0);
    expect(fake.calls.find((c) => c.action === 'CreateFunction')?.body?.logConfig).toEqual({
      project: '',
      logstore: '',
      enableRequestMetrics: false,
      enableInstanceMetrics: false,
      logBeginRule: 'None',
    });
    expect(run.stderr).toContain('warning: --no-logs: FC keeps no logs of this function');
    // No logs and no VPC: the service-linked role is not needed, and not touched.
    expect(fake.calls.filter((c) => c.path === '/')).toEqual([]);
  });

  it('creates the service-linked role logs need when the account lacks it, and only then', async () => {
    const args = ['--auth-token-file', tokenFile(), '--sls-project', 'mcp-logs', '--sls-logstore', 'function-logs'];
    expect((await deployToFake(fake, args, SHELL)).code).toBe(0);
    const roleCalls = () => fake.calls.filter((c) => c.path === '/').map((c) => c.action);
    expect(roleCalls()).toEqual(['CheckServiceLinkedRoleExistence', 'CreateServiceLinkedRole']);
    expect(fake.calls.findIndex((c) => c.action === 'CreateServiceLinkedRole')).toBeLessThan(
      fake.calls.findIndex((c) => c.action === 'CreateFunction'),
    );
    expect((await deployToFake(fake, args, SHELL)).code).toBe(0);
    expect(roleCalls()).toEqual([
      'CheckServiceLinkedRoleExistence',
      'CreateServiceLinkedRole',
      'CheckServiceLinkedRoleExistence',
    ]);
    expect(unsignedCalls(fake.calls)).toEqual([]);
  });

  it('stops before changing anything when the role cannot be made, and says how to make it', async () => {
    fake.fail('CreateServiceLinkedRole', { status: 403, code: 'NoPermission', message: 'not allowed' });
    const run = await deployToFake(
      fake,
      ['--auth-token-file', tokenFile(), '--sls-project', 'mcp-logs', '--sls-logstore', 'function-logs'],
      SHELL,
    );
    expect(run.code).toBe(1);
    expect(run.json.error).toMatchObject({ step: 'CreateServiceLinkedRole', code: 'NoPermission' });
    expect(run.json.error?.hint).toContain(
      'aliyun resourcemanager CreateServiceLinkedRole --ServiceName fc.aliyuncs.com',
    );
    expect(fake.calls.map((c) => c.action)).not.toContain('CreateFunction');
  });

  it('refuses one without the other, and names SLS would refuse, before any call', async () => {
    const half = await deployToFake(fake, ['--auth-token-file', tokenFile(), '--sls-project', 'mcp-logs'], SHELL);
    expect(half.json.error?.message).toContain('--sls-project and --sls-logstore go together');
    const bad = await deployToFake(
      fake,
      ['--auth-token-file', tokenFile(), '--sls-project', 'MCP_Logs', '--sls-logstore', 'x'],
      SHELL,
    );
    expect(bad.json.error?.message).toContain('--sls-project "MCP_Logs" is not an SLS project name');
    expect(bad.json.error?.message).toContain('--sls-logstore "x" is not an SLS logstore name');
    expect(fake.calls).toEqual([]);
  });
});
