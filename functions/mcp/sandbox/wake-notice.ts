/** What a call that woke a sleeping sandbox tells the model first: that it slept, and what survived. */
import type { SleepState } from './records';

/** How many stopped processes the notice names; the rest are counted. */
const NAMED_PROCESSES = 5;
/** How much of a stopped command the notice quotes. */
const COMMAND_CHARS = 80;

/** The note for the first result after `woke`. */
export function toWakeNotice(woke: SleepState): string {
  const since = new Date(woke.sinceMs).toISOString();
  const head = `Note: this sandbox was asleep (since ${since}) and woke for this call.`;
  if (woke.memory) {
    return `${head} It was paused with its memory: its files, running processes and Python variables are as they were.`;
  }
  const quoted = woke.stopped
    .slice(0, NAMED_PROCESSES)
    .map(
      ({ id, command }) =>
        `${id} (\`${command.length > COMMAND_CHARS ? `${command.slice(0, COMMAND_CHARS)}…` : command}\`)`,
    );
  const more = woke.stopped.length > NAMED_PROCESSES ? ` and ${woke.stopped.length - NAMED_PROCESSES} more` : '';
  const stopped =
    woke.stopped.length === 0
      ? ''
      : ` These background processes were stopped when it fell asleep: ${quoted.join(', ')}${more}; start them ` +
        'again with run_command background: true.';
  return (
    `${head} Its files were kept; its processes were stopped and the Python interpreter starts fresh (variables ` +
    `and imports are gone).${stopped}`
  );
}

/** What a call reads when the named sandbox its handle or session names no longer exists. */
export const NAMED_SANDBOX_GONE =
  'The named sandbox this call was working in no longer exists: it was deleted (delete_sandbox), or removed after ' +
  'going unused for its retention time. Call list_sandboxes to see your sandboxes, and open_sandbox to open one or ' +
  'create a new one.';
