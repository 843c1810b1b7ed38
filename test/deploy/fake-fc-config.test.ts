/**
 * What the fake FC API keeps and refuses in a function's configuration, a trigger and a custom domain, driven through
 * the FC 3.0 SDK as the deploy CLI calls it; every request signed, a wrong secret refused.
 */
import * as $Fc from '@alicloud/fc20230330';

import { type Credentials, type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';
import { fcClient } from '../support/fake-fc-clients';

const CREDENTIALS: Credentials = { accessKeyId: 'LTAI5tTestKeyId0001', accessKeySecret: 'test-secret-9f8e7d6c5b4a' };
const VPC = { vpcId: 'vpc-1', vSwitchIds: ['vsw-1'], securityGroupId: 'sg-1' };
const NAS_MOUNT = { serverAddr: '0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com:/state', mountDir: '/mnt/state' };

let fake: FakeFc;
let fc: ReturnType<typeof fcClient>;

beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS);
  fc = fcClient(fake, CREDENTIALS);
});

afterEach(async () => {
  expect(unsignedCalls(fake.calls)).toEqual([]);
  await fake.close();
});

const createFunction = (name: string, config: Record<string, unknown> = {}) =>
  fc.createFunction(
    new $Fc.CreateFunctionRequest({
      body: new $Fc.CreateFunctionInput({ functionName: name, runtime: 'custom.debian12', handler: 'h', ...config }),
    }),
  );

const updateFunction = (name: string, config: Record<string, unknown>) =>
  fc.updateFunction(name, new $Fc.UpdateFunctionRequest({ body: new $Fc.UpdateFunctionInput(config) }));

/** An SDK model as the plain object it was parsed from. */
const toPlain = (model: unknown): unknown => JSON.parse(JSON.stringify(model));

const refusal = (code: string, message?: string) => ({
  statusCode: 400,
  code,
  ...(message !== undefined && { message: expect.stringContaining(message) }),
});

