/** `get_file_url`: a URL that downloads a sandbox file, or uploads one into the sandbox, with no other credential. */
import * as z from 'zod';

import { AppError } from '../errors';
import { DEFAULT_EXPIRES_S } from '../files/file-urls';
import { PathSchema } from './shared-schemas';
import { defineTool } from './tool';

const Output = z.object({
  url: z.string().describe('Use it as it is, whole: it is its own credential.'),
  method: z.enum(['GET', 'PUT', 'POST']).describe('GET downloads; PUT (or POST, see note) uploads the raw bytes.'),
  expires_at: z.string().describe('When the URL stops working (ISO 8601).'),
  max_bytes: z
    .number()
    .int()
    .nullable()
    .describe("A download's size; an upload's cap (null: the sandbox's disk is the only limit)."),
  path: z.string().describe('The file, as the sandbox sees it.'),
  note: z.string().nullable().describe('How to use the URL beyond a plain GET or PUT.'),
});

export const getFileUrlTool = defineTool({
  name: 'get_file_url',
  title: 'URL to download or upload a file',
  description:
    'Get a URL that downloads a file from the sandbox, or uploads one into it, for a person or a program to use ' +
    'without any other credential (a browser, curl, another service), until it expires. Use it to hand the user ' +
    'a file the sandbox made (a report, an archive, a plot) or to take a large file from them: files of any size, ' +
    'far beyond what read_file and write_file carry. Downloads take Range requests; uploads replace the file whole, ' +
    'making parent directories. Give the URL on whole: anyone who has it can use it until it expires.',
  input: z.strictObject({
    path: PathSchema.describe('The file, relative to the working directory or absolute.'),
    mode: z.enum(['download', 'upload']).default('download').describe('download: read the file; upload: write it.'),
    expires_s: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(`Seconds the URL works (default ${DEFAULT_EXPIRES_S}; capped by the server).`),
  }),
  output: Output,
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(args, ctx) {
    const urls = ctx.fileUrls?.();
    if (urls === undefined) {
      throw new AppError(
        'invalid_input',
        'File URLs need the server over HTTP; here, move files with read_file and write_file.',
      );
    }
    const sandbox = await ctx.sandbox.get();
    const issued = await urls.issue(sandbox, { path: args.path, mode: args.mode, expiresS: args.expires_s });
    const until = issued.expiresAt.toISOString();
    const capped = args.expires_s !== undefined && args.expires_s > urls.maxExpiresS;
    const how =
      args.mode === 'download'
        ? `Download ${issued.path} (${issued.maxBytes ?? '?'} bytes) with GET`
        : `Upload to ${issued.path} with ${issued.method}` +
          (issued.maxBytes === null ? '' : ` (at most ${issued.maxBytes} bytes)`);
    const lines = [
      `${how} until ${until}${capped ? ` (capped at ${urls.maxExpiresS} s)` : ''}:`,
      issued.url,
      ...(issued.note === undefined ? [] : [issued.note]),
    ];
    return {
      text: lines.join('\n'),
      ...(args.mode === 'download' && { links: [{ path: issued.path, sizeBytes: issued.maxBytes ?? undefined }] }),
      structured: {
        url: issued.url,
        method: issued.method,
        expires_at: until,
        max_bytes: issued.maxBytes,
        path: issued.path,
        note: issued.note ?? null,
      },
    };
  },
});
