/** `delete_sandbox`: ends one of the owner's named sandboxes for good. */
import * as z from 'zod';

import { directoryOf, sandboxNameSchema } from './sandbox-names';
import { defineTool } from './tool';

export const deleteSandboxTool = defineTool({
  name: 'delete_sandbox',
  title: 'Delete a named sandbox',
  description:
    'Delete your sandbox with this name for good: its files, processes and state are gone, and its handles stop ' +
    'working. Cannot be undone.',
  input: z.strictObject({ name: sandboxNameSchema('The name of the sandbox to delete') }),
  output: z.object({
    name: z.string(),
    sandbox_id: z.string().nullable(),
    was_current: z.boolean().describe('This call was working in it: open another sandbox to go on.'),
  }),
  annotations: { destructiveHint: true, idempotentHint: true },
  async run({ name }, ctx) {
    const deleted = await directoryOf(ctx).delete(name);
    const next = deleted.wasCurrent ? ' You were working in it: call open_sandbox to continue in another sandbox.' : '';
    return {
      text: `Deleted the sandbox "${name}"${deleted.sandboxId === undefined ? '' : ` (${deleted.sandboxId})`}.${next}`,
      structured: { name, sandbox_id: deleted.sandboxId ?? null, was_current: deleted.wasCurrent },
    };
  },
});
