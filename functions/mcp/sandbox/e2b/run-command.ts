/**
 * run_command on E2B: the command runs under `timeout -k` inside the sandbox, so that it stops there even if this
 * server is gone by then; the server's own deadline is a backstop behind it. Stopping it reaches its whole
 * process group.
 */
import { randomBytes } from 'node:crypto';

import type { Clock } from '../../clock';
import { RunToCompletion } from '../run-to-completion';
import type { RunCommandRequest, RunCommandResult } from '../types';
import { toArrayBuffer } from './files';
import type { E2BErrorClasses, E2BSandboxApi } from './sdk';
import { shellQuote } from './shell';

/** Grace beyond the in-sandbox `timeout -k 2` before the server kills the command itself. */
const COMMAND_BACKSTOP_MS = 5_000;

/** How long a command of `timeoutMs` may keep the sandbox busy: its time, and both backstops. */
export function commandBusyMs(timeoutMs: number): number {
  return timeoutMs + COMMAND_BACKSTOP_MS * 2;
}

/** What a command needs of its sandbox. */
export interface CommandSandbox {
  readonly api: E2BSandboxApi;
  readonly errors: E2BErrorClasses;
  readonly clock: Clock;
  readonly maxOutputBytes: number;
}

/** Runs `req` in `cwd` to its end, its deadline or its cancel. SDK errors are the caller's to map. */
export async function runE2BCommand(
  { api, errors, clock, maxOutputBytes }: CommandSandbox,
  req: RunCommandRequest,
  cwd: string,
): Promise<RunCommandResult> {
  let stdinFile = '/dev/null';
  if (req.stdin !== undefined) {
    stdinFile = `/tmp/.mcp-stdin-${randomBytes(8).toString('hex')}`;
    await api.writeFile(stdinFile, toArrayBuffer(Buffer.from(req.stdin, 'utf8')));
  }
  const seconds = Math.max(1, Math.ceil(req.timeoutMs / 1000));
  // With `exec` the command's pid is timeout's, which leads a process group of everything the command starts.
  const cleanup = req.stdin === undefined ? '' : `rm -f ${stdinFile}; `;
  const script = `exec timeout -k 2 ${seconds} bash -c ${shellQuote(cleanup + req.command)} < ${stdinFile}`;
  const run = new RunToCompletion({ maxOutputBytes, onOutput: req.onOutput, now: () => clock.now() });
  const handle = await api.startCommand(script, {
    cwd,
    envs: req.env,
    timeoutMs: commandBusyMs(req.timeoutMs),
    ...run.callbacks(),
  });
  let lastResort: NodeJS.Timeout | undefined;
  const stop = (): void => {
    // SIGTERM to `timeout` reaches the whole group; then SIGKILL the group. Killing only the
    // process E2B knows (handle.kill) would orphan its children, so that is the last resort.
    void api
      .startCommand(`kill -TERM ${handle.pid} 2>/dev/null; sleep 2; kill -KILL -- -${handle.pid} 2>/dev/null; true`, {
        timeoutMs: 15_000,
      })
      .catch(() => undefined);
    lastResort ??= setTimeout(() => void handle.kill().catch(() => false), COMMAND_BACKSTOP_MS);
  };
  run.arm({ timeoutMs: req.timeoutMs + COMMAND_BACKSTOP_MS, signal: req.signal, stop });
  let exitCode: number | null = null;
  try {
    exitCode = (await handle.wait()).exitCode;
  } catch (err: unknown) {
    // A non-zero exit is a normal result, not an error.
    if (err instanceof errors.CommandExitError) exitCode = err.exitCode;
    else if (!run.timedOut && !run.cancelled) throw err;
  } finally {
    run.disarm();
    clearTimeout(lastResort);
  }
  const durationMs = run.elapsedMs();
  const { cancelled } = run;
  // 124: `timeout` stopped it; 137: it ignored SIGTERM and `-k` killed it.
  const timedOut =
    run.timedOut || (!cancelled && (exitCode === 124 || exitCode === 137) && durationMs >= seconds * 1000 - 50);
  const stopped = timedOut || cancelled;
  return {
    exitCode: stopped ? null : exitCode,
    signal: stopped ? 'SIGKILL' : null,
    ...run.output(),
    timedOut,
    cancelled,
    durationMs,
  };
}
