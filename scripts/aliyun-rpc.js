/**
 * Alibaba Cloud's RPC-style APIs the deploy needs beside FC (Resource Manager for the service-linked role, the
 * certificate service for --domain-cert-id), called through `@alicloud/openapi-core`, the client the FC SDK is built
 * on: the same credentials, the same ACS3-HMAC-SHA256 signature, no SDK package per product. Errors become
 * FcApiError, as FC's do.
 */
'use strict';

const { parseEndpoint, toFcApiError } = require('./fc-api');

/** Connect and read timeouts, as for the FC API. */
const CONNECT_TIMEOUT_MS = 10_000;
const READ_TIMEOUT_MS = 30_000;

/** callApi reads its runtime options field by field and falls back to the client's: none are set per call. */
const NO_RUNTIME_OPTIONS = /** @type {any} */ ({});

/**
 * @typedef {(action: string, version: string, query: Record<string, string>) => Promise<Record<string, any>>} RpcCall
 */

/**
 * A caller of one product's RPC API at `endpoint` (a host, or http(s)://host:port for a local fake).
 * @param {{ endpoint: string, accessKeyId: string, accessKeySecret: string, securityToken?: string }} options
 * @returns {RpcCall}
 */
function createRpcApi(options) {
  // Loaded here, not at the top: the artifact-only path never pays for the client.
  const { $OpenApiUtil, default: OpenApi } = require('@alicloud/openapi-core');
  const { host, protocol } = parseEndpoint(options.endpoint);
  const client = new OpenApi(
    new $OpenApiUtil.Config({
      accessKeyId: options.accessKeyId,
      accessKeySecret: options.accessKeySecret,
      ...(options.securityToken && { securityToken: options.securityToken }),
      endpoint: host,
      protocol,
      connectTimeout: CONNECT_TIMEOUT_MS,
      readTimeout: READ_TIMEOUT_MS,
    }),
  );
  return async (action, version, query) => {
    const params = new $OpenApiUtil.Params({
      action,
      version,
      protocol: protocol.toUpperCase(),
      pathname: '/',
      method: 'POST',
      authType: 'AK',
      style: 'RPC',
      reqBodyType: 'formData',
      bodyType: 'json',
    });
    try {
      const response = await client.callApi(params, new $OpenApiUtil.OpenApiRequest({ query }), NO_RUNTIME_OPTIONS);
      return /** @type {Record<string, any>} */ (response?.body ?? {});
    } catch (err) {
      throw toFcApiError(err);
    }
  };
}

module.exports = { createRpcApi };
