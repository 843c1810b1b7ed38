/** `sandbox_status`: the model's bearings; never creates the sandbox. */
import { z } from 'zod';

import { defineTool } from './tool';

const Output = z.object({
  backend: z.string(),
  state: z.enum(['running', 'not_started']).describe('not_started: the first tool that needs the sandbox creates it.'),
  sandbox_id: z.string().nullable(),
  workdir: z.string().nullable(),
  isolation: z.string(),
  network: z.string().nullable(),
  created_at: z.string().nullable(),
  expires_at: z.string().describe('When the sandbox is reclaimed if nothing uses it; each call moves it on.'),
});

export const sandboxStatusTool = defineTool({
  name: 'sandbox_status',
  title: 'Sandbox status',
  description: 'Show the sandbox: backend, state, id, working directory, isolation, network access and when it expires if unused.',
  input: z.strictObject({}),
  output: Output,
  annotations: { readOnlyHint: true, idempotentHint: true },
  async run(_args, ctx) {
    const sandbox = ctx.sandbox.current();
    const backend = ctx.backend();
    const info = sandbox?.info();
    const structured = {
      backend: backend.backend,
      state: info === undefined ? ('not_started' as const) : ('running' as const),
      sandbox_id: info?.id ?? null,
      workdir: info?.workdir ?? null,
      isolation: info?.isolation ?? backend.isolation,
      network: info?.network ?? null,
      created_at: info?.createdAt ?? null,
      expires_at: ctx.expiresAt().toISOString(),
    };
    const text =
      info === undefined
        ? `No sandbox yet (backend ${backend.backend}, isolation ${backend.isolation}); the first command or file operation starts one.`
        : `Sandbox ${info.id} (${info.backend}) is running. Working directory: ${info.workdir}. Isolation: ${info.isolation}. Network: ${info.network}. Expires if unused at ${structured.expires_at}.`;
    return { text, structured };
  },
});
