/** `read_file`: text by line range, or binary as base64 / image content; large files are paged, never silently cut. */
import * as z from 'zod';

import { AppError } from '../errors';
import { toImageMime, toText } from '../resources/media-types';
import { MAX_BINARY_BYTES, MAX_FILE_BYTES } from './file-content';
import { PathSchema } from './shared-schemas';
import { defineTool } from './tool';

/** Lines returned when the caller gives no limit. */
const DEFAULT_LINE_LIMIT = 2000;
/** Characters of text returned in one call at most. */
const MAX_TEXT_CHARS = 256 * 1024;

const Input = z.strictObject({
  path: PathSchema.describe('File to read, relative to the working directory or absolute under it.'),
  offset: z.number().int().min(1).optional().describe('First line to return, 1-based (text only; default 1).'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe(`Number of lines to return (text only; default ${DEFAULT_LINE_LIMIT}).`),
  encoding: z
    .enum(['auto', 'utf8', 'base64'])
    .default('auto')
    .describe('auto: text as utf8, images as image content, other binary as base64.'),
});

const Output = z.object({
  path: z.string(),
  encoding: z.enum(['utf8', 'base64', 'image']),
  content: z.string().describe('The text, or base64 data; empty for images (sent as image content).'),
  mime_type: z.string().nullable(),
  size_bytes: z.number().int(),
  total_lines: z.number().int().nullable(),
  start_line: z.number().int().nullable(),
  end_line: z.number().int().nullable(),
  next_offset: z.number().int().nullable().describe('Pass as offset to read on; null at the end of the file.'),
  truncated: z.boolean().describe('True when more of the file remains after this page.'),
});

export const readFileTool = defineTool({
  name: 'read_file',
  title: 'Read a file',
  description:
    `Read a file from the sandbox. Text comes back by line range (offset/limit; up to ${DEFAULT_LINE_LIMIT} ` +
    `lines or ${MAX_TEXT_CHARS / 1024} KiB per call, ` +
    'with next_offset to continue); images come back as image content; other binary files as base64.',
  input: Input,
  output: Output,
  annotations: { readOnlyHint: true },
  async run(args, ctx) {
    const sandbox = await ctx.sandbox.get();
    const file = await sandbox.readFile(args.path, MAX_FILE_BYTES);
    const text = args.encoding === 'base64' ? undefined : toText(file.bytes);
    if (text === undefined) {
      if (args.encoding === 'utf8')
        throw new AppError('invalid_input', `${file.path} is not UTF-8 text; read it with encoding "base64".`);
      if (file.sizeBytes > MAX_BINARY_BYTES) {
        throw new AppError(
          'invalid_input',
          `${file.path} is ${file.sizeBytes} bytes of binary data, over the ${MAX_BINARY_BYTES}-byte limit; ` +
            `inspect it with run_command.`,
        );
      }
      const image = args.encoding === 'auto' ? toImageMime(file.bytes) : undefined;
      const base = {
        path: file.path,
        mime_type: image ?? null,
        size_bytes: file.sizeBytes,
        total_lines: null,
        start_line: null,
        end_line: null,
        next_offset: null,
        truncated: false,
      };
      if (image !== undefined) {
        return {
          text: `${file.path}: ${image} image, ${file.sizeBytes} bytes.`,
          images: [{ type: 'image', data: file.bytes.toString('base64'), mimeType: image }],
          structured: { ...base, encoding: 'image' as const, content: '' },
        };
      }
      const data = file.bytes.toString('base64');
      return {
        text: `${file.path}: ${file.sizeBytes} bytes of binary data, base64:\n${data}`,
        structured: { ...base, encoding: 'base64' as const, content: data },
      };
    }
    return pageText(file.path, file.sizeBytes, text, args.offset ?? 1, args.limit ?? DEFAULT_LINE_LIMIT);
  },
});

function pageText(path: string, sizeBytes: number, text: string, offset: number, limit: number) {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const totalLines = text === '' ? 0 : lines.length;
  if (offset > Math.max(totalLines, 1)) {
    throw new AppError('invalid_input', `offset ${offset} is past the end of ${path}, which has ${totalLines} lines.`);
  }
  const picked: string[] = [];
  let chars = 0;
  for (let i = offset - 1; i < totalLines && picked.length < limit; i += 1) {
    const line = lines[i] ?? '';
    if (chars + line.length + 1 > MAX_TEXT_CHARS && picked.length > 0) break;
    picked.push(
      line.length > MAX_TEXT_CHARS
        ? `${line.slice(0, MAX_TEXT_CHARS)}[… line cut at ${MAX_TEXT_CHARS} characters …]`
        : line,
    );
    chars += line.length + 1;
  }
  const endLine = offset + picked.length - 1;
  const more = endLine < totalLines;
  const content = picked.join('\n') + (picked.length > 0 && (more || text.endsWith('\n')) ? '\n' : '');
  const header =
    totalLines === 0
      ? `${path} is empty.`
      : `${path}: lines ${offset}-${endLine} of ` +
        `${totalLines}${more ? ` (more remains: continue with offset ${endLine + 1})` : ''}.`;
  return {
    text: `${header}\n${content}`,
    structured: {
      path,
      encoding: 'utf8' as const,
      content,
      mime_type: null,
      size_bytes: sizeBytes,
      total_lines: totalLines,
      start_line: totalLines === 0 ? null : offset,
      end_line: totalLines === 0 ? null : endLine,
      next_offset: more ? endLine + 1 : null,
      truncated: more,
    },
  };
}
