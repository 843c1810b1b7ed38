/**
 * The RPC actions the fake FC API serves at `/` (Resource Manager's service-linked role, Certificate Management
 * Service's certificate detail), called through openapi-core's callApi exactly as the deploy CLI calls them: what
 * each answers and refuses, scripted failures, and the signature checked as for FC's own routes.
 */
import * as $Fc from '@alicloud/fc20230330';

import { type Credentials, type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';
import { fcClient, rpcCall } from '../support/fake-fc-clients';

const CREDENTIALS: Credentials = { accessKeyId: 'LTAI5tTestKeyId0001', accessKeySecret: 'test-secret-9f8e7d6c5b4a' };
const RM = '2020-03-31';
const CAS = '2020-04-07';
const FC_SERVICE = { ServiceName: 'fc.aliyuncs.com' };

let fake: FakeFc;

beforeEach(async () => {
  fake = await startFakeFc(CREDENTIALS, '5123456789012345');
});

afterEach(async () => {
  expect(unsignedCalls(fake.calls)).toEqual([]);
  await fake.close();
});

const call = (action: string, version: string, query: Record<string, string>) =>
  rpcCall(fake, CREDENTIALS, action, version, query);

describe("FC's service-linked role (Resource Manager)", () => {
  it('says the role is missing, creates it, then says it exists', async () => {
    expect(await call('CheckServiceLinkedRoleExistence', RM, FC_SERVICE)).toEqual({
      RequestId: expect.any(String),
      Exists: false,
    });
    const created = await call('CreateServiceLinkedRole', RM, FC_SERVICE);
    expect(created).toEqual({
      RequestId: expect.any(String),
      Role: expect.objectContaining({
        RoleName: 'AliyunServiceRoleForFC',
        Arn: 'acs:ram::5123456789012345:role/aliyunserviceroleforfc',
        IsServiceLinkedRole: true,
        CreateDate: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      }),
    });
    expect(JSON.parse(String((created.Role as Record<string, unknown>).AssumeRolePolicyDocument))).toMatchObject({
      Statement: [{ Principal: { Service: ['fc.aliyuncs.com'] } }],
    });
    expect(fake.serviceLinkedRole).toBe(true);
    // fc3 checks with a GET; the fake serves either method.
    expect((await rpcCall(fake, CREDENTIALS, 'CheckServiceLinkedRoleExistence', RM, FC_SERVICE, 'GET')).Exists).toBe(
      true,
    );
    expect(fake.calls.map((c) => [c.method, c.path, c.action, c.query])).toEqual([
      ['POST', '/', 'CheckServiceLinkedRoleExistence', FC_SERVICE],
      ['POST', '/', 'CreateServiceLinkedRole', FC_SERVICE],
      ['GET', '/', 'CheckServiceLinkedRoleExistence', FC_SERVICE],
    ]);
  });

  it('lets FC take a VPC once the role exists', async () => {
    const fc = fcClient(fake, CREDENTIALS);
    const vpcFunction = () =>
      fc.createFunction(
        new $Fc.CreateFunctionRequest({
          body: new $Fc.CreateFunctionInput({
            functionName: 'f',
            handler: 'h',
            vpcConfig: { vpcId: 'vpc-1', vSwitchIds: ['vsw-1'], securityGroupId: 'sg-1' },
          }),
        }),
      );
    await expect(vpcFunction()).rejects.toMatchObject({ statusCode: 400, code: 'EntityNotExist.Role' });
    await call('CreateServiceLinkedRole', RM, FC_SERVICE);
    await vpcFunction();
    expect(fake.functions.has('f')).toBe(true);
  });

  it('refuses a second create, a missing or foreign ServiceName, and plays scripted failures', async () => {
    fake.serviceLinkedRole = true;
    await expect(call('CreateServiceLinkedRole', RM, FC_SERVICE)).rejects.toMatchObject({
      statusCode: 409,
      code: 'EntityAlreadyExists.Role',
    });
    await expect(call('CheckServiceLinkedRoleExistence', RM, {})).rejects.toMatchObject({ code: 'MissingParameter' });
    await expect(
      call('CheckServiceLinkedRoleExistence', RM, { ServiceName: 'polardb.aliyuncs.com' }),
    ).rejects.toMatchObject({ statusCode: 400, code: 'InvalidParameter.ServiceName' });
    fake.serviceLinkedRole = false;
    fake.fail('CreateServiceLinkedRole', { status: 403, code: 'NoPermission', message: 'not allowed' });
    await expect(call('CreateServiceLinkedRole', RM, FC_SERVICE)).rejects.toMatchObject({
      statusCode: 403,
      code: 'NoPermission',
    });
    expect(fake.serviceLinkedRole).toBe(false);
    await call('CreateServiceLinkedRole', RM, FC_SERVICE);
    expect(fake.calls.filter((c) => c.action === 'CreateServiceLinkedRole').map((c) => c.status)).toEqual([
      409, 403, 200,
    ]);
  });
});

describe('certificates (Certificate Management Service)', () => {
  const PEM = { name: 'mcp-cert', cert: '-----BEGIN CERTIFICATE-----\nMII…\n', key: '-----BEGIN PRIVATE KEY-----\n' };

  it("gives a certificate's name, PEM and key by its id; CertFilter=true leaves the PEM out", async () => {
    fake.certificates.set('14562873', PEM);
    expect(await call('GetUserCertificateDetail', CAS, { CertId: '14562873' })).toMatchObject({
      RequestId: expect.any(String),
      Id: 14562873,
      Name: 'mcp-cert',
      Cert: PEM.cert,
      Key: PEM.key,
    });
    const filtered = await call('GetUserCertificateDetail', CAS, { CertId: '14562873', CertFilter: 'true' });
    expect([filtered.Name, 'Cert' in filtered, 'Key' in filtered]).toEqual(['mcp-cert', false, false]);
  });

  it('refuses an unknown id', async () => {
    await expect(call('GetUserCertificateDetail', CAS, { CertId: '1' })).rejects.toMatchObject({
      statusCode: 404,
      code: 'CertificateNotFound',
    });
    await expect(call('GetUserCertificateDetail', CAS, {})).rejects.toMatchObject({ code: 'MissingParameter' });
  });
});

describe('the RPC endpoint', () => {
  it('refuses an unknown action, and a known one of another version', async () => {
    await expect(call('DescribeRegions', RM, {})).rejects.toMatchObject({ statusCode: 400, code: 'InvalidAction' });
    await expect(call('GetUserCertificateDetail', '2018-07-13', { CertId: '1' })).rejects.toMatchObject({
      statusCode: 400,
      code: 'InvalidVersion',
    });
    await expect(call('CreateServiceLinkedRole', CAS, FC_SERVICE)).rejects.toMatchObject({ code: 'InvalidVersion' });
    expect(fake.serviceLinkedRole).toBe(false);
    expect(fake.calls.map((c) => c.action)).toEqual([undefined, 'GetUserCertificateDetail', 'CreateServiceLinkedRole']);
  });

  it('refuses a request signed with a wrong secret, before it touches anything', async () => {
    const wrong = { ...CREDENTIALS, accessKeySecret: 'not-the-secret' };
    await expect(rpcCall(fake, wrong, 'CreateServiceLinkedRole', RM, FC_SERVICE)).rejects.toMatchObject({
      statusCode: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect(fake.serviceLinkedRole).toBe(false);
    expect(unsignedCalls(fake.calls.splice(-1))).toEqual([
      { action: 'CreateServiceLinkedRole', signature: expect.objectContaining({ ok: false }) },
    ]);
  });

  it('checks a security token like any signed header', async () => {
    await fake.close();
    const sts = { ...CREDENTIALS, securityToken: 'sts-token-1' };
    fake = await startFakeFc(sts);
    expect((await rpcCall(fake, sts, 'CheckServiceLinkedRoleExistence', RM, FC_SERVICE)).Exists).toBe(false);
    await expect(
      rpcCall(fake, { ...sts, securityToken: 'another' }, 'CheckServiceLinkedRoleExistence', RM, FC_SERVICE),
    ).rejects.toMatchObject({ statusCode: 403 });
    expect(unsignedCalls(fake.calls.splice(-1))).toEqual([
      { action: 'CheckServiceLinkedRoleExistence', signature: { ok: false, reason: expect.stringContaining('token') } },
    ]);
  });
});
