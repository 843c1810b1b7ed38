/** `reset_sandbox`: kills the sandbox with everything in it and starts a fresh one. */
import * as z from 'zod';

import { defineTool } from './tool';

const Output = z.object({
  previous_sandbox_id: z.string().nullable(),
  sandbox_id: z.string(),
  workdir: z.string(),
  lost: z.array(z.string()).describe('What the reset destroyed.'),
});

export const resetSandboxTool = defineTool({
  name: 'reset_sandbox',
  title: 'Reset the sandbox',
  description:
    'Kill the sandbox with everything in it (files, running and background processes, interpreter state) and ' +
    'start a fresh, empty one. Cannot be undone.',
  input: z.strictObject({}),
  output: Output,
  annotations: { destructiveHint: true },
  async run(_args, ctx) {
    const previous = ctx.sandbox.current()?.info();
    await ctx.sandbox.kill();
    const fresh = (await ctx.sandbox.get()).info();
    const lost = ['all files', 'running and background processes', 'variables and imports of the code interpreter'];
    return {
      text:
        `The sandbox was reset: ${lost.join(', ')} are gone. A fresh sandbox ${fresh.id} is ready; its working ` +
        `directory ${fresh.workdir} is empty.`,
      structured: { previous_sandbox_id: previous?.id ?? null, sandbox_id: fresh.id, workdir: fresh.workdir, lost },
    };
  },
});
