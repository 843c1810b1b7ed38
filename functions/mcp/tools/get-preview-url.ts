/** `get_preview_url`: where a port in the sandbox can be opened from outside, and whether something listens. */
import * as z from 'zod';

import { defineTool } from './tool';

const Output = z.object({
  url: z.string(),
  port: z.number().int(),
  listening: z.boolean().describe('Something accepts connections on the port now.'),
  reachable: z.boolean().describe('The URL opens from where the client is (false: note says where it does).'),
  note: z
    .string()
    .nullable()
    .describe('How the URL opens (an access token in it, where it opens), and who else reaches the port.'),
});

export const getPreviewUrlTool = defineTool({
  name: 'get_preview_url',
  title: 'Preview URL for a port',
  description:
    'Get a URL for a port in the sandbox (a dev server, a notebook), and whether something is listening on it. ' +
    'Start the server first, e.g. with run_command in the background. Pass the URL on whole: it may carry an ' +
    'access token (the note says how it opens).',
  input: z.strictObject({
    port: z.number().int().min(1).max(65_535).describe('The TCP port the server in the sandbox listens on.'),
  }),
  output: Output,
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run({ port }, ctx) {
    const sandbox = await ctx.sandbox.get();
    const preview = await sandbox.preview(port);
    const state = preview.listening ? 'something is listening there' : 'nothing is listening there yet';
    const text = preview.reachable
      ? `${preview.url} (${state}).${preview.note === undefined ? '' : ` ${preview.note}`}`
      : `${preview.url} (${state}) may not open where you are: ${preview.note ?? ''}`;
    return {
      text,
      structured: {
        url: preview.url,
        port,
        listening: preview.listening,
        reachable: preview.reachable,
        note: preview.note ?? null,
      },
    };
  },
});
