/**
 * `initialize` answered without the SDK, for the first requests of a cold instance (http/early-listener.ts):
 * the answer is plain data, so a client gets it before the ~1 MB of SDK, zod and tools are compiled.
 *
 * Only requests whose answer is certain are taken: a message the SDK would accept as an initialize request
 * (`InitializeRequestSchema`), in the shapes clients send. Anything else (batches, `_meta`, icons, task
 * capabilities, malformed values) is left to the SDK, which answers it as usual. The answer is the one the
 * SDK server writes, byte for byte (test/unit/protocol/early-initialize.test.ts holds both to that).
 */
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

const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

/** `message` as an initialize request answered here, or `undefined` to let the SDK answer it. */
export function readEarlyInitialize(message: unknown): EarlyInitialize | undefined {
  if (!isObject(message) || message.jsonrpc !== '2.0' || message.method !== 'initialize') return undefined;
  if (Object.keys(message).some((key) => !MESSAGE_KEYS.has(key))) return undefined;
  const { id, params } = message;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  if (!isObject(params) || '_meta' in params) return undefined;
  const { protocolVersion, capabilities, clientInfo } = params;
  if (typeof protocolVersion !== 'string' || !isClientCapabilities(capabilities) || !isClientInfo(clientInfo)) return undefined;
  return { id: id as string | number, requestedVersion: protocolVersion, capabilities, clientInfo };
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

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