describe('function fields', () => {
  it('keeps and returns every field sent', async () => {
    fake.serviceLinkedRole = true;
    const config = {
      vpcConfig: VPC,
      nasConfig: { userId: 10, groupId: 10, mountPoints: [{ ...NAS_MOUNT, enableTLS: false }] },
      ossMountConfig: { mountPoints: [{ bucketName: 'b', bucketPath: '/', mountDir: '/mnt/oss', readOnly: true }] },
      layers: ['acs:fc:cn-hangzhou:123:layers/l/versions/1'],
      tracingConfig: { type: 'Jaeger', params: { endpoint: 'http://tracing' } },
      instanceIsolationMode: 'SESSION_EXCLUSIVE',
      sessionAffinity: 'MCP_STREAMABLE',
      role: 'acs:ram::123:role/fc',
      internetAccess: false,
      logConfig: { project: 'p', logstore: 'l', enableRequestMetrics: true, logBeginRule: 'DefaultRegex' },
    };
    await createFunction('f', config);
    // FC answers layers as FunctionLayer objects: the SDK would not take the ARNs back as they were sent.
    const kept = { ...config, layers: [{ arn: config.layers[0] }] };
    expect(fake.functions.get('f')).toMatchObject(kept);
    expect(toPlain((await fc.getFunction('f', new $Fc.GetFunctionRequest({}))).body)).toMatchObject(kept);
  });

  it('takes the empty forms fc3 sends for no NAS, no VPC and no logs, without the service-linked role', async () => {
    await createFunction('f', {
      nasConfig: { userId: 0, groupId: 0, mountPoints: [] },
      vpcConfig: { vpcId: '', vSwitchIds: [], securityGroupId: '' },
      logConfig: { project: '', logstore: '' },
      instanceIsolationMode: 'SHARE',
    });
    expect(fake.functions.has('f')).toBe(true);
  });

  it('mounts NAS only inside a whole VPC, at a directory of its own under /home, /mnt, /tmp or /data', async () => {
    fake.serviceLinkedRole = true;
    const nas = (mountPoints: unknown[]) => ({ nasConfig: { mountPoints } });
    await expect(createFunction('f', nas([NAS_MOUNT]))).rejects.toMatchObject(refusal('InvalidArgument', 'VPC'));
    await expect(
      createFunction('f', { ...nas([NAS_MOUNT]), vpcConfig: { ...VPC, vSwitchIds: [] } }),
    ).rejects.toMatchObject(refusal('InvalidArgument', 'vpcId, vSwitchIds and securityGroupId'));
    for (const mountDir of ['/', '/mnt', '/code/data', '/opt/x', 'mnt/x', '/mnt/../etc'])
      await expect(createFunction('f', { ...nas([{ ...NAS_MOUNT, mountDir }]), vpcConfig: VPC })).rejects.toMatchObject(
        refusal('InvalidArgument', 'mountDir'),
      );
    await expect(
      createFunction('f', { ...nas([{ ...NAS_MOUNT, serverAddr: 'nas.example.com/state' }]), vpcConfig: VPC }),
    ).rejects.toMatchObject(refusal('InvalidArgument', 'serverAddr'));
    await expect(
      createFunction('f', { ...nas([NAS_MOUNT, { ...NAS_MOUNT, mountDir: '/mnt/state/sub' }]), vpcConfig: VPC }),
    ).rejects.toMatchObject(refusal('InvalidArgument', 'overlaps'));
    await createFunction('f', { ...nas([NAS_MOUNT, { ...NAS_MOUNT, mountDir: '/data/x/' }]), vpcConfig: VPC });
    // An update is checked as the whole function it makes: dropping the VPC under a mount is refused.
    await expect(
      updateFunction('f', { vpcConfig: { vpcId: '', vSwitchIds: [], securityGroupId: '' } }),
    ).rejects.toMatchObject(refusal('InvalidArgument', 'VPC'));
    expect(fake.functions.get('f')?.vpcConfig).toEqual(VPC);
  });

  it('refuses an isolation mode FC does not have', async () => {
    await expect(createFunction('f', { instanceIsolationMode: 'PRIVATE' })).rejects.toMatchObject(
      refusal('InvalidArgument', 'instanceIsolationMode'),
    );
    await createFunction('f', { instanceIsolationMode: 'REQUEST_EXCLUSIVE' });
  });

  it('needs AliyunServiceRoleForFC for a VPC or logs when the function has no role', async () => {
    await expect(createFunction('f', { vpcConfig: VPC })).rejects.toMatchObject(
      refusal('EntityNotExist.Role', 'AliyunServiceRoleForFC'),
    );
    await expect(createFunction('f', { logConfig: { project: 'p', logstore: 'l' } })).rejects.toMatchObject(
      refusal('EntityNotExist.Role', 'acs:ram::1234567890123456:role/aliyunserviceroleforfc'),
    );
    await createFunction('with-role', { vpcConfig: VPC, role: 'acs:ram::1234567890123456:role/fc' });
    await createFunction('f');
    await expect(updateFunction('f', { logConfig: { project: 'p', logstore: 'l' } })).rejects.toMatchObject(
      refusal('EntityNotExist.Role'),
    );
    fake.serviceLinkedRole = true;
    await updateFunction('f', { logConfig: { project: 'p', logstore: 'l' } });
    expect(fake.functions.get('f')?.logConfig).toEqual({ project: 'p', logstore: 'l' });
  });
});

describe('triggers', () => {
  const httpConfig = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ authType: 'anonymous', methods: ['GET', 'POST'], ...extra });
  const createTrigger = (input: Record<string, unknown>) =>
    fc.createTrigger(
      'f',
      new $Fc.CreateTriggerRequest({
        body: new $Fc.CreateTriggerInput({
          triggerName: 't',
          triggerType: 'http',
          triggerConfig: httpConfig(),
          ...input,
        }),
      }),
    );
  const updateTrigger = (input: Record<string, unknown>) =>
    fc.updateTrigger('f', 't', new $Fc.UpdateTriggerRequest({ body: new $Fc.UpdateTriggerInput(input) }));

  beforeEach(async () => {
    await createFunction('f');
    const version = new $Fc.PublishFunctionVersionRequest({ body: new $Fc.PublishVersionInput({}) });
    await fc.publishFunctionVersion('f', version);
    await fc.createAlias(
      'f',
      new $Fc.CreateAliasRequest({ body: new $Fc.CreateAliasInput({ aliasName: 'prod', versionId: '1' }) }),
    );
  });

  it('invokes LATEST unless told, an existing alias or version when told, and nothing else', async () => {
    expect((await createTrigger({})).body?.qualifier).toBe('LATEST');
    expect((await updateTrigger({ qualifier: 'prod' })).body?.qualifier).toBe('prod');
    expect((await updateTrigger({ qualifier: '1' })).body?.qualifier).toBe('1');
    await expect(updateTrigger({ qualifier: 'canary' })).rejects.toMatchObject({
      statusCode: 404,
      code: 'AliasNotFound',
    });
    await expect(updateTrigger({ qualifier: '2' })).rejects.toMatchObject({ statusCode: 404, code: 'VersionNotFound' });
    await expect(createTrigger({ triggerName: 'u', qualifier: 'canary' })).rejects.toMatchObject({
      code: 'AliasNotFound',
    });
    expect(fake.triggers.get('f/t')?.qualifier).toBe('1');
  });

  it('keeps triggerConfig as the JSON string sent, and refuses one that is not JSON', async () => {
    const sent = httpConfig({ disableURLInternet: false });
    await createTrigger({ triggerConfig: sent });
    expect((await fc.getTrigger('f', 't')).body?.triggerConfig).toBe(sent);
    await expect(updateTrigger({ triggerConfig: '{authType:' })).rejects.toMatchObject(refusal('InvalidArgument'));
  });

  it('answers an HTTP trigger with its URLs, the public one left out with disableURLInternet', async () => {
    const open = (await createTrigger({})).body?.httpTrigger;
    expect(open).toEqual({
      urlInternet: expect.stringMatching(/^https:/),
      urlIntranet: expect.stringMatching(/^https:/),
    });
    await updateTrigger({ triggerConfig: httpConfig({ disableURLInternet: true }) });
    const closed = (await fc.getTrigger('f', 't')).body;
    expect(JSON.parse(String(closed?.triggerConfig)).disableURLInternet).toBe(true);
    expect(closed?.httpTrigger).toEqual({ urlIntranet: open?.urlIntranet });
  });
});

