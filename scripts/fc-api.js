/**
 * The few FC 3.0 calls the deploy makes, behind a small interface, through the official SDK (`@alicloud/fc20230330`
 * 4.7, built on `@alicloud/openapi-core`). SDK errors are translated here into FcApiError (code, status, request id).
 */
'use strict';

/**
 * @typedef {object} FcApi
 * @property {(name: string) => Promise<Record<string, any> | undefined>} getFunction undefined when it does not exist
 * @property {(input: Record<string, unknown>) => Promise<Record<string, any>>} createFunction
 * @property {(name: string, input: Record<string, unknown>) => Promise<Record<string, any>>} updateFunction
 * @property {(name: string, trigger: string) => Promise<Record<string, any> | undefined>} getTrigger
 * @property {(name: string, input: Record<string, unknown>) => Promise<Record<string, any>>} createTrigger
 * @property {(name: string, trigger: string, input: Record<string, unknown>) => Promise<Record<string, any>>}
 * updateTrigger
 * @property {(domain: string) => Promise<Record<string, any> | undefined>} getCustomDomain
 * @property {(input: Record<string, unknown>) => Promise<Record<string, any>>} createCustomDomain
 * @property {(domain: string, input: Record<string, unknown>) => Promise<Record<string, any>>} updateCustomDomain
 * @property {(name: string, description: string) => Promise<Record<string, any>>} publishVersion
 * @property {(name: string, nextToken?: string) => Promise<Record<string, any>>} listVersions newest first
 * @property {(name: string, alias: string) => Promise<Record<string, any> | undefined>} getAlias
 * @property {(name: string, input: Record<string, unknown>) => Promise<Record<string, any>>} createAlias
 * @property {(name: string, alias: string, input: Record<string, unknown>) => Promise<Record<string, any>>}
 * updateAlias
 * @property {(name: string, qualifier: string) => Promise<Record<string, any> | undefined>} getScalingConfig
 * @property {(name: string, qualifier: string, input: Record<string, unknown>) => Promise<Record<string, any>>}
 * putScalingConfig
 * @property {(name: string, qualifier: string) => Promise<unknown>} deleteScalingConfig
 * @property {(name: string) => Promise<Record<string, any> | undefined>} getConcurrencyConfig
 * @property {(name: string, reservedConcurrency: number) => Promise<Record<string, any>>} putConcurrencyConfig
 * @property {(name: string) => Promise<unknown>} deleteConcurrencyConfig
 */

/** FC 3.0 wants both SDK timeouts set: the defaults (connect 5 s, read 10 s or less) cut a code upload short. */
const CONNECT_TIMEOUT_MS = 10_000;
const READ_TIMEOUT_MS = 120_000;

