/**
 * The fake FC API's versions, aliases and capacity settings, driven through the FC 3.0 SDK as the deploy CLI calls
 * them: what each answers, what each refuses, and that every request was signed (a wrong secret is refused).
 */
import * as $Fc from '@alicloud/fc20230330';

import { type Credentials, type FakeFc, startFakeFc, unsignedCalls } from '../support/fake-fc';
import { fcClient } from '../support/fake-fc-clients';

const CREDENTIALS: Credentials = { accessKeyId: 'LTAI5tTestKeyId0001', accessKeySecret: 'test-secret-9f8e7d6c5b4a' };

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

async function createFunction(name: string, config: Record<string, unknown> = {}): Promise<void> {
  const input = new $Fc.CreateFunctionInput({
    functionName: name,
    runtime: 'custom.debian12',
    handler: 'h',
    ...config,
  });
  await fc.createFunction(new $Fc.CreateFunctionRequest({ body: input }));
}

const publish = (name: string, description = '') =>
  fc.publishFunctionVersion(
    name,
    new $Fc.PublishFunctionVersionRequest({ body: new $Fc.PublishVersionInput({ description }) }),
  );

const createAlias = (name: string, input: Record<string, unknown>) =>
  fc.createAlias(name, new $Fc.CreateAliasRequest({ body: new $Fc.CreateAliasInput(input) }));

const updateAlias = (name: string, alias: string, input: Record<string, unknown>) =>
  fc.updateAlias(name, alias, new $Fc.UpdateAliasRequest({ body: new $Fc.UpdateAliasInput(input) }));

const actions = (): Array<string | undefined> => fake.calls.map((c) => c.action);

describe('versions', () => {
  it('publishes "1", "2", … per function, each with the configuration it had then', async () => {
    await createFunction('f', { memorySize: 512 });
    const first = await publish('f', 'first');
    await fc.updateFunction(
      'f',
      new $Fc.UpdateFunctionRequest({ body: new $Fc.UpdateFunctionInput({ memorySize: 1024 }) }),
    );
    const second = await publish('f');
    expect(first.body).toEqual({
      versionId: '1',
      description: 'first',
      createdTime: expect.any(String),
      lastModifiedTime: expect.any(String),
    });
    expect(second.body?.versionId).toBe('2');
    expect(fake.versions.get('f')?.map((v) => [v.versionId, v.config.memorySize])).toEqual([
      ['1', 512],
      ['2', 1024],
    ]);
    // GetFunction with a qualifier answers that version's configuration.
    const old = await fc.getFunction('f', new $Fc.GetFunctionRequest({ qualifier: '1' }));
    expect(old.body?.memorySize).toBe(512);
  });

  it('lists newest first by default, FORWARD oldest first, a page at a time', async () => {
    await createFunction('f');
    for (const _ of [1, 2, 3]) await publish('f');
    const list = (request: Record<string, unknown>) =>
      fc.listFunctionVersions('f', new $Fc.ListFunctionVersionsRequest(request)).then((r) => r.body);
    const newest = await list({});
    expect(newest?.direction).toBe('BACKWARD');
    expect(newest?.versions?.map((v) => v.versionId)).toEqual(['3', '2', '1']);
    expect(newest?.nextToken).toBeUndefined();
    const page = await list({ direction: 'FORWARD', limit: 2 });
    expect([page?.versions?.map((v) => v.versionId), page?.nextToken]).toEqual([['1', '2'], '3']);
    const rest = await list({ direction: 'FORWARD', limit: 2, nextToken: page?.nextToken });
    expect(rest?.versions?.map((v) => v.versionId)).toEqual(['3']);
    expect(fake.calls.at(-1)?.query).toEqual({ direction: 'FORWARD', limit: '2', nextToken: '3' });
    await expect(list({ direction: 'SIDEWAYS' })).rejects.toMatchObject({ statusCode: 400, code: 'InvalidArgument' });
  });

  it('refuses an unknown function', async () => {
    await expect(publish('missing')).rejects.toMatchObject({ statusCode: 404, code: 'FunctionNotFound' });
    await expect(fc.listFunctionVersions('missing', new $Fc.ListFunctionVersionsRequest({}))).rejects.toMatchObject({
      statusCode: 404,
      code: 'FunctionNotFound',
    });
  });
});

