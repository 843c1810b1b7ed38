/**
 * What the server says about itself in `initialize`: capabilities and instructions. Plain data, so that
 * the early answer (early-answers.ts) and the SDK servers (server-factory.ts) cannot drift apart.
 */
export { SERVER_INFO } from '../version';

/** The server's capabilities: tools only. */
export const SERVER_CAPABILITIES = Object.freeze({ tools: Object.freeze({}) });

/** The `instructions` of every `initialize` result. */
export const SERVER_INSTRUCTIONS =
  'Tools act in a sandbox that belongs to this session: run code (Python keeps state between calls) and shell commands, ' +
  'and read, write, edit and list files. Relative paths resolve against the sandbox working directory. ' +
  'Call sandbox_status for your bearings.';
