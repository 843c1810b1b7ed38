/** Builds the SDK server for one session (or one stdio connection): the tool catalog behind `tools/*`. */
import { Server, type ServerContext } from '@modelcontextprotocol/server';

import type { ToolCatalog, ToolContext } from '../tools';
import { SERVER_INFO } from '../version';

const INSTRUCTIONS =
  'Tools act in a sandbox that belongs to this session: run code (Python keeps state between calls) and shell commands, ' +
  'and read, write, edit and list files. Relative paths resolve against the sandbox working directory. ' +
  'Call sandbox_status for your bearings.';

export interface ProtocolServerOptions {
  catalog: ToolCatalog;
  /** Protocol versions this entry serves, preferred first. */
  versions: readonly string[];
  /** The tool context for one call, built from the SDK's request context. */
  toolContext: (ctx: ServerContext) => ToolContext;
  /** Wraps every tool call (the session counts calls in flight, so that it is not evicted mid-call). */
  trackCall?: <T>(run: () => Promise<T>) => Promise<T>;
}

/** A low-level SDK server answering `tools/list` from the prebuilt catalog and `tools/call` through it. */
export function createProtocolServer({ catalog, versions, toolContext, trackCall = (run) => run() }: ProtocolServerOptions): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: INSTRUCTIONS,
    supportedProtocolVersions: [...versions],
  });
  server.setRequestHandler('tools/list', () => ({ tools: [...catalog.list] }));
  server.setRequestHandler('tools/call', (request, ctx) => trackCall(() => catalog.call(request.params.name, request.params.arguments, toolContext(ctx))));
  return server;
}