/** An FC API call that failed. */
class FcApiError extends Error {
  /**
   * @param {string} message
   * @param {{ code: string, statusCode?: number, requestId?: string, retryAfterMs?: number, cause?: unknown }} details
   */
  constructor(message, details) {
    super(message, { cause: details.cause });
    this.name = 'FcApiError';
    this.code = details.code;
    this.statusCode = details.statusCode;
    this.requestId = details.requestId;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/**
 * Where the API is: an explicit --endpoint (host, or http(s)://host:port), the account endpoint, or the regional one.
 * @param {{ endpoint?: string, accountId?: string, region: string }} options
 * @returns {{ host: string, protocol: 'http' | 'https' }}
 */
function resolveEndpoint({ endpoint, accountId, region }) {
  if (endpoint !== undefined) return parseEndpoint(endpoint);
  return {
    host: accountId === undefined ? `fcv3.${region}.aliyuncs.com` : `${accountId}.${region}.fc.aliyuncs.com`,
    protocol: 'https',
  };
}

/**
 * An endpoint option (a host, or http(s)://host:port) as the SDK's Config takes it.
 * @param {string} endpoint
 * @returns {{ host: string, protocol: 'http' | 'https' }}
 */
function parseEndpoint(endpoint) {
  const match = /^(https?):\/\/([^/]+)\/?$/.exec(endpoint);
  return match === null
    ? { host: endpoint.replace(/\/$/, ''), protocol: 'https' }
    : { host: String(match[2]), protocol: /** @type {'http' | 'https'} */ (match[1]) };
}

/**
 * @param {{ host: string, protocol: 'http' | 'https', accessKeyId: string, accessKeySecret: string, securityToken?:
 * string }} options
 * @returns {FcApi}
 */
function createFcApi(options) {
  // Loaded here, not at the top: the artifact-only path never pays for the SDK.
  const FC = require('@alicloud/fc20230330');
  const { $OpenApiUtil } = require('@alicloud/openapi-core');
  const Client = FC.default;
  const client = new Client(
    new $OpenApiUtil.Config({
      accessKeyId: options.accessKeyId,
      accessKeySecret: options.accessKeySecret,
      ...(options.securityToken && { securityToken: options.securityToken }),
      endpoint: options.host,
      protocol: options.protocol,
      connectTimeout: CONNECT_TIMEOUT_MS,
      readTimeout: READ_TIMEOUT_MS,
    }),
  );
  /** @template T @param {() => Promise<{ body?: T } | object>} call @returns {Promise<T>} */
  const body = async (call) => {
    try {
      const response = await call();
      return /** @type {T} */ (toPlain('body' in response ? response.body : undefined));
    } catch (err) {
      throw toFcApiError(err);
    }
  };
  /** @template T @param {() => Promise<{ body?: T } | object>} call */
  const unlessNotFound = async (call) => {
    try {
      return await body(call);
    } catch (err) {
      if (err instanceof FcApiError && err.statusCode === 404) return undefined;
      throw err;
    }
  };
  return {
    getFunction: (name) => unlessNotFound(() => client.getFunction(name, new FC.GetFunctionRequest({}))),
    createFunction: (input) =>
      body(() => client.createFunction(new FC.CreateFunctionRequest({ body: new FC.CreateFunctionInput(input) }))),
    updateFunction: (name, input) =>
      body(() =>
        client.updateFunction(name, new FC.UpdateFunctionRequest({ body: new FC.UpdateFunctionInput(input) })),
      ),
    getTrigger: (name, trigger) => unlessNotFound(() => client.getTrigger(name, trigger)),
    createTrigger: (name, input) =>
      body(() => client.createTrigger(name, new FC.CreateTriggerRequest({ body: new FC.CreateTriggerInput(input) }))),
    updateTrigger: (name, trigger, input) =>
      body(() =>
        client.updateTrigger(name, trigger, new FC.UpdateTriggerRequest({ body: new FC.UpdateTriggerInput(input) })),
      ),
    getCustomDomain: (domain) => unlessNotFound(() => client.getCustomDomain(domain)),
    createCustomDomain: (input) =>
      body(() =>
        client.createCustomDomain(new FC.CreateCustomDomainRequest({ body: new FC.CreateCustomDomainInput(input) })),
      ),
    updateCustomDomain: (domain, input) =>
      body(() =>
        client.updateCustomDomain(
          domain,
          new FC.UpdateCustomDomainRequest({ body: new FC.UpdateCustomDomainInput(input) }),
        ),
      ),
    publishVersion: (name, description) =>
      body(() =>
        client.publishFunctionVersion(
          name,
          new FC.PublishFunctionVersionRequest({ body: new FC.PublishVersionInput({ description }) }),
        ),
      ),
    listVersions: (name, nextToken) =>
      body(() =>
        client.listFunctionVersions(
          name,
          new FC.ListFunctionVersionsRequest({ direction: 'BACKWARD', limit: 100, ...(nextToken && { nextToken }) }),
        ),
      ),
    getAlias: (name, alias) => unlessNotFound(() => client.getAlias(name, alias)),
    createAlias: (name, input) =>
      body(() => client.createAlias(name, new FC.CreateAliasRequest({ body: new FC.CreateAliasInput(input) }))),
    updateAlias: (name, alias, input) =>
      body(() => client.updateAlias(name, alias, new FC.UpdateAliasRequest({ body: new FC.UpdateAliasInput(input) }))),
    getScalingConfig: (name, qualifier) =>
      unlessNotFound(() => client.getScalingConfig(name, new FC.GetScalingConfigRequest({ qualifier }))),
    putScalingConfig: (name, qualifier, input) =>
      body(() =>
        client.putScalingConfig(
          name,
          new FC.PutScalingConfigRequest({ qualifier, body: new FC.PutScalingConfigInput(input) }),
        ),
      ),
    deleteScalingConfig: (name, qualifier) =>
      unlessNotFound(() => client.deleteScalingConfig(name, new FC.DeleteScalingConfigRequest({ qualifier }))),
    getConcurrencyConfig: (name) => unlessNotFound(() => client.getConcurrencyConfig(name)),
    putConcurrencyConfig: (name, reservedConcurrency) =>
      body(() =>
        client.putConcurrencyConfig(
          name,
          new FC.PutConcurrencyConfigRequest({ body: new FC.PutConcurrencyInput({ reservedConcurrency }) }),
        ),
      ),
    deleteConcurrencyConfig: (name) => unlessNotFound(() => client.deleteConcurrencyConfig(name)),
  };
}

/**
 * SDK models → plain JSON objects.
 * @param {unknown} value
 */
function toPlain(value) {
  return value === undefined || value === null ? {} : JSON.parse(JSON.stringify(value));
}

/**
 * The SDK throws ClientError (4xx), ThrottlingError (a code containing "Throttling") and ServerError (5xx), each
 * with code, statusCode and requestId; a network failure is a plain Error with an errno code.
 * @param {unknown} err
 */
function toFcApiError(err) {
  if (err instanceof FcApiError) return err;
  const e = /** @type {Record<string, any>} */ (typeof err === 'object' && err !== null ? err : {});
  const statusCode = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const code =
    typeof e.code === 'string' && e.code !== '' && e.code !== 'undefined'
      ? e.code
      : statusCode === undefined
        ? 'NetworkError'
        : `HTTP${statusCode}`;
  const requestId = typeof e.requestId === 'string' && e.requestId !== 'undefined' ? e.requestId : undefined;
  const data = /** @type {Record<string, unknown>} */ (e.data ?? {});
  const detail =
    typeof data.Message === 'string'
      ? data.Message
      : typeof data.message === 'string'
        ? data.message
        : String(e.message ?? err);
  const retryAfterMs = typeof e.retryAfter === 'number' ? e.retryAfter : undefined;
  return new FcApiError(detail, { code, statusCode, requestId, retryAfterMs, cause: err });
}

module.exports = { createFcApi, resolveEndpoint, parseEndpoint, FcApiError, toFcApiError };