describe('aliases', () => {
  beforeEach(async () => {
    await createFunction('f');
    await publish('f');
    await publish('f');
  });

  it('creates, reads, updates and lists an alias, one call each', async () => {
    const created = await createAlias('f', { aliasName: 'prod', versionId: '1', description: 'live' });
    expect(created.body).toEqual({
      aliasName: 'prod',
      versionId: '1',
      description: 'live',
      additionalVersionWeight: {},
      createdTime: expect.any(String),
      lastModifiedTime: expect.any(String),
    });
    const updated = await updateAlias('f', 'prod', { versionId: '2', additionalVersionWeight: { '1': 0.1 } });
    expect(updated.body).toMatchObject({ aliasName: 'prod', versionId: '2', description: 'live' });
    expect(updated.body?.additionalVersionWeight).toEqual({ '1': 0.1 });
    expect((await fc.getAlias('f', 'prod')).body?.versionId).toBe('2');
    await createAlias('f', { aliasName: 'staging', versionId: '2' });
    const listed = await fc.listAliases('f', new $Fc.ListAliasesRequest({}));
    expect(listed.body?.aliases?.map((a) => a.aliasName)).toEqual(['prod', 'staging']);
    expect(actions().filter((a) => a === 'UpdateAlias')).toHaveLength(1);
    expect(actions().slice(3)).toEqual(['CreateAlias', 'UpdateAlias', 'GetAlias', 'CreateAlias', 'ListAliases']);
  });

  it('refuses a second alias of a name, a missing version, and reads of an unknown alias', async () => {
    await createAlias('f', { aliasName: 'prod', versionId: '1' });
    await expect(createAlias('f', { aliasName: 'prod', versionId: '2' })).rejects.toMatchObject({
      statusCode: 409,
      code: 'AliasAlreadyExists',
    });
    await expect(createAlias('f', { aliasName: 'next', versionId: '9' })).rejects.toMatchObject({
      statusCode: 404,
      code: 'VersionNotFound',
    });
    await expect(updateAlias('f', 'prod', { versionId: '9' })).rejects.toMatchObject({ code: 'VersionNotFound' });
    await expect(
      updateAlias('f', 'prod', { versionId: '2', additionalVersionWeight: { '1': 1.5 } }),
    ).rejects.toMatchObject({ statusCode: 400, code: 'InvalidArgument' });
    await expect(fc.getAlias('f', 'nope')).rejects.toMatchObject({ statusCode: 404, code: 'AliasNotFound' });
    await expect(updateAlias('f', 'nope', { versionId: '1' })).rejects.toMatchObject({ code: 'AliasNotFound' });
    await expect(createAlias('f', { aliasName: 'LATEST', versionId: '1' })).rejects.toMatchObject({
      code: 'InvalidArgument',
    });
    expect(fake.aliases.get('f/prod')?.versionId).toBe('1');
  });
});

