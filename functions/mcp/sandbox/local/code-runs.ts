/**
 * run_code in a local sandbox: Python in the sandbox's persistent kernel; the other languages as a script, one
 * file in the sandbox's /tmp run by its interpreter and deleted after.
 */
import { randomBytes } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';

import { AppError } from '../../errors';
import type { CodeLanguage, RunCodeRequest, RunCodeResult } from '../types';
import { writeWorkspaceFile } from './files';
import { findProgram } from './find-program';
import type { LimitReports } from './limit-reports';
import { runProcess } from './run-process';
import type { SandboxProcesses } from './sandbox-processes';
import type { Workspace } from './workspace';

/** What a run of code needs of its sandbox. */
export interface CodeRunner {
  readonly processes: SandboxProcesses;
  readonly limits: LimitReports;
  readonly workspace: Workspace;
  readonly isolation: 'bwrap' | 'none';
  /** Bytes kept per output stream. */
  readonly maxOutputBytes: number;
}

/** Interpreters for the stateless languages: program name and file extension. */
const SCRIPT_RUNNERS: Partial<Record<CodeLanguage, { program: string; ext: string }>> = {
  javascript: { program: 'node', ext: 'js' },
  bash: { program: 'bash', ext: 'sh' },
  r: { program: 'Rscript', ext: 'R' },
  java: { program: 'java', ext: 'java' },
};

/** The error of a Python run whose interpreter the kernel killed for want of memory. */
const KERNEL_OUT_OF_MEMORY = {
  name: 'KernelRestarted',
  value:
    'The Python process was killed because the sandbox ran out of memory; ' +
    'variables and imports from earlier calls are gone.',
  traceback: '',
};

/** Runs Python in the kernel (started when none runs); a kernel whose state was lost is let go. */
export async function runPython(runner: CodeRunner, req: RunCodeRequest, signal: AbortSignal): Promise<RunCodeResult> {
  const kernel = await runner.processes.pythonKernel(req.env);
  const memory = await runner.limits.watchMemory();
  const executed = await kernel.execute({
    code: req.code,
    env: req.env,
    timeoutMs: req.timeoutMs,
    maxOutputBytes: runner.maxOutputBytes,
    signal,
    onOutput: req.onOutput,
  });
  const outOfMemory = await memory.outOfMemory(executed.error !== null || executed.stateLost);
  const result =
    outOfMemory === undefined
      ? executed
      : { ...executed, outOfMemory, error: executed.stateLost ? KERNEL_OUT_OF_MEMORY : executed.error };
  if (result.stateLost) runner.processes.forgetKernel();
  return result;
}

/** Runs a script of another language, written to the sandbox's /tmp first. */
export async function runScript(runner: CodeRunner, req: RunCodeRequest, signal: AbortSignal): Promise<RunCodeResult> {
  const program = scriptRunner(req.language);
  const ws = runner.workspace;
  // The script goes to the sandbox's /tmp through the same race-safe writer as write_file.
  const tmpView: Workspace = { ...ws, home: ws.tmp, workdir: runner.isolation === 'bwrap' ? '/tmp' : ws.tmp };
  // One file right in /tmp, never a directory of its own: the sandbox user could swap a directory for a
  // symlink before the cleanup. (Java's single-file launcher does not need the file named after its class.)
  const fileName = `code-${randomBytes(6).toString('hex')}.${program.ext}`;
  const { path: inside } = await writeWorkspaceFile(tmpView, fileName, Buffer.from(req.code, 'utf8'));
  try {
    const cwd = await runner.processes.resolveCwd(undefined);
    const supervisor = await runner.processes.ensureSupervisor();
    const memory = await runner.limits.watchMemory();
    const result = await runProcess({
      start: () => runner.processes.spawn(supervisor, { argv: [program.program, inside], cwd, env: req.env }),
      timeoutMs: req.timeoutMs,
      maxOutputBytes: runner.maxOutputBytes,
      signal,
      onOutput: req.onOutput,
    });
    const failed = result.exitCode !== 0 && !result.timedOut && !result.cancelled;
    const { stdout, stderr, timedOut, cancelled, durationMs } = result;
    const error = failed
      ? { name: 'NonZeroExit', value: `exited with ${result.exitCode ?? result.signal}`, traceback: stderr.text }
      : null;
    const outOfMemory = await memory.outOfMemory(result.exitCode !== 0);
    return {
      stdout,
      stderr,
      results: [],
      error,
      timedOut,
      cancelled,
      stateLost: false,
      durationMs,
      ...(outOfMemory === undefined ? {} : { outOfMemory }),
    };
  } finally {
    // The sandbox's tmp cannot be swapped (its parent is the server's), and unlink does not follow a
    // symlink left in the file's place: only that name goes.
    await unlink(join(ws.tmp, fileName)).catch(() => undefined);
  }
}

/** The interpreter of `language`, or the error that lists the languages this sandbox has. */
function scriptRunner(language: CodeLanguage): { program: string; ext: string } {
  const runner = SCRIPT_RUNNERS[language];
  if (runner !== undefined && findProgram(runner.program) !== undefined) return runner;
  const available = [
    'python',
    ...Object.entries(SCRIPT_RUNNERS)
      .filter(([, r]) => r !== undefined && findProgram(r.program) !== undefined)
      .map(([lang]) => lang),
  ];
  throw new AppError(
    'invalid_input',
    `The language "${language}" is not available in this sandbox; available: ${available.join(', ')}. ` +
      'Use run_command to install or call other tools.',
  );
}
