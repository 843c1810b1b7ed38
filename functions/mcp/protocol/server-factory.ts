/** Builds SDK servers (one per HTTP request, or one per stdio connection) over a prebuilt tool list. */
import { type CallToolResult, Server, type ServerContext, type Tool } from '@modelcontextprotocol/server';

import { SERVER_CAPABILITIES, SERVER_INFO, SERVER_INSTRUCTIONS } from './server-identity';

export interface ProtocolServerOptions {
  /** What `tools/list` answers (built once per process). */
  tools: readonly Tool[];
  /** Answers `tools/call`. */
  call: (name: string, args: unknown, ctx: ServerContext) => Promise<CallToolResult>;
  /** Protocol versions this entry serves, preferred first. */
  versions: readonly string[];
  /** What the server tells the model about itself. @default SERVER_INSTRUCTIONS (the 2025 eras') */
  instructions?: string;
}

/** A low-level SDK server answering `tools/list` from the prebuilt list and `tools/call` through `call`. */
export function createProtocolServer({
  tools,
  call,
  versions,
  instructions = SERVER_INSTRUCTIONS,
}: ProtocolServerOptions): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { ...SERVER_CAPABILITIES.tools } },
    instructions,
    supportedProtocolVersions: [...versions],
  });
  server.setRequestHandler('tools/list', () => ({ tools: [...tools] }));
  server.setRequestHandler('tools/call', (request, ctx) => call(request.params.name, request.params.arguments, ctx));
  return server;
}
