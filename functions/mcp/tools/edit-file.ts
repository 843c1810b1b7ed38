/** `edit_file`: replaces an exact string, once (it must be unique) or everywhere. */
import * as z from 'zod';

import { AppError } from '../errors';
import { toText } from '../resources/media-types';
import { MAX_FILE_BYTES } from './file-content';
import { PathSchema } from './shared-schemas';
import { defineTool } from './tool';

const Input = z.strictObject({
  path: PathSchema.describe('File to edit.'),
  old_string: z.string().min(1).describe('The exact text to replace, whitespace included.'),
  new_string: z.string().describe('The replacement text.'),
  replace_all: z.boolean().default(false).describe('Replace every occurrence instead of exactly one.'),
});

const Output = z.object({ path: z.string(), replacements: z.number().int() });

/** Occurrences of `needle` in `haystack`, not overlapping. */
export function countOccurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) count += 1;
  return count;
}

export const editFileTool = defineTool({
  name: 'edit_file',
  title: 'Edit a file',
  description:
    'Replace an exact string in a text file. Without replace_all the string must occur exactly once (add ' +
    'surrounding lines to make it unique).',
  input: Input,
  output: Output,
  annotations: { destructiveHint: true },
  async run(args, ctx) {
    if (args.old_string === args.new_string)
      throw new AppError('invalid_input', 'old_string and new_string are the same; nothing to change.');
    const sandbox = await ctx.sandbox.get();
    const file = await sandbox.readFile(args.path, MAX_FILE_BYTES);
    const text = toText(file.bytes);
    if (text === undefined)
      throw new AppError('invalid_input', `${file.path} is not UTF-8 text; edit_file only edits text files.`);
    const count = countOccurrences(text, args.old_string);
    if (count === 0) {
      throw new AppError(
        'invalid_input',
        `old_string was not found in ${file.path}; read the file and copy the exact text, whitespace included.`,
      );
    }
    if (count > 1 && !args.replace_all) {
      throw new AppError(
        'invalid_input',
        `old_string occurs ${count} times in ${file.path}; include more surrounding text to make it unique, or ` +
          `set replace_all.`,
      );
    }
    const updated = args.replace_all
      ? text.split(args.old_string).join(args.new_string)
      : text.replace(args.old_string, () => args.new_string);
    await sandbox.writeFile(args.path, Buffer.from(updated, 'utf8'));
    return {
      text: `Edited ${file.path}: ${count} replacement${count === 1 ? '' : 's'}.`,
      structured: { path: file.path, replacements: count },
      links: [{ path: file.path }],
    };
  },
});
