/**
 * What the E2B SDKs hold in this server's memory for a command or an execution, which code in the sandbox
 * decides the size of. A command's handle keeps a copy of all its output (`stdout`/`stderr`) for as long as the
 * handle lives; the code interpreter keeps every output line and result of an execution until it ends. This
 * server takes output through the callbacks, bounded (output-capture.ts, code-results.ts), so it drops the
 * handle's copies as they grow and cuts an execution off once the SDK holds more than a budget.
 */
import type { Result } from '@e2b/code-interpreter';
import type { CommandHandle } from 'e2b';

/** What the code interpreter may hold for one execution (output lines and results, in characters). */
export const MAX_E2B_EXECUTION_CHARS = 32 * 1024 * 1024;

/** Empties the copies of a command's output that its handle keeps (the SDK's `_stdout` and `_stderr`). */
export function dropHeldOutput(handle: CommandHandle): void {
  const held = handle as unknown as Record<'_stdout' | '_stderr', unknown>;
  if (typeof held._stdout === 'string') held._stdout = '';
  if (typeof held._stderr === 'string') held._stderr = '';
}

/** Thrown from an execution's callback once the SDK holds more than the budget: it ends the SDK's execution. */
export class ExecutionOverBudget extends Error {
  constructor() {
    super(`the execution's output and results passed ${MAX_E2B_EXECUTION_CHARS} characters`);
    this.name = 'ExecutionOverBudget';
  }
}

/** Counts what the code interpreter holds for one execution. */
export class ExecutionBudget {
  private held = 0;

  /** Counts `chars` more; throws ExecutionOverBudget past the budget. */
  take(chars: number): void {
    this.held += chars;
    if (this.held > MAX_E2B_EXECUTION_CHARS) throw new ExecutionOverBudget();
  }
}

/** About how many characters a result holds: the formats the SDK parsed (`raw` has them all, once; a result built by hand may lack it). */
export function resultChars(result: Result): number {
  let chars = 0;
  for (const value of Object.values(result.raw ?? result) as unknown[]) {
    if (typeof value === 'string') chars += value.length;
    else if (value !== null && typeof value === 'object') chars += JSON.stringify(value)?.length ?? 0;
  }
  return chars;
}
