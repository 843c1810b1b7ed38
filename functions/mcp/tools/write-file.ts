/** `write_file`: writes a whole file, creating parent directories. */
import * as z from 'zod';

import { AppError } from '../errors';
import { PathSchema } from './shared-schemas';
import { defineTool } from './tool';

const Input = z.strictObject({
  path: PathSchema.describe('File to write, relative to the working directory or absolute under it.'),
  content: z.string().describe('The whole new content of the file.'),
  encoding: z.enum(['utf8', 'base64']).default('utf8').describe('How `content` is encoded.'),
});

const Output = z.object({ path: z.string(), bytes_written: z.number().int(), created: z.boolean() });

export const writeFileTool = defineTool({
  name: 'write_file',
  title: 'Write a file',
  description:
    'Write a file in the sandbox (replacing it if it exists), creating parent directories. Use encoding "base64" ' +
    'for binary data. The result links the file as a resource; for large files or to hand one to a person, use ' +
    'get_file_url.',
  input: Input,
  output: Output,
  annotations: { destructiveHint: true, idempotentHint: true },
  async run(args, ctx) {
    if (args.encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(args.content.replace(/\s+/g, ''))) {
      throw new AppError('invalid_input', 'content is not valid base64.');
    }
    const data = Buffer.from(args.content, args.encoding === 'base64' ? 'base64' : 'utf8');
    const sandbox = await ctx.sandbox.get();
    const written = await sandbox.writeFile(args.path, data);
    return {
      text: `${written.created ? 'Created' : 'Overwrote'} ${written.path} (${data.length} bytes).`,
      structured: { path: written.path, bytes_written: data.length, created: written.created },
      links: [{ path: written.path, sizeBytes: data.length }],
    };
  },
});
