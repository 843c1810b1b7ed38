/** `open_sandbox`: the owner's sandbox with a name, woken, created or copied; the call moves there. */
import * as z from 'zod';

import { describeOpened, directoryOf, OpenedOutput, sandboxNameSchema } from './sandbox-names';
import { defineTool } from './tool';

export const openSandboxTool = defineTool({
  name: 'open_sandbox',
  title: 'Open a named sandbox',
  description:
    'Open your sandbox with this name, creating it when there is none, and work in it from now on. Named ' +
    'sandboxes keep their files for days: when unused they sleep, and any later session of yours (another day, ' +
    'another client) continues with open_sandbox and the same name. Use a name for work that should last, e.g. the ' +
    'project or repository name. With "from", the new sandbox starts as a copy of another of yours.',
  input: z.strictObject({
    name: sandboxNameSchema('The sandbox name'),
    template: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe("E2B only: the template of a sandbox this call creates (default: the server's template)."),
    from: sandboxNameSchema('The name of another of your sandboxes to copy into the new one').optional(),
  }),
  output: OpenedOutput,
  annotations: { idempotentHint: true },
  async run({ name, template, from }, ctx) {
    const opened = await directoryOf(ctx).open({
      name,
      ...(template !== undefined && { template }),
      ...(from !== undefined && { from }),
    });
    const where = `Work continues in the sandbox "${name}" (${opened.sandboxId})`;
    const lead =
      opened.how === 'created'
        ? `Created the sandbox "${name}" (${opened.sandboxId}); it is empty. Later sessions reach it with ` +
          `open_sandbox and this name.`
        : opened.how === 'forked'
          ? `Created the sandbox "${name}" (${opened.sandboxId}) as a copy of "${from ?? ''}"; the two are ` +
            'independent from now on.'
          : opened.how === 'woken'
            ? `${where}: it was asleep and woke.`
            : opened.how === 'replaced'
              ? `${where}: a new, empty sandbox, since the one it named was gone.`
              : `${where}: it was running.`;
    return describeOpened(opened, lead);
  },
});
