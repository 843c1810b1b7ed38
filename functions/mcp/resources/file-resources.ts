/**
 * Sandbox files as MCP resources, the same for every lane once it knows which sandbox a URI names: `resources/read`
 * answers text or a blob up to MAX_RESOURCE_BYTES (a larger file's read says to use get_file_url), `resources/list`
 * the files at the top of the working directory, and tool results link the files they made (`resource_link`).
 */
import {
  type ListResourcesResult,
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
  ResourceNotFoundError,
  type ResourceTemplateType,
  type ServerContext,
} from '@modelcontextprotocol/server';

import { isAppError } from '../errors';
import type { Sandbox } from '../sandbox/types';
import { mediaTypeOf, toText } from './media-types';
import { parseSandboxUri, SANDBOX_FILE_TEMPLATE, SESSION_SANDBOX, toSandboxUri } from './sandbox-uris';

/** The largest file `resources/read` returns (as text, or base64 in a blob). */
export const MAX_RESOURCE_BYTES = 2 * 1024 * 1024;
/** Files `resources/list` names at most. */
const MAX_LISTED = 200;

/** The one template, described for a lane (what `<sandbox>` is there). */
export function sandboxFileTemplate(sandboxIs: string): ResourceTemplateType {
  return {
    uriTemplate: SANDBOX_FILE_TEMPLATE,
    name: 'sandbox-file',
    title: 'A file in a sandbox',
    description:
      `A file in a sandbox: {sandbox} is ${sandboxIs}; {+path} is the file's absolute path there, e.g. ` +
      `home/user/report.csv. Files up to ${MAX_RESOURCE_BYTES} bytes are read whole; for larger ones call the ` +
      'get_file_url tool.',
  };
}

/** The template where `session` is the only sandbox (`whose`). */
export function sessionFileTemplate(whose: string): ResourceTemplateType {
  return sandboxFileTemplate(`"${SESSION_SANDBOX}" (${whose})`);
}

/** Reads the file `path` of `sandbox` as the resource `uri`. */
export async function readFileResource(sandbox: Sandbox, uri: string, path: string): Promise<ReadResourceResult> {
  try {
    // Looked at first: a file too large is refused with what to do instead, before a byte is read.
    const source = await sandbox.openFile(path);
    await source.close();
    if (source.sizeBytes > MAX_RESOURCE_BYTES) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `${source.path} is ${source.sizeBytes} bytes, over the ${MAX_RESOURCE_BYTES}-byte limit of resources/read; ` +
          'call the get_file_url tool for a URL that downloads it.',
      );
    }
    const file = await sandbox.readFile(path, MAX_RESOURCE_BYTES);
    const mimeType = mediaTypeOf(file.path, file.bytes);
    const text = mimeType?.startsWith('image/') === true ? undefined : toText(file.bytes);
    if (text !== undefined) return { contents: [{ uri, mimeType: mimeType ?? 'text/plain', text }] };
    const blob = file.bytes.toString('base64');
    return { contents: [{ uri, mimeType: mimeType ?? 'application/octet-stream', blob }] };
  } catch (err: unknown) {
    if (isAppError(err, 'not_found')) throw new ResourceNotFoundError(uri, `No such file in the sandbox: ${path}`);
    if (isAppError(err)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message);
    throw err;
  }
}

/** Runs `use`, an AppError (no room, the backend unreachable) turned into the request's error. */
export async function asResourceRequest<T>(use: () => Promise<T>): Promise<T> {
  try {
    return await use();
  } catch (err: unknown) {
    if (isAppError(err)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message);
    throw err;
  }
}

/** Reaches one sandbox for a request (`undefined`: none made yet), holding it in use meanwhile. */
export type WithSandbox = <T>(ctx: ServerContext, use: (sandbox: Sandbox | undefined) => Promise<T>) => Promise<T>;

/**
 * The resources of one sandbox, named `session` in its URIs: a 2025 session's (its own, or the named one it works
 * in) or a stdio connection's. `whose` says whose, in the template's description.
 */
export function createSessionResources(whose: string, withSandbox: WithSandbox) {
  return {
    templates: [sessionFileTemplate(whose)],
    list: (ctx: ServerContext): Promise<ListResourcesResult> =>
      asResourceRequest(() =>
        withSandbox(ctx, async (sandbox) =>
          sandbox === undefined ? { resources: [] } : listFileResources(sandbox, SESSION_SANDBOX),
        ),
      ),
    read: async (uri: string, ctx: ServerContext): Promise<ReadResourceResult> => {
      const named = parseSandboxUri(uri);
      if (named?.sandbox !== SESSION_SANDBOX)
        throw new ResourceNotFoundError(uri, `Not a file of ${whose} (sandbox://${SESSION_SANDBOX}/<path>).`);
      return asResourceRequest(() =>
        withSandbox(ctx, async (sandbox) => {
          if (sandbox === undefined) throw new ResourceNotFoundError(uri, `There is no sandbox yet: ${whose}.`);
          return readFileResource(sandbox, uri, named.path);
        }),
      );
    },
  };
}

/** The regular files at the top of the sandbox's working directory, as resources. */
export async function listFileResources(sandbox: Sandbox, sandboxRef: string): Promise<ListResourcesResult> {
  const { workdir } = sandbox.info();
  const listed = await sandbox.listFiles({ path: workdir, depth: 1, includeHidden: false, maxEntries: MAX_LISTED });
  const resources = listed.entries
    .filter((entry) => entry.type === 'file')
    .map((entry) => {
      const path = `${workdir}/${entry.path}`;
      const mimeType = mediaTypeOf(path);
      return {
        uri: toSandboxUri(sandboxRef, path),
        name: entry.path,
        size: entry.size,
        ...(mimeType !== undefined && { mimeType }),
      };
    });
  return { resources };
}

/** A file a tool made, linked from its result. */
export interface FileLink {
  /** Absolute in the sandbox. */
  readonly path: string;
  readonly sizeBytes?: number;
  readonly description?: string;
}

/** The `resource_link` content block of `link`, in the sandbox `sandboxRef` names. */
export function toResourceLink(sandboxRef: string, link: FileLink) {
  const mimeType = mediaTypeOf(link.path);
  return {
    type: 'resource_link' as const,
    uri: toSandboxUri(sandboxRef, link.path),
    name: link.path.slice(link.path.lastIndexOf('/') + 1),
    ...(link.description !== undefined && { description: link.description }),
    ...(mimeType !== undefined && { mimeType }),
    ...(link.sizeBytes !== undefined && { size: link.sizeBytes }),
  };
}
