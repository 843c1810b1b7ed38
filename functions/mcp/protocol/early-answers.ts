/**
 * The one answer given without the SDK: `initialize` on a cold instance, before the core is loaded
 * (protocol/early-listener.ts), so that a client connects at about the cost of bare Node while the core loads.
 *
 * Stateless: the answer mints a signed session id and keeps nothing; the core opens that id on the session's
 * next request (protocol/legacy-lane.ts). So nothing the client says in `initialize` is needed later, and only
 * what the answer depends on is read: the request id and the protocol version. The answer is built from the data
 * the SDK servers are built from (protocol/server-identity.ts), byte for byte what the core would write
 * (test/unit/protocol/early-answers.test.ts and test/e2e/cold-instance.test.ts compare them). Anything that is
 * not a plain `initialize` (no `_meta`) with the members the SDK requires (`protocolVersion`, `capabilities`, `clientInfo`
 * with `name` and `version`) is left to the core, which loads for it.
 */
import { isObject, readPlainMessage } from './plain-message';
import { SERVER_CAPABILITIES, SERVER_INFO, SERVER_INSTRUCTIONS } from './server-identity';
import { negotiateVersion } from './versions';

/** An initialize request this module can answer. */
export interface EarlyInitialize {
  readonly id: string | number;
  /** The version the client asked for (not necessarily one the server speaks). */
  readonly requestedVersion: string;
}

/** `value` as an initialize request answered here, or `undefined` to let the core answer it. */
export function readEarlyInitialize(value: unknown): EarlyInitialize | undefined {
  const message = readPlainMessage(value);
  if (message?.method !== 'initialize' || message.id === undefined || message.params === undefined) return undefined;
  // `_meta` may claim the 2026-07-28 envelope: which lane serves it is the core's to decide (protocol/mcp-endpoint.ts).
  if ('_meta' in message.params) return undefined;
  const { protocolVersion, capabilities, clientInfo } = message.params;
  if (typeof protocolVersion !== 'string' || !isObject(capabilities) || !isObject(clientInfo)) return undefined;
  if (typeof clientInfo.name !== 'string' || typeof clientInfo.version !== 'string') return undefined;
  return { id: message.id, requestedVersion: protocolVersion };
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
