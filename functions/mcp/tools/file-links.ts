/** The files a command or code names as its outputs (`files`), linked from the result as resources. */
import * as z from 'zod';

import type { FileLink } from '../resources/file-resources';
import type { Sandbox } from '../sandbox/types';
import { PathSchema } from './shared-schemas';

/** Files one call may link at most. */
const MAX_LINKED = 20;

/** The `files` argument of run_command and run_code. */
export const OutputFilesSchema = z
  .array(PathSchema)
  .max(MAX_LINKED)
  .optional()
  .describe(
    'Files this call writes that you want to hand on (to the user, or to a later step): each that exists ' +
      'afterwards comes back as a resource link (readable with resources/read; get_file_url for large ones).',
  );

/** Links the regular files among `paths`; the rest are named in a line of the result's text. */
export async function linkFiles(
  sandbox: Sandbox,
  paths: readonly string[] | undefined,
): Promise<{ links: FileLink[]; note: string | undefined }> {
  const links: FileLink[] = [];
  const missing: string[] = [];
  for (const path of paths ?? []) {
    const source = await sandbox.openFile(path).catch(() => undefined);
    if (source === undefined) {
      missing.push(path);
      continue;
    }
    await source.close();
    links.push({ path: source.path, sizeBytes: source.sizeBytes });
  }
  const note = missing.length === 0 ? undefined : `Not linked (no such regular file): ${missing.join(', ')}.`;
  return { links, note };
}
