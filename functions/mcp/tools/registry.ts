/** The tool set, registered in one place; schemas become JSON Schema once per process. */
import { ProtocolError, ProtocolErrorCode, type CallToolResult, type Tool } from '@modelcontextprotocol/server';
import * as z from 'zod';

import { isAppError, toFaultFields } from '../errors';
import type { Logger } from '../log';
import { type FileLink, toResourceLink } from '../resources/file-resources';
import { describeArgumentIssues } from './argument-errors';
import { portableSchema } from './portable-schema';
import { editFileTool } from './edit-file';
import { deleteSandboxTool } from './delete-sandbox';
import { getFileUrlTool } from './get-file-url';
import { getPreviewUrlTool } from './get-preview-url';
import { listFilesTool } from './list-files';
import { listSandboxesTool } from './list-sandboxes';
import { manageProcessTool } from './manage-process';
import { nameSandboxTool } from './name-sandbox';
import { openSandboxTool } from './open-sandbox';
import { readFileTool } from './read-file';
import { resetSandboxTool } from './reset-sandbox';
import { runCodeTool } from './run-code';
import { runCommandTool } from './run-command';
import { sandboxStatusTool } from './sandbox-status';
import type { ToolContext, ToolDefinition } from './tool';
import { writeFileTool } from './write-file';

/** Every tool the server offers, in the order `tools/list` shows them. */
export const TOOLS: readonly ToolDefinition[] = [
  runCodeTool,
  runCommandTool,
  readFileTool,
  writeFileTool,
  listFilesTool,
  editFileTool,
  sandboxStatusTool,
  manageProcessTool,
  getPreviewUrlTool,
  getFileUrlTool,
  resetSandboxTool,
  openSandboxTool,
  listSandboxesTool,
  nameSandboxTool,
  deleteSandboxTool,
] as readonly ToolDefinition[];

/** The `resource_link` blocks of a result's files, where the call's sandbox can be named. */
function linksOf(links: readonly FileLink[] | undefined, sandboxRef: string | undefined) {
  return links === undefined || sandboxRef === undefined ? [] : links.map((link) => toResourceLink(sandboxRef, link));
}

/** The tools as `tools/list` describes them, and the dispatcher for `tools/call`. */
export interface ToolCatalog {
  readonly list: readonly Tool[];
  call(name: string, args: unknown, ctx: ToolContext): Promise<CallToolResult>;
}

function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Tool['inputSchema'] {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return { ...(portableSchema(json) as Record<string, unknown>), type: 'object' } as Tool['inputSchema'];
}

/** The tools as `tools/list` describes them: their zod schemas turned into JSON Schema (~10 ms for TOOLS). */
export function describeTools(tools: readonly ToolDefinition[]): Tool[] {
  return tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toJsonSchema(tool.input, 'input'),
    outputSchema: toJsonSchema(tool.output, 'output'),
    annotations: { title: tool.title, ...tool.annotations },
    ...(tool.taskSupport !== undefined && { execution: { taskSupport: tool.taskSupport } }),
  }));
}

/**
 * `describeTools(TOOLS)` as JSON, computed by build.mjs (`toolListDefine`) when it bundles these same definitions, so
 * that a cold start does not compute it; not defined when the code runs from source.
 */
declare const __TOOL_LIST_JSON__: string | undefined;

/**
 * The tools only an HTTP server offers, not a stdio connection: those that reach the owner's other sandboxes (a call
 * there has no owner to speak of), and file URLs (no listener serves them).
 */
export const HTTP_ONLY_TOOLS: readonly string[] = [
  getFileUrlTool.name,
  openSandboxTool.name,
  listSandboxesTool.name,
  nameSandboxTool.name,
  deleteSandboxTool.name,
];

export interface ToolCatalogOptions {
  /** Tools left out of the list and refused as unknown. @default none */
  omit?: readonly string[];
}

/** Builds the catalog (JSON schemas computed here, once, or by the build for TOOLS). */
export function createToolCatalog(
  logger: Logger,
  tools: readonly ToolDefinition[] = TOOLS,
  { omit = [] }: ToolCatalogOptions = {},
): ToolCatalog {
  const kept = (name: string): boolean => !omit.includes(name);
  const byName = new Map(tools.filter((tool) => kept(tool.name)).map((tool) => [tool.name, tool]));
  const list = (
    tools === TOOLS && typeof __TOOL_LIST_JSON__ === 'string'
      ? (JSON.parse(__TOOL_LIST_JSON__) as Tool[])
      : describeTools(tools)
  ).filter((tool) => kept(tool.name));
  return {
    list,
    async call(name, args, ctx) {
      const tool = byName.get(name);
      if (tool === undefined) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `Unknown tool: ${name}. Call tools/list for the available tools.`,
        );
      }
      const parsed = tool.input.safeParse(args ?? {});
      if (!parsed.success) {
        // Spec 2025-11-25 (SEP-1303): input validation errors are tool execution errors, so the model can correct the
        // call.
        const known = tool.input instanceof z.ZodObject ? Object.keys(tool.input.shape) : [];
        return {
          content: [
            {
              type: 'text',
              text: `Invalid arguments for ${name}: ${describeArgumentIssues(parsed.error.issues, args ?? {}, known)}`,
            },
          ],
          isError: true,
        };
      }
      // A note about the sandbox itself (e.g. a fresh one replaced a lost one) leads the next result.
      const withNotice = (text: string): string => {
        const notice = ctx.sandbox.takeNotice();
        return notice === undefined ? text : `${notice}\n\n${text}`;
      };
      try {
        const outcome = await tool.run(parsed.data, ctx).finally(() => ctx.settle?.());
        return {
          content: [
            { type: 'text', text: withNotice(outcome.text) },
            ...(outcome.images ?? []),
            ...linksOf(outcome.links, ctx.sandboxRef),
          ],
          structuredContent: outcome.structured as Record<string, unknown>,
          ...(outcome.isError === true && { isError: true }),
        };
      } catch (err: unknown) {
        if (isAppError(err)) {
          return { content: [{ type: 'text', text: withNotice(err.message) }], isError: true };
        }
        logger.error('tool failed unexpectedly', { tool: name, ...toFaultFields(err) });
        throw new ProtocolError(ProtocolErrorCode.InternalError, `Internal error in ${name}; the failure was logged.`);
      }
    },
  };
}
