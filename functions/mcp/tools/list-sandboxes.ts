/** `list_sandboxes`: the owner's sandboxes, named and unnamed, with their state and when each is deleted. */
import * as z from 'zod';

import type { ListedSandbox } from '../sandbox/directory';
import { directoryOf } from './sandbox-names';
import { formatBytes } from './sandbox-status';
import { defineTool } from './tool';

const Listed = z.object({
  name: z.string().nullable().describe("null: unnamed (a session's own sandbox, reached only by its session)."),
  sandbox_id: z.string().nullable(),
  state: z.enum(['running', 'sleeping']),
  created_at: z.string(),
  last_used_at: z.string(),
  disk_bytes: z.number().int().nullable().describe('Disk its files take; null where the backend cannot tell.'),
  delete_at: z.string().describe('When it is deleted unless used before.'),
  current: z.boolean().describe('The sandbox this call works in.'),
});

export const listSandboxesTool = defineTool({
  name: 'list_sandboxes',
  title: 'List your sandboxes',
  description:
    'List your sandboxes: name, state (running or sleeping), when each was created and last used, its disk use ' +
    'where known, and when it will be deleted unless used. Open a named one with open_sandbox.',
  input: z.strictObject({}),
  output: z.object({ sandboxes: z.array(Listed) }),
  annotations: { readOnlyHint: true, idempotentHint: true },
  async run(_args, ctx) {
    const listed = await directoryOf(ctx).list();
    const sandboxes = listed.map(toListed);
    const lines = listed.map(describe);
    const text =
      listed.length === 0
        ? 'You have no sandboxes yet. open_sandbox with a name creates one that lasts.'
        : `Your sandboxes (${listed.length}):\n${lines.join('\n')}`;
    return { text, structured: { sandboxes } };
  },
});

function toListed(s: ListedSandbox) {
  return {
    name: s.name ?? null,
    sandbox_id: s.sandboxId ?? null,
    state: s.state,
    created_at: new Date(s.createdMs).toISOString(),
    last_used_at: new Date(s.lastUsedMs).toISOString(),
    disk_bytes: s.diskBytes === undefined ? null : Math.round(s.diskBytes),
    delete_at: new Date(s.deleteAtMs).toISOString(),
    current: s.current,
  };
}

function describe(s: ListedSandbox): string {
  const name = s.name === undefined ? 'unnamed' : `"${s.name}"`;
  const disk = s.diskBytes === undefined ? '' : `, ${formatBytes(s.diskBytes)} on disk`;
  const current = s.current ? ' (this call works in it)' : '';
  return (
    `- ${name} ${s.sandboxId ?? ''}: ${s.state}${current}, last used ${new Date(s.lastUsedMs).toISOString()}` +
    `${disk}, deleted ${new Date(s.deleteAtMs).toISOString()} unless used`
  );
}
