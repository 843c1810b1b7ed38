/**
 * Runs test/support/tasks-client.mjs (the official v2 client with the official Tasks package) for one step, in a
 * process of its own, so that the client goes away after it; the suites' one way to drive it.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const DRIVER = resolve(__dirname, 'tasks-client.mjs');

// biome-ignore lint/suspicious/noExplicitAny: the driver prints JSON of several shapes.
export type DriverOutput = any;

/** One client process: connects, does `plan.op`, goes away; what it printed. A client that threw throws here. */
export async function runTasksClient(plan: Record<string, unknown>, timeoutMs = 240_000): Promise<DriverOutput> {
  const { stdout } = await promisify(execFile)(process.execPath, [DRIVER, JSON.stringify(plan)], {
    timeout: timeoutMs,
    encoding: 'utf8',
  });
  const out = JSON.parse(stdout.trim().split('\n').at(-1) as string);
  // Said here, rather than as a missing field in a later assertion.
  if (out.error !== undefined) throw new Error(`the client's ${String(plan.op)} failed: ${JSON.stringify(out.error)}`);
  return out;
}

/**
 * What a run_command result says, less what differs from run to run: its duration, and its sandbox's handle (a
 * 2026-07-28 result names it in structuredContent and in its text, a new sandbox's for each call without one).
 */
export function comparableResult(result: DriverOutput) {
  const { duration_ms: _ms, sandbox, ...structured } = result.structuredContent;
  const text: string = result.content.map((c: DriverOutput) => c.text).join('\n');
  return {
    structured,
    text: typeof sandbox === 'string' ? text.replaceAll(sandbox, '<sandbox>') : text,
    isError: result.isError ?? false,
  };
}
