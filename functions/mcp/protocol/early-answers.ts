/**
 * What is answered without the SDK (http/early-listener.ts): `initialize`, and in a session started that way,
 * `notifications/initialized` and `tools/list`. The answers are plain data, so a cold instance lets a client
 * connect and list the tools before the ~1 MB of SDK, zod and tools are compiled, and a session that only
 * connected holds no SDK objects.
 *
 * Only requests whose answer is certain are taken: messages the SDK would accept, in the shapes clients send.
 * Anything else (batches, `_meta`, icons, task capabilities, cursors, malformed values) is left to the SDK,
 * which answers it as usual. The answers are the SDK's, byte for byte: `initialize` is built from the data
 * the SDK servers are built from (test/unit/protocol/early-answers.test.ts compares them), and `tools/list`
 * is the SDK's own answer, captured at build time (protocol/tools-list-capture.ts; test/e2e/cold-instance.test.ts
 * compares them over HTTP).
 */
import { isObject, readPlainMessage } from './plain-message';
import { SERVER_CAPABILITIES, SERVER_INFO, SERVER_INSTRUCTIONS } from './server-identity';
import { HTTP_PROTOCOL_VERSIONS } from './versions';

/** An initialize request this module can answer. */
export interface EarlyInitialize {
  readonly id: string | number;
  /** The version the client asked for (not necessarily one the server speaks). */
  readonly requestedVersion: string;
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly clientInfo: Readonly<Record<string, unknown>>;
}

type JsonObject = Record<string, unknown>;

/** `message` as an initialize request answered here, or `undefined` to let the SDK answer it. */
export function readEarlyInitialize(value: unknown): EarlyInitialize | undefined {
  const message = readPlainMessage(value);
  if (message?.method !== 'initialize' || message.id === undefined) return undefined;
  const { params } = message;
  if (params === undefined || '_meta' in params) return undefined;
  const { protocolVersion, capabilities, clientInfo } = params;
  if (typeof protocolVersion !== 'string' || !isClientCapabilities(capabilities) || !isClientInfo(clientInfo)) return undefined;
  return { id: message.id, requestedVersion: protocolVersion, capabilities, clientInfo };
}

/** The version the server answers with: the client's when served here, else the preferred one (as the SDK does). */
export function negotiateVersion(requested: string): string {
  return HTTP_PROTOCOL_VERSIONS.includes(requested) ? requested : (HTTP_PROTOCOL_VERSIONS[0] as string);
}

/** The JSON-RPC response to `request`, serialized as the SDK's server and transport write it. */
export function earlyInitializeResponse(request: EarlyInitialize): string {
  const result = {
    protocolVersion: negotiateVersion(request.requestedVersion),
    capabilities: SERVER_CAPABILITIES,
    serverInfo: SERVER_INFO,
    instructions: SERVER_INSTRUCTIONS,
  };
  return JSON.stringify({ result, jsonrpc: '2.0', id: request.id });
}

/** The SDK's `tools/list` results per protocol version, embedded by build.mjs; absent when run from source. */
declare const __EARLY_TOOLS_LIST__: Readonly<Record<string, string>> | undefined;
const TOOLS_LIST_RESULTS: Readonly<Record<string, string>> | undefined = typeof __EARLY_TOOLS_LIST__ === 'undefined' ? undefined : __EARLY_TOOLS_LIST__;

/** A request inside a session started early that is answered here too. */
export type EarlySessionRequest = { method: 'notifications/initialized' } | { method: 'tools/list'; id: string | number };

/** `message` as one of the requests answered here in a session, or `undefined` to let the SDK answer it. */
export function readEarlySessionRequest(value: unknown): EarlySessionRequest | undefined {
  const message = readPlainMessage(value);
  if (message === undefined || (message.params !== undefined && Object.keys(message.params).length > 0)) return undefined;
  const { method, id } = message;
  if (method === 'notifications/initialized' && id === undefined) return { method };
  if (method === 'tools/list' && id !== undefined && TOOLS_LIST_RESULTS !== undefined) return { method, id };
  return undefined;
}

/** The SDK's answer to `tools/list` in a session at `protocolVersion`, or `undefined` when none was embedded. */
export function earlyToolsListResponse(id: string | number, protocolVersion: string): string | undefined {
  const result = TOOLS_LIST_RESULTS?.[protocolVersion];
  return result === undefined ? undefined : `{"result":${result},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
}

function isOptional(value: unknown, check: (v: unknown) => boolean): boolean {
  return value === undefined || check(value);
}

const isBoolean = (value: unknown): boolean => typeof value === 'boolean';
const isString = (value: unknown): boolean => typeof value === 'string';
const isRecordOfObjects = (value: unknown): boolean => isObject(value) && Object.values(value).every(isObject);

/** The SDK's `ClientCapabilitiesSchema`, for the capabilities clients send; `tasks` is left to the SDK. */
function isClientCapabilities(value: unknown): value is JsonObject {
  if (!isObject(value)) return false;
  const { experimental, extensions, sampling, elicitation, roots } = value;
  return (
    !('tasks' in value) &&
    isOptional(experimental, isRecordOfObjects) &&
    isOptional(extensions, isRecordOfObjects) &&
    isOptional(sampling, (s) => isObject(s) && isOptional(s.context, isObject) && isOptional(s.tools, isObject)) &&
    isOptional(elicitation, (e) => isObject(e) && isOptional(e.url, isObject) && isOptional(e.form, (f) => isObject(f) && isOptional(f.applyDefaults, isBoolean))) &&
    isOptional(roots, (r) => isObject(r) && isOptional(r.listChanged, isBoolean))
  );
}

/** The SDK's `ImplementationSchema` without icons (left to the SDK). */
function isClientInfo(value: unknown): value is JsonObject {
  return (
    isObject(value) &&
    typeof value.name === 'string' &&
    typeof value.version === 'string' &&
    !('icons' in value) &&
    isOptional(value.title, isString) &&
    isOptional(value.websiteUrl, isString) &&
    isOptional(value.description, isString)
  );
}
