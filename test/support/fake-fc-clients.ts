/**
 * The clients the deploy CLI calls the fake FC API with, pointed at it: the FC 3.0 SDK (@alicloud/fc20230330), and
 * @alicloud/openapi-core's callApi for the RPC actions at `/` (Resource Manager, Certificate Management Service), made
 * exactly as the CLI makes them: style RPC, POST /, the parameters in the query.
 */
import FcClient from '@alicloud/fc20230330';
import OpenApi, { $OpenApiUtil } from '@alicloud/openapi-core';
import { RuntimeOptions } from '@darabonba/typescript';

import type { Credentials, FakeFc } from './fake-fc';

function config(fake: FakeFc, credentials: Credentials): $OpenApiUtil.Config {
  return new $OpenApiUtil.Config({
    accessKeyId: credentials.accessKeyId,
    accessKeySecret: credentials.accessKeySecret,
    ...(credentials.securityToken !== undefined && { securityToken: credentials.securityToken }),
    endpoint: new URL(fake.endpoint).host,
    protocol: 'http',
  });
}

export function fcClient(fake: FakeFc, credentials: Credentials): FcClient {
  return new FcClient(config(fake, credentials));
}

/**
 * Calls RPC `action` of API `version` with `query`; resolves with the answer's body. POST unless told (fc3 sends
 * CheckServiceLinkedRoleExistence as a GET).
 */
export async function rpcCall(
  fake: FakeFc,
  credentials: Credentials,
  action: string,
  version: string,
  query: Record<string, string>,
  method: 'POST' | 'GET' = 'POST',
): Promise<Record<string, unknown>> {
  const client = new OpenApi(config(fake, credentials));
  const params = new $OpenApiUtil.Params({
    action,
    version,
    protocol: 'HTTPS',
    pathname: '/',
    method,
    authType: 'AK',
    style: 'RPC',
    reqBodyType: 'formData',
    bodyType: 'json',
  });
  const response = await client.callApi(params, new $OpenApiUtil.OpenApiRequest({ query }), new RuntimeOptions({}));
  return response.body as Record<string, unknown>;
}
