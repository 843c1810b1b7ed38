/** What the tools that reach the owner's sandboxes by name share: the name argument, the result, the directory. */
import * as z from 'zod';

import { AppError } from '../errors';
import type { SandboxDirectory, Opened } from '../sandbox/directory';
import { SANDBOX_NAME_PATTERN, SANDBOX_NAME_RULE } from '../sandbox/sandbox-name';
import type { ToolContext } from './tool';

/** A sandbox name argument. */
export function sandboxNameSchema(what: string) {
  return z
    .string()
    .regex(SANDBOX_NAME_PATTERN, `a sandbox name is ${SANDBOX_NAME_RULE}`)
    .describe(`${what}: ${SANDBOX_NAME_RULE}.`);
}

/** The directory of the call, or the reason there is none (stdio serves one sandbox per process). */
export function directoryOf(ctx: ToolContext): SandboxDirectory {
  if (ctx.sandboxes === undefined) {
    throw new AppError(
      'invalid_input',
      'Named sandboxes are served over HTTP only: this connection (stdio) has one sandbox, for as long as it lasts.',
    );
  }
  return ctx.sandboxes();
}

/** A sandbox deleted to make room, as a result shows it. */
const Deleted = z.object({
  name: z.string().nullable(),
  sandbox_id: z.string().nullable(),
  last_used_at: z.string(),
});

/** The structured result of open_sandbox and name_sandbox. */
export const OpenedOutput = z.object({
  name: z.string(),
  sandbox_id: z.string(),
  state: z
    .enum(['created', 'running', 'woken', 'forked', 'replaced'])
    .describe(
      'created: new and empty; running: it was running; woken: it was asleep and woke; forked: a new copy of ' +
        'another sandbox; replaced: it was gone (files lost) and a new, empty one took its place.',
    ),
  kept: z
    .array(z.string())
    .describe('What survived its sleep (woken): files, and with memory kept also processes and Python state.'),
  stopped_processes: z
    .array(z.object({ process_id: z.string(), command: z.string() }))
    .describe('Background processes its sleep stopped (start them again with run_command background: true).'),
  deleted_to_make_room: z.array(Deleted).describe('Your sleeping sandboxes deleted to stay within your limits.'),
});

/** The result of an open (or a naming) in words and structure. */
export function describeOpened(opened: Opened, lead: string) {
  const woke = opened.woke;
  const kept =
    opened.how !== 'woken' || woke === undefined
      ? []
      : woke.memory
        ? ['files', 'processes', 'Python state']
        : ['files'];
  const stopped = woke?.memory === false ? woke.stopped.map(({ id, command }) => ({ process_id: id, command })) : [];
  const deleted = (opened.madeRoom?.deleted ?? []).map((s) => ({
    name: s.name ?? null,
    sandbox_id: s.sandboxId ?? null,
    last_used_at: new Date(s.lastUsedMs).toISOString(),
  }));
  const room =
    opened.madeRoom === undefined
      ? ''
      : ` To stay within your limit (${opened.madeRoom.setting}), these sleeping sandboxes were deleted: ` +
        `${deleted.map((d) => (d.name === null ? `unnamed ${d.sandbox_id ?? ''}`.trim() : `"${d.name}"`)).join(', ')}.`;
  const notice = opened.notice === undefined ? '' : `\n\n${opened.notice}`;
  return {
    text: `${lead}${room}${notice}`,
    structured: {
      name: opened.name,
      sandbox_id: opened.sandboxId,
      state: opened.how,
      kept,
      stopped_processes: stopped,
      deleted_to_make_room: deleted,
    },
  };
}
