/** `name_sandbox`: keeps the sandbox the call works in under a name, for later sessions to open. */
import { describeOpened, directoryOf, OpenedOutput, sandboxNameSchema } from './sandbox-names';
import { defineTool } from './tool';
import * as z from 'zod';

export const nameSandboxTool = defineTool({
  name: 'name_sandbox',
  title: 'Name this sandbox',
  description:
    'Give the sandbox you are working in a name, so that its work lasts: later sessions of yours continue it with ' +
    'open_sandbox and the name. Its files (on E2B also its memory: processes and Python state) go into a sandbox ' +
    'with that name, where work continues; the unnamed one is gone.',
  input: z.strictObject({ name: sandboxNameSchema('The name to give it') }),
  output: OpenedOutput,
  annotations: {},
  async run({ name }, ctx) {
    const opened = await directoryOf(ctx).name(name);
    const lead =
      `This sandbox is now "${name}" (${opened.sandboxId}): its files were kept under the name, and work ` +
      'continues there. Later sessions reach it with open_sandbox and this name.';
    return describeOpened(opened, lead);
  },
});
