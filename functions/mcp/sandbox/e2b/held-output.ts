/**
 * What the E2B SDK holds in this server's memory for a command, which code in the sandbox decides the size of:
 * a command's handle keeps a copy of all its output (`stdout`/`stderr`) for as long as the handle lives. This
 * server takes output through the callbacks, bounded (output-capture.ts), so it drops the handle's copies as
 * they grow. (An execution's answer is read by execute.ts, which keeps nothing.)
 */
import type { CommandHandle } from 'e2b';

/** Empties the copies of a command's output that its handle keeps (the SDK's `_stdout` and `_stderr`). */
export function dropHeldOutput(handle: CommandHandle): void {
  const held = handle as unknown as Record<'_stdout' | '_stderr', unknown>;
  if (typeof held._stdout === 'string') held._stdout = '';
  if (typeof held._stderr === 'string') held._stderr = '';
}
