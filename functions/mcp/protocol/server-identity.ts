/**
 * What the server says about itself in `initialize`: capabilities and instructions. Plain data, so that
 * the early answer (early-initialize.ts) and the SDK servers (server-factory.ts) cannot drift apart.
 */
export { SERVER_INFO } from '../version';

/** The server's capabilities: tools, and sandbox files as resources. */
export const SERVER_CAPABILITIES = Object.freeze({ tools: Object.freeze({}), resources: Object.freeze({}) });

/** What a 2025-era server adds when it keeps MCP tasks (protocol/task-methods.ts): list, cancel, and tool calls. */
export const LEGACY_TASKS_CAPABILITY = Object.freeze({
  tasks: Object.freeze({ list: {}, cancel: {}, requests: Object.freeze({ tools: Object.freeze({ call: {} }) }) }),
});

/** The capabilities `initialize` answers: with tasks when the server keeps them (Config's `taskRoot`). */
export function legacyCapabilities(tasks: boolean): Record<string, object> {
  return tasks ? { ...SERVER_CAPABILITIES, ...LEGACY_TASKS_CAPABILITY } : SERVER_CAPABILITIES;
}

/** The `instructions` of a stdio connection, which owns one sandbox for as long as it lasts. */
export const STDIO_INSTRUCTIONS =
  'Tools act in a sandbox that belongs to this session: ' +
  'run code (Python keeps state between calls) and shell commands, ' +
  'and read, write, edit and list files. Relative paths resolve against the sandbox working directory. ' +
  'Call sandbox_status for your bearings.';

/** What every HTTP lane says of sandboxes that last: they sleep, and a name brings one back any day. */
const LASTING =
  ' Unused, a sandbox sleeps and wakes with its next call. For work that should outlast this conversation, open a ' +
  'named sandbox (open_sandbox, e.g. with the project name): any later session of yours continues it by that name.';

/** What every HTTP lane says of files that leave or enter the sandbox. */
const FILES =
  ' To hand the user a file the sandbox made, or to take a large one from them, call get_file_url for a link ' +
  '(any size); results also link the files they write as resources.';

/** The `instructions` of the 2025-era lane (a session owns a sandbox, or works in a named one it opened). */
export const SERVER_INSTRUCTIONS = `${STDIO_INSTRUCTIONS}${FILES}${LASTING}`;

/**
 * The `instructions` of the 2026-07-28 lane, where no session holds the sandbox: the `sandbox` handle does, and a
 * model that does not carry it loses its work on every call.
 */
export const MODERN_SERVER_INSTRUCTIONS =
  'Tools act in a sandbox: a Linux machine where you run code (Python keeps state between calls) and shell commands, ' +
  'and read, write, edit and list files. Every result starts with a line "sandbox: <handle>" and carries the same ' +
  'handle in structuredContent.sandbox. Pass that handle as the "sandbox" argument of every later call to keep ' +
  'working in the same sandbox, with its files, processes and Python state; a call without "sandbox" gets a new, ' +
  'empty sandbox. Relative paths resolve against the sandbox working directory. Call sandbox_status for your ' +
  `bearings.${FILES}${LASTING}`;
