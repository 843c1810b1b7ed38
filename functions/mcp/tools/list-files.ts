/** `list_files`: a directory listing with type, size and mtime, to a bounded depth. */
import * as z from 'zod';

import { PathSchema } from './shared-schemas';
import { defineTool } from './tool';

/** Entries returned at most. */
const MAX_ENTRIES = 1000;

const Input = z.strictObject({
  path: PathSchema.default('.').describe('Directory to list (default: the working directory).'),
  depth: z.number().int().min(1).max(5).default(1).describe('1 lists the directory itself; up to 5 recurses.'),
  include_hidden: z.boolean().default(false).describe('Include names that start with a dot.'),
});

const Output = z.object({
  path: z.string(),
  entries: z.array(
    z.object({
      path: z.string().describe('Relative to the listed directory; directories end with /.'),
      type: z.enum(['file', 'directory', 'symlink', 'other']),
      size: z.number().int(),
      mtime: z.string(),
    }),
  ),
  truncated: z.boolean(),
});

export const listFilesTool = defineTool({
  name: 'list_files',
  title: 'List files',
  description:
    `List a directory in the sandbox with each entry's type, size and modification time (up to ${MAX_ENTRIES} ` +
    `entries).`,
  input: Input,
  output: Output,
  annotations: { readOnlyHint: true },
  async run(args, ctx) {
    const sandbox = await ctx.sandbox.get();
    const listing = await sandbox.listFiles({
      path: args.path,
      depth: args.depth,
      includeHidden: args.include_hidden,
      maxEntries: MAX_ENTRIES,
    });
    const rows = listing.entries.map(
      (e) =>
        `${e.type === 'directory' ? 'dir ' : e.type === 'symlink' ? 'link' : 'file'} ` +
        `${String(e.size).padStart(10)}  ${e.mtime}  ${e.path}`,
    );
    const head =
      listing.entries.length === 0
        ? `${listing.path} is empty.`
        : `${listing.path} (${listing.entries.length} ` +
          `entries${listing.truncated ? `, cut at ${MAX_ENTRIES}; list a subdirectory or lower depth` : ''}):`;
    return {
      text: [head, ...rows].join('\n'),
      structured: { path: listing.path, entries: [...listing.entries], truncated: listing.truncated },
    };
  },
});
