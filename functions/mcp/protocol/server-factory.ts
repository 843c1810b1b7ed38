/** Builds SDK servers (one per HTTP request, or one per stdio connection) over a prebuilt tool list. */
import {
  type CallToolResult,
  type ListResourcesResult,
  type ReadResourceResult,
  type ResourceTemplateType,
  Server,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import * as z from 'zod';

import type { TaskControls } from '../tasks/task-runner';
import { SERVER_CAPABILITIES, SERVER_INFO, SERVER_INSTRUCTIONS } from './server-identity';
import type { EraTasks } from './task-methods';

/** Sandbox files as resources (resources/file-resources.ts), as one lane names its sandboxes. */
export interface ResourceHandlers {
  readonly templates: readonly ResourceTemplateType[];
  list(ctx: ServerContext): Promise<ListResourcesResult>;
  read(uri: string, ctx: ServerContext): Promise<ReadResourceResult>;
}

export interface ProtocolServerOptions {
  /** What `tools/list` answers (built once per process). */
  tools: readonly Tool[];
  /** Answers `tools/call`; with `controls`, as a task's call (it runs on after its request). */
  call: (name: string, args: unknown, ctx: ServerContext, controls?: TaskControls) => Promise<CallToolResult>;
  /** Answers `resources/list`, `resources/templates/list` and `resources/read`. */
  resources: ResourceHandlers;
  /** Protocol versions this entry serves, preferred first. */
  versions: readonly string[];
  /** What the server tells the model about itself. @default SERVER_INSTRUCTIONS (the 2025 eras') */
  instructions?: string;
  /** MCP tasks, in this era's words (protocol/task-methods.ts). @default none */
  tasks?: EraTasks;
}

/** What `resources/list` takes: a cursor (one page is all there is, so it is not read). */
const LIST_PARAMS = z.object({ cursor: z.string().optional() });
/** What `resources/read` takes. */
const READ_PARAMS = z.object({ uri: z.string() });

/** A low-level SDK server answering the tools and resources methods through the given handlers. */
export function createProtocolServer({
  tools,
  call,
  resources,
  versions,
  instructions = SERVER_INSTRUCTIONS,
  tasks,
}: ProtocolServerOptions): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: {
      tools: { ...SERVER_CAPABILITIES.tools },
      resources: { ...SERVER_CAPABILITIES.resources },
      ...tasks?.capabilities,
    },
    instructions,
    supportedProtocolVersions: [...versions],
  });
  server.setRequestHandler('tools/list', () => ({ tools: [...tools] }));
  server.setRequestHandler('tools/call', (request, ctx) => {
    const { name, arguments: args } = request.params;
    const asTask = tasks?.call(request.params, ctx, (controls) => call(name, args, ctx, controls), server);
    return (asTask as Promise<CallToolResult> | undefined) ?? call(name, args, ctx);
  });
  tasks?.install(server);
  server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: [...resources.templates] }));
  // With their params' schemas given here, params that do not fit are Invalid Params (-32602), as for tools/call;
  // the SDK's own check of these methods would answer an internal error (-32603).
  server.setRequestHandler('resources/list', { params: LIST_PARAMS }, (_params, ctx) => resources.list(ctx));
  server.setRequestHandler('resources/read', { params: READ_PARAMS }, (params, ctx) => resources.read(params.uri, ctx));
  return server;
}