describe('custom domains', () => {
  const TLS = { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3', cipherSuites: ['TLS_AES_128_GCM_SHA256'] };
  const route = (qualifier?: string) => ({
    routes: [{ path: '/*', functionName: 'f', ...(qualifier !== undefined && { qualifier }) }],
  });
  const createDomain = (input: Record<string, unknown>) =>
    fc.createCustomDomain(
      new $Fc.CreateCustomDomainRequest({
        body: new $Fc.CreateCustomDomainInput({ domainName: 'mcp.example.com', protocol: 'HTTP', ...input }),
      }),
    );
  const updateDomain = (input: Record<string, unknown>) =>
    fc.updateCustomDomain(
      'mcp.example.com',
      new $Fc.UpdateCustomDomainRequest({ body: new $Fc.UpdateCustomDomainInput(input) }),
    );

  beforeEach(async () => {
    await createFunction('f');
    await fc.publishFunctionVersion(
      'f',
      new $Fc.PublishFunctionVersionRequest({ body: new $Fc.PublishVersionInput({}) }),
    );
  });

  it('stores and returns tlsConfig, and refuses one outside fc3-domain rules', async () => {
    await createDomain({ tlsConfig: TLS, routeConfig: route() });
    expect((await fc.getCustomDomain('mcp.example.com')).body?.tlsConfig).toEqual(TLS);
    for (const tlsConfig of [
      { ...TLS, minVersion: 'TLSv1.4' },
      { ...TLS, maxVersion: 'SSLv3' },
      { ...TLS, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.2' },
      { ...TLS, cipherSuites: [] },
      { ...TLS, cipherSuites: [7] },
    ])
      await expect(updateDomain({ tlsConfig })).rejects.toMatchObject(refusal('InvalidArgument', 'tlsConfig'));
    await updateDomain({ tlsConfig: { minVersion: 'TLSv1.0', cipherSuites: ['ECDHE-RSA-AES128-GCM-SHA256'] } });
    expect(fake.domains.get('mcp.example.com')?.tlsConfig).toMatchObject({ minVersion: 'TLSv1.0' });
  });

  it("routes to LATEST, an existing version or alias of the route's function, and refuses others", async () => {
    await createDomain({ routeConfig: route('1') });
    await expect(updateDomain({ routeConfig: route('prod') })).rejects.toMatchObject({
      statusCode: 404,
      code: 'AliasNotFound',
    });
    await expect(updateDomain({ routeConfig: route('3') })).rejects.toMatchObject({ code: 'VersionNotFound' });
    await updateDomain({ routeConfig: route('LATEST') });
    expect(fake.domains.get('mcp.example.com')?.routeConfig).toEqual(route('LATEST'));
  });
});

it('refuses a request signed with a wrong secret, before it touches anything', async () => {
  const wrong = fcClient(fake, { ...CREDENTIALS, accessKeySecret: 'not-the-secret' });
  await expect(
    wrong.createFunction(
      new $Fc.CreateFunctionRequest({ body: new $Fc.CreateFunctionInput({ functionName: 'f', handler: 'h' }) }),
    ),
  ).rejects.toMatchObject({ statusCode: 403, code: 'SignatureDoesNotMatch' });
  expect(fake.functions.size).toBe(0);
  expect(unsignedCalls(fake.calls.splice(-1))).toEqual([{ action: 'CreateFunction', signature: expect.anything() }]);
});