describe('scaling, provision and concurrency', () => {
  const putScaling = (qualifier: string, input: Record<string, unknown>) =>
    fc.putScalingConfig(
      'f',
      new $Fc.PutScalingConfigRequest({ qualifier, body: new $Fc.PutScalingConfigInput(input) }),
    );
  const putProvision = (qualifier: string, input: Record<string, unknown>) =>
    fc.putProvisionConfig(
      'f',
      new $Fc.PutProvisionConfigRequest({ qualifier, body: new $Fc.PutProvisionConfigInput(input) }),
    );
  const putConcurrency = (reservedConcurrency: unknown) =>
    fc.putConcurrencyConfig(
      'f',
      new $Fc.PutConcurrencyConfigRequest({
        body: new $Fc.PutConcurrencyInput({ reservedConcurrency: reservedConcurrency as number }),
      }),
    );

  beforeEach(async () => {
    await createFunction('f');
    await publish('f');
    await createAlias('f', { aliasName: 'prod', versionId: '1' });
  });

  it('puts, reads and deletes a scaling config per qualifier (?qualifier=)', async () => {
    const put = await putScaling('prod', { minInstances: 1 });
    expect(put.body).toMatchObject({ minInstances: 1, functionArn: expect.stringMatching(/functions\/f\/prod$/) });
    expect(fake.calls.at(-1)).toMatchObject({ method: 'PUT', path: '/2023-03-30/functions/f/scaling-config' });
    expect(fake.calls.at(-1)?.query).toEqual({ qualifier: 'prod' });
    await putScaling('LATEST', { minInstances: 0 });
    const read = await fc.getScalingConfig('f', new $Fc.GetScalingConfigRequest({ qualifier: 'prod' }));
    expect(read.body?.minInstances).toBe(1);
    const deleted = await fc.deleteScalingConfig('f', new $Fc.DeleteScalingConfigRequest({ qualifier: 'prod' }));
    expect(deleted.statusCode).toBe(204);
    expect([...fake.scalingConfigs.keys()]).toEqual(['f/LATEST']);
    await expect(
      fc.getScalingConfig('f', new $Fc.GetScalingConfigRequest({ qualifier: 'prod' })),
    ).rejects.toMatchObject({ statusCode: 404, code: 'ScalingConfigNotFound' });
  });

  it('refuses a qualifier that names nothing, and a bad instance count', async () => {
    await expect(putScaling('canary', { minInstances: 1 })).rejects.toMatchObject({
      statusCode: 404,
      code: 'AliasNotFound',
    });
    await expect(putScaling('7', { minInstances: 1 })).rejects.toMatchObject({ code: 'VersionNotFound' });
    await expect(putScaling('prod', { minInstances: -1 })).rejects.toMatchObject({
      statusCode: 400,
      code: 'InvalidArgument',
    });
    await expect(putProvision('prod', { defaultTarget: 1.5 })).rejects.toMatchObject({ code: 'InvalidArgument' });
  });

  it('keeps either a scaling config or a provision config on a qualifier, not both', async () => {
    await putProvision('prod', { defaultTarget: 2 });
    expect(fake.provisionConfigs.get('f/prod')).toMatchObject({ defaultTarget: 2, target: 2 });
    await expect(putScaling('prod', { minInstances: 1 })).rejects.toMatchObject({
      statusCode: 400,
      code: 'ProvisionConfigExist',
    });
    await fc.deleteProvisionConfig('f', new $Fc.DeleteProvisionConfigRequest({ qualifier: 'prod' }));
    await putScaling('prod', { minInstances: 1 });
    await expect(putProvision('prod', { defaultTarget: 2 })).rejects.toMatchObject({ code: 'ScalingConfigExists' });
    const read = await fc
      .getProvisionConfig('f', new $Fc.GetProvisionConfigRequest({ qualifier: 'LATEST' }))
      .catch((err: unknown) => err);
    expect(read).toMatchObject({ statusCode: 404, code: 'ProvisionConfigNotFound' });
  });

  it('puts, reads and deletes the reserved concurrency, a non-negative integer', async () => {
    expect((await putConcurrency(5)).body).toEqual({
      functionArn: 'acs:fc:cn:1234567890123456:functions/f',
      reservedConcurrency: 5,
    });
    expect((await fc.getConcurrencyConfig('f')).body?.reservedConcurrency).toBe(5);
    expect((await fc.deleteConcurrencyConfig('f')).statusCode).toBe(204);
    await expect(fc.getConcurrencyConfig('f')).rejects.toMatchObject({ code: 'ConcurrencyConfigNotFound' });
    await expect(fc.deleteConcurrencyConfig('f')).rejects.toMatchObject({ statusCode: 404 });
    for (const bad of [-1, 2.5])
      await expect(putConcurrency(bad)).rejects.toMatchObject({ statusCode: 400, code: 'InvalidArgument' });
    await expect(fc.getConcurrencyConfig('missing')).rejects.toMatchObject({ code: 'FunctionNotFound' });
  });
});

it('refuses a request signed with a wrong secret, before it touches anything', async () => {
  await createFunction('f');
  const wrong = fcClient(fake, { ...CREDENTIALS, accessKeySecret: 'not-the-secret' });
  await expect(wrong.publishFunctionVersion('f', new $Fc.PublishFunctionVersionRequest({}))).rejects.toMatchObject({
    statusCode: 403,
    code: 'SignatureDoesNotMatch',
  });
  expect(fake.versions.get('f')).toBeUndefined();
  // Taken out of the record, which afterEach requires to be all signed.
  expect(unsignedCalls(fake.calls.splice(-1))).toEqual([
    { action: 'PublishFunctionVersion', signature: { ok: false, reason: expect.stringContaining('does not match') } },
  ]);
});
